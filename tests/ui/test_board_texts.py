"""The Leaderboard's interval and rank-range words, built column-wise on every rerun (ui.board.interval_texts /
ranks_texts), say exactly what the row-by-row definitions say, for every combination
of known and missing bounds."""
import itertools
import math

import pandas as pd
import pytest

from ui import board as boards
from ui import notices

NAN = math.nan


def _rows() -> pd.DataFrame:
    rows = []
    for boot, ties, ranks in itertools.product((True, False), (True, False), ("same", "range", "lo only", "none")):
        rows.append({
            "G_lo": 0.41 if boot else NAN, "G_hi": 0.47 if boot else NAN,
            "G_min": 0.40 if ties else NAN, "G_max": 0.45 if ties else NAN,
            "combined_lo": 0.40 if (boot or ties) else NAN, "combined_hi": 0.47 if (boot or ties) else NAN,
            "rank_lo": {"same": 3.0, "range": 2.0, "lo only": 4.0, "none": NAN}[ranks],
            "rank_hi": {"same": 3.0, "range": 7.0, "lo only": NAN, "none": NAN}[ranks],
        })
    return pd.DataFrame(rows, index=range(10, 10 + len(rows)))  # an index that is not 0..n-1


def test_interval_words_equal_the_row_definition():
    rows = _rows()
    expected = [boards.interval_text(row, "G") for _, row in rows.iterrows()]
    got = boards.interval_texts(rows, "G")
    assert got.index.tolist() == rows.index.tolist()
    assert got.tolist() == expected
    assert set(expected) == {"0.400–0.470", "0.400–0.470 (no tie range)", "0.400–0.470 (ties only)",
                             boards.NO_QUERY_DATA}


def test_rank_words_equal_the_row_definition():
    rows = _rows()
    expected = [boards.ranks_text(row) for _, row in rows.iterrows()]
    assert boards.ranks_texts(rows).tolist() == expected
    assert set(expected) == {"3 (robust)", "2–7", boards.NO_QUERY_DATA}
    combined = rows.rename(columns={"rank_lo": "combined_rank_lo", "rank_hi": "combined_rank_hi"})
    assert boards.ranks_texts(combined, "combined_").tolist() == expected
    assert boards.ranks_texts(combined).tolist() == [boards.NO_QUERY_DATA] * len(rows)


def test_task_interval_words_hold_the_interval():
    rows = pd.DataFrame({"G_task_lo": [0.1234, NAN], "G_task_hi": [0.5678, NAN]})
    assert boards.task_interval_texts(rows, "G").tolist() == ["0.123–0.568", "—"]
    assert boards.coverage_texts(pd.DataFrame({"n_tasks": [17, 3]}), 17).tolist() == ["17 of 17", "3 of 17"]


def test_columns_absent_read_as_unknown():
    rows = pd.DataFrame({"combined_lo": [0.1], "combined_hi": [0.2]})
    assert boards.interval_texts(rows, "mean").tolist() == [boards.interval_text(rows.iloc[0], "mean")]
    assert boards.ranks_texts(rows).tolist() == [boards.NO_QUERY_DATA]


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
        board = data.leaderboard(snap, cond, bootstrap=0)
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
        pointer = boards.per_query_pointer(data.coverage(snap), cond, data.leaderboard(snap, cond, bootstrap=0))
        if pointer.cond is None:
            continue
        linked = data.leaderboard(snap, pointer.cond, bootstrap=0)
        shown = int(linked.ranked["has_query_data"].sum()) + len(linked.incomplete)
        assert pointer.n_systems == int(linked.ranked["has_query_data"].sum()) == shown, (cond, pointer)
