"""Ranks that admit ties (evalcore/ranks.py): the combined interval of bootstrap and tie range, the shared rank
and the rank interval, against a brute-force enumeration that never forms the hull; and the store's leaderboard
on the shipped data, where BM25's tie range reaches past MiniLM's score."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from evalcore import ranks

SHIPPED = Path(__file__).resolve().parents[1] / "data"
grid = st.integers(0, 5).map(lambda x: x / 5)  # few values: touching and zero-width intervals are common
maybe = st.one_of(st.none(), st.tuples(grid, grid))


def _brute_force(points, boots, ties):
    """Every system takes any of its known values (point, bootstrap ends, tie-range ends) — the extremes of a
    rank are reached at the ends of what a system can take; best = scipy's 'min' rank at the best choice,
    worst = its 'max' rank at the worst."""
    choices = []
    for point, boot, tie in zip(points, boots, ties):
        values = {point}
        for pair in (boot, tie):
            if pair is not None:
                values.update(pair)
        choices.append(sorted(values))
    n = len(points)
    best, worst = np.full(n, np.inf), np.full(n, -np.inf)
    for values in itertools.product(*choices):
        values = np.asarray(values)
        best = np.minimum(best, stats.rankdata(-values, method="min"))
        worst = np.maximum(worst, stats.rankdata(-values, method="max"))
    return best, worst


def _arrays(pairs, n):
    lo = np.array([np.nan if p is None else min(p) for p in pairs] if pairs else [np.nan] * n)
    hi = np.array([np.nan if p is None else max(p) for p in pairs] if pairs else [np.nan] * n)
    return lo, hi


@given(st.lists(st.tuples(grid, maybe, maybe), min_size=1, max_size=5))
def test_shared_rank_and_rank_interval_match_the_enumeration(systems):
    points = [p for p, _, _ in systems]
    boots = [None if b is None else (min(b), max(b)) for _, b, _ in systems]
    ties = [None if t is None else (min(t), max(t)) for _, _, t in systems]
    found = ranks.tie_aware_ranks(points, _arrays(boots, len(points)), _arrays(ties, len(points)),
                                  known=np.ones(len(points), dtype=bool))
    best, worst = _brute_force(points, boots, ties)
    np.testing.assert_array_equal(found.shared_rank, best)
    np.testing.assert_array_equal(found.rank_lo, best)
    np.testing.assert_array_equal(found.rank_hi, worst)
    competition = stats.rankdata(-np.asarray(points), method="min")
    assert ((found.rank_lo <= competition) & (competition <= found.rank_hi)).all()
    for i, j in itertools.combinations(range(len(points)), 2):
        if found.lo[i] <= found.hi[j] and found.lo[j] <= found.hi[i]:  # combined intervals overlap (closed)
            assert found.rank_lo[i] <= found.rank_hi[j] and found.rank_lo[j] <= found.rank_hi[i]


def test_worked_by_hand_touching_zero_width_and_a_tie_range_past_a_narrow_leader():
    #        leader   wide tie range   touches leader's lo   zero width, far below
    point = [0.50, 0.40, 0.35, 0.10]
    boot = (np.array([0.48, 0.38, 0.30, np.nan]), np.array([0.52, 0.42, 0.48, np.nan]))
    tie = (np.array([0.50, 0.30, 0.35, np.nan]), np.array([0.50, 0.60, 0.35, np.nan]))
    found = ranks.tie_aware_ranks(point, boot, tie)
    np.testing.assert_array_equal(found.lo, [0.48, 0.30, 0.30, 0.10])
    np.testing.assert_array_equal(found.hi, [0.52, 0.60, 0.48, 0.10])
    # the second's tie range (0.60) passes the leader's hi (0.52): both can be first. The third's hi touches
    # the leader's lo (0.48 = 0.48): it can tie the leader, and a tie shares the better rank ('min'), so it
    # can be first too; the leader's worst rank counts that tie against it ('max').
    assert found.shared_rank.tolist() == [1, 1, 1, 4]
    assert found.rank_hi[:3].tolist() == [3, 3, 3]
    assert np.isnan(found.rank_lo[3]) and np.isnan(found.rank_hi[3]), "no bootstrap: no rank interval shown"


def test_points_alone_give_competition_ranks():
    points = np.array([0.3, 0.5, 0.5, 0.1])
    found = ranks.tie_aware_ranks(points)
    assert found.shared_rank.tolist() == stats.rankdata(-points, method="min").astype(int).tolist()
    assert np.isnan(found.rank_lo).all()


def test_a_non_finite_point_is_refused():
    with pytest.raises(ValueError, match="finite"):
        ranks.tie_aware_ranks([0.5, np.nan])


def test_shipped_pooled_board_bm25_can_be_first_because_its_tie_range_passes_minilm():
    from evalcore.store import Condition, Store

    store = Store(SHIPPED)
    board = store.leaderboard(Condition("rar-b", "ndcg@10", "full-pooled", None, "fp32", "docid-desc"),
                              bootstrap=200)
    ranked = board.ranked.set_index("system")
    bm25, minilm = ranked.loc["tiebreak-run/bm25s"], ranked.loc["tiebreak-run/all-MiniLM-L6-v2"]
    assert bm25["G_max"] > minilm["G_hi"] >= minilm["G"] > bm25["G"], "the shipped case: BM25 can be first"
    assert bm25["combined_rank_lo"] == 1 and bm25["combined_shared_rank"] == 1
    assert minilm["combined_rank_hi"] >= 2, "MiniLM can be passed by BM25"
    assert bm25["combined_lo"] == min(bm25["G_lo"], bm25["G_min"])
    assert bm25["combined_hi"] == max(bm25["G_hi"], bm25["G_max"])
    # every system's ranks follow the module's definition over the board's own columns
    lo, hi = ranked["combined_lo"].to_numpy(), ranked["combined_hi"].to_numpy()
    for name, row in ranked.iterrows():
        assert row["combined_shared_rank"] == 1 + (lo > row["combined_hi"]).sum(), name
        assert row["combined_rank_hi"] == (hi >= row["combined_lo"]).sum(), name
        assert row["combined_rank_lo"] <= row["rank"] <= row["combined_rank_hi"], name
