"""evalcore.rank_sets: the kernels against brute force, and planted systems on the shipped boards."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evalcore import rank_sets as rs
from evalcore import task_resampling as tr

SHIPPED = Path(__file__).resolve().parents[1] / "data"


def _brute_extremeness(rows):
    return np.array([[min((row <= v).sum(), (row >= v).sum()) - 1 for v in row] for row in rows])


def test_extremeness_exact_and_capped_match_brute_force():
    rng = np.random.default_rng(0)
    for values in (rng.integers(0, 6, size=(15, 101)).astype(float), rng.normal(size=(15, 101)),
                   np.zeros((3, 101))):
        ordered = np.sort(values, axis=1)
        want = _brute_extremeness(values)
        np.testing.assert_array_equal(rs.extremeness(values, ordered), want)
        for cap in (0, 3, 10):
            np.testing.assert_array_equal(rs.extremeness(values, ordered, cap), np.minimum(want, cap))


def test_calibrated_tail_is_the_largest_k_that_keeps_the_level():
    rng = np.random.default_rng(1)
    for _ in range(20):
        rows = rng.normal(size=(int(rng.integers(1, 8)), 200))
        ordered = np.sort(rows, axis=1)
        k = rs.calibrated_tail(rs.extremeness(rows, ordered), 0.95)

        def inside(k):  # resamples with every row inside [s(k), s(B-1-k)]
            lo, hi = ordered[:, k][:, None], ordered[:, 199 - k][:, None]
            return ((rows >= lo) & (rows <= hi)).all(axis=0).sum()

        assert inside(k) >= 190 and (k == 99 or inside(k + 1) < 190)


def _brute_rank_sets(samples, points, n_tasks, level):
    """The module docstring's procedure, spelled out with loops: for each system, the step-down over every other
    system, a band recalibrated by trying every tail count."""
    n_systems, n = samples.shape
    lo_rank, hi_rank = np.ones(n_systems, int), np.full(n_systems, n_systems)
    for i in range(n_systems):
        active = [j for j in range(n_systems) if j != i]
        above, below = set(), set()
        while active:
            rows = np.array([samples[j] - samples[i] for j in active], dtype=np.float32)
            ordered = np.sort(rows, axis=1)
            k = 0
            for candidate in range(n // 2):
                inside = ((rows >= ordered[:, [candidate]]) & (rows <= ordered[:, [n - 1 - candidate]])).all(axis=0)
                if inside.sum() >= np.ceil(level * n - 1e-9):
                    k = candidate
            factor = tr.expansion((k + 1) / (n + 1), n_tasks)
            decided = []
            for row, j in enumerate(active):
                point = points[j] - points[i]
                low = point + factor * (min(ordered[row, k], point) - point)
                high = point + factor * (max(ordered[row, n - 1 - k], point) - point)
                if low > 0:
                    above.add(j)
                    decided.append(j)
                elif high < 0:
                    below.add(j)
                    decided.append(j)
            if not decided:
                break
            active = [j for j in active if j not in decided]
        lo_rank[i], hi_rank[i] = 1 + len(above), n_systems - len(below)
    return lo_rank, hi_rank


@pytest.mark.parametrize("seed", range(6))
def test_rank_sets_match_the_spelled_out_procedure(seed):
    rng = np.random.default_rng(seed)
    n_systems, n_tasks = int(rng.integers(2, 7)), int(rng.integers(3, 12))
    quality = rng.normal(0, 0.5, size=n_systems)[:, None]
    scores = 1 / (1 + np.exp(-(quality + rng.normal(0, 1, size=(1, n_tasks)) + rng.normal(0, 0.3, (n_systems, n_tasks)))))
    if seed == 0:
        scores[1] = scores[0]  # an exact copy
    samples = tr.aggregate_samples(scores, tr.resample_counts(n_tasks, 120, seed), "G")
    points = tr.aggregate_samples(scores, np.ones((1, n_tasks)), "G")[:, 0]
    found = rs.rank_sets(samples, points, n_tasks, 0.9)
    want_lo, want_hi = _brute_rank_sets(samples, points, n_tasks, 0.9)
    np.testing.assert_array_equal(found.rank_lo, want_lo)
    np.testing.assert_array_equal(found.rank_hi, want_hi)
    competition = 1 + (points[None, :] > points[:, None]).sum(axis=1)
    assert ((found.rank_lo <= competition) & (competition <= found.rank_hi)).all()


def _shipped_scores(setting: str, metric: str):
    from evalcore.store import Condition, Store

    board = Store(SHIPPED).leaderboard(Condition("rar-b", metric, setting, None), bootstrap=0)
    return board.ranked[board.tasks].to_numpy(dtype=np.float64)


@pytest.mark.parametrize("setting, metric, margin", [("full", "ndcg@10", 0.01), ("mcr", "p@1", 0.05)])
def test_planted_systems_on_the_shipped_boards(setting, metric, margin):
    """A system better than every other on every task by ``margin`` ranks 1–1; an exact copy of a system gets
    that system's range; the shipped rows keep ranges that hold their point rank."""
    scores = _shipped_scores(setting, metric)
    copied = min(3, len(scores) - 1)
    planted = np.vstack([scores, scores.max(axis=0) + margin, scores[copied]])
    n_tasks = planted.shape[1]
    samples = tr.aggregate_samples(planted, tr.resample_counts(n_tasks, 1000, 0), "G")
    points = tr.aggregate_samples(planted, np.ones((1, n_tasks)), "G")[:, 0]
    found = rs.rank_sets(samples, points, n_tasks)
    assert (found.rank_lo[-2], found.rank_hi[-2]) == (1, 1)
    assert (found.rank_lo[-1], found.rank_hi[-1]) == (found.rank_lo[copied], found.rank_hi[copied])
    assert not found.above[copied, -1] and not found.below[copied, -1]
    assert found.below[-2, :-2].all(), "every shipped system is surely below the planted best (its own set)"


def test_one_task_says_nothing():
    samples = tr.aggregate_samples(np.array([[0.9], [0.1], [0.5]]), tr.resample_counts(1, 100, 0), "mean")
    found = rs.rank_sets(samples, np.array([0.9, 0.1, 0.5]), 1)
    assert found.rank_lo.tolist() == [1, 1, 1] and found.rank_hi.tolist() == [3, 3, 3]
