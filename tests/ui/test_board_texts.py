"""The Leaderboard's interval and rank-range words, built column-wise on every rerun (ui.board.interval_texts /
ranks_texts), say exactly what a row-by-row definition written here says, for every combination of known and
missing bounds and for both lenses."""
import itertools
import math

import pandas as pd
import pytest

from ui import board as boards
from ui import notices

NAN = math.nan


def _rows() -> pd.DataFrame:
    rows = []
    for queries, tasks, ranks in itertools.product((True, False), (True, False), ("same", "range", "lo only", "none")):
        rows.append({
            "queries_lo": 0.41234 if queries else NAN, "queries_hi": 0.46781 if queries else NAN,
            "tasks_lo": 0.1 if tasks else NAN, "tasks_hi": 0.59991 if tasks else NAN,
            "queries_rank_lo": {"same": 3.0, "range": 2.0, "lo only": 4.0, "none": NAN}[ranks],
            "queries_rank_hi": {"same": 3.0, "range": 7.0, "lo only": NAN, "none": NAN}[ranks],
            "tasks_rank_lo": {"same": 1.0, "range": 1.0, "lo only": NAN, "none": 5.0}[ranks],
            "tasks_rank_hi": {"same": 1.0, "range": 12.0, "lo only": 9.0, "none": NAN}[ranks],
        })
    return pd.DataFrame(rows, index=range(10, 10 + len(rows)))  # an index that is not 0..n-1


def _interval_text(row: pd.Series, lens: str) -> str:
    """A row's interval in words: three decimals, the low end rounded down and the high end up (so the printed
    interval holds the computed one), "—" without both ends."""
    lo, hi = row.get(f"{lens}_lo"), row.get(f"{lens}_hi")
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return "—"
    return f"{math.floor(round(lo * 1000, 6)) / 1000:.3f}–{math.ceil(round(hi * 1000, 6)) / 1000:.3f}"


def _ranks_text(row: pd.Series, lens: str) -> str:
    lo, hi = row.get(f"{lens}_rank_lo"), row.get(f"{lens}_rank_hi")
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return "—"
    return str(int(lo)) if lo == hi else f"{int(lo)}–{int(hi)}"


@pytest.mark.parametrize("lens", ["queries", "tasks"])
def test_interval_words_equal_the_row_definition(lens):
    rows = _rows()
    expected = [_interval_text(row, lens) for _, row in rows.iterrows()]
    got = boards.interval_texts(rows, lens)
    assert got.index.tolist() == rows.index.tolist()
    assert got.tolist() == expected
    assert set(expected) == ({"0.412–0.468", "—"} if lens == "queries" else {"0.100–0.600", "—"})
    assert boards.NO_VALUE == "—"


@pytest.mark.parametrize("lens", ["queries", "tasks"])
def test_rank_words_equal_the_row_definition(lens):
    rows = _rows()
    expected = [_ranks_text(row, lens) for _, row in rows.iterrows()]
    got = boards.ranks_texts(rows, lens)
    assert got.index.tolist() == rows.index.tolist()
    assert got.tolist() == expected
    assert set(expected) == ({"3", "2–7", "—"} if lens == "queries" else {"1", "1–12", "—"})


def test_coverage_words_count_the_boards_tasks():
    assert boards.coverage_texts(pd.DataFrame({"n_tasks": [17, 3, NAN]}), 17).tolist() == ["17 of 17", "3 of 17",
                                                                                          "—"]


def test_columns_absent_read_as_unknown():
    rows = pd.DataFrame({"queries_lo": [0.1], "queries_hi": [0.2]})
    assert boards.interval_texts(rows, "queries").tolist() == ["0.100–0.200"]
    assert boards.interval_texts(rows, "tasks").tolist() == [boards.NO_VALUE]
    assert boards.ranks_texts(rows, "queries").tolist() == [boards.NO_VALUE]


def test_the_remembered_pointer_equals_the_computed_one(fresh_answers):
    """The Leaderboard's per-query pointer is remembered per snapshot and condition; it must be the
    one computed from that snapshot's coverage, for conditions with and without per-query results."""
    from pathlib import Path

    from evalcore.store import Condition
    from ui import data

    snap = data.snapshot(Path(__file__).resolve().parents[2] / "data")
    conditions = [Condition("rar-b", instruction=None), Condition("r2med", instruction=None),
                  Condition("rar-b", metric="p@1", setting="mcr", instruction=None)]
    pointers = set()
    for cond in conditions:
        board = data.leaderboard(snap, cond, uncertainty=False)
        expected = boards.per_query_pointer(data.coverage(snap), cond, board)
        assert boards.pointer_for(snap, cond, board) == expected
        assert boards.pointer_for(snap, cond, board) == expected  # remembered
        pointers.add(expected)
    assert len(pointers) >= 2 and any(p.cond is not None for p in pointers)


@pytest.mark.parametrize("x, y, want", [
    (0.5, 0.25, "0.5000 vs 0.2500"),
    (0.002615, 0.002581, "0.00262 vs 0.00258"),  # equal at 4 decimals: one more
    (0.1234567, 0.1234561, "0.123457 vs 0.123456"),
    (0.3, 0.3, "0.3000 vs 0.3000"),  # equal values stay at 4
    (1e-12, 0.0, "0.00000000 vs 0.00000000"),  # at most 8: beyond that, the notice's numbers are not the point
])
def test_a_pair_prints_apart_when_it_differs(x, y, want):
    assert notices.apart(x, y) == want


def test_the_pointer_counts_the_systems_its_link_shows(fresh_answers):
    """"N systems have per-query results … show them": N is what the linked board shows with per-query results
    (the landing said 9, counting every condition of RAR-b, and its link showed 8)."""
    from pathlib import Path

    from evalcore.store import Condition
    from ui import data

    snap = data.snapshot(Path(__file__).resolve().parents[2] / "data")
    for cond in (Condition("rar-b", instruction=None), Condition("r2med", instruction=None)):
        pointer = boards.per_query_pointer(data.coverage(snap), cond, data.leaderboard(snap, cond, uncertainty=False))
        if pointer.cond is None:
            continue
        linked = data.leaderboard(snap, pointer.cond, uncertainty=False)
        shown = int(linked.ranked["has_query_data"].sum()) + len(linked.incomplete)
        assert pointer.n_systems == int(linked.ranked["has_query_data"].sum()) == shown, (cond, pointer)
