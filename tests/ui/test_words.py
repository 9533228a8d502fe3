"""Counts in the dashboard's sentences agree with their noun ("1 pair", "6 pairs"), never "pair(s)"."""
import pandas as pd
import pytest

from evalcore.store import Leaderboard
from ui import notices, words


@pytest.mark.parametrize(("n", "noun", "plural", "said"), [
    (0, "pair", None, "0 pairs"),
    (1, "pair", None, "1 pair"),
    (2, "pair", None, "2 pairs"),
    (1, "data file", None, "1 data file"),
    (3, "data file", None, "3 data files"),
    (1, "query", "queries", "1 query"),
    (12_345, "query", "queries", "12,345 queries"),
])
def test_a_count_agrees_with_its_noun(n, noun, plural, said):
    assert words.counted(n, noun, plural) == said


def _board(n_swaps: int) -> Leaderboard:
    swaps = pd.DataFrame({"system_1": [f"a{i}" for i in range(n_swaps)], "system_2": [f"b{i}" for i in range(n_swaps)],
                          "value_1": 0.5, "value_2": 0.4, "expected_1": 0.3, "expected_2": 0.35})
    return Leaderboard(ranked=pd.DataFrame(), incomplete=pd.DataFrame(), tasks=[], policy_swaps=swaps,
                       tie_policy="docid-desc")


@pytest.mark.parametrize(("n_swaps", "start", "more"), [
    (1, "The tie policy decides the order of 1 pair on G", None),
    (2, "The tie policy decides the order of 2 pairs on G", None),
    (5, "The tie policy decides the order of 5 pairs on G", None),  # the fifth named, not "and 1 more pair"
    (6, "The tie policy decides the order of 6 pairs on G", "; and 2 more pairs."),
    (7, "The tie policy decides the order of 7 pairs on G", "; and 3 more pairs."),
])
def test_the_policy_swap_notice_counts_in_words(n_swaps, start, more):
    line = notices.swaps_line(_board(n_swaps))
    assert line.startswith(start + " — "), line
    assert "(s)" not in line
    assert (more in line) if more else ("more pair" not in line)


@pytest.mark.parametrize(("n", "said"), [
    (3, "n0, n1, n2"),
    (5, "n0, n1, n2, n3, n4"),  # "and 1 more" takes the room of the name it hides
    (6, "n0, n1, n2, n3 and 2 more"),
])
def test_a_list_names_the_one_left_over(n, said):
    assert words.listed([f"n{i}" for i in range(n)], 4) == said


@pytest.mark.parametrize(("n", "said"), [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (8, "8th"), (11, "11th"),
                                          (12, "12th"), (13, "13th"), (21, "21st"), (22, "22nd"), (101, "101st"),
                                          (111, "111th")])
def test_an_ordinal_reads_as_english(n, said):
    assert words.ordinal(n) == said
