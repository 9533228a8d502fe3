"""evalcore.uncertainty.tasks_lens: the paired t over tasks, recomputed with scipy.stats (ttest_rel, sem) on the
comparison scale (log scores for G); a zero task under G leaves the row out; a copy of a system is never above
or below it; a system better by the same amount (G: the same ratio) on every task is always above."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from evalcore.uncertainty import tasks_lens


def board(seed: int, n_systems: int = 6, n_tasks: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    quality = rng.normal(0, 0.5, (n_systems, 1))
    return 1 / (1 + np.exp(-(quality + rng.normal(0, 1, (1, n_tasks)) + rng.normal(0, 0.4, (n_systems, n_tasks)))))


@pytest.mark.parametrize("aggregate", ["G", "mean"])
@pytest.mark.parametrize("seed", range(5))
def test_statistics_p_values_and_standard_errors_are_scipys_paired_t(aggregate, seed):
    scores = board(seed, n_tasks=3 + seed)
    y = np.log(scores) if aggregate == "G" else scores
    est = tasks_lens.estimates(scores, aggregate)
    assert est.df == scores.shape[1] - 1 and est.lens == "tasks" and est.included.all()
    np.testing.assert_allclose(est.points, y.mean(axis=1), rtol=1e-13)
    np.testing.assert_array_equal(est.low, est.points)
    np.testing.assert_array_equal(est.high, est.points)
    np.testing.assert_allclose(est.se, stats.sem(y, axis=1), rtol=1e-12)
    t, p = est.statistics(), est.p_values()
    for i, j in itertools.permutations(range(len(scores)), 2):
        paired = stats.ttest_rel(y[i], y[j], alternative="greater")
        assert t[i, j] == pytest.approx(paired.statistic, rel=1e-10), (i, j)
        assert p[i, j] == pytest.approx(paired.pvalue, rel=1e-8, abs=1e-15), (i, j)
        assert est.pair_se[i, j] == pytest.approx(stats.sem(y[i] - y[j]), rel=1e-10)
    assert np.isnan(np.diagonal(t)).all() and np.isnan(np.diagonal(p)).all()


def test_g_compares_log_ratios():
    """G's comparison scale: a system twice as good on one task and half as good on another is G-equal."""
    scores = np.array([[0.2, 0.4, 0.3], [0.4, 0.2, 0.3]])
    est = tasks_lens.estimates(scores, "G")
    assert est.points[0] == pytest.approx(est.points[1], abs=1e-15)
    assert np.exp(est.points) == pytest.approx([stats.gmean(scores[0])] * 2)
    assert est.statistics()[0, 1] == pytest.approx(0.0, abs=1e-12)
    mean = tasks_lens.estimates(np.array([[0.2, 0.4, 0.3], [0.35, 0.25, 0.3]]), "mean")
    assert mean.points[0] == pytest.approx(mean.points[1]) and mean.p_values()[0, 1] == pytest.approx(0.5)


def test_a_zero_task_under_g_leaves_the_row_out_of_the_model():
    scores = board(3)
    scores[2, 4] = 0.0
    est = tasks_lens.estimates(scores, "G")
    assert est.included.tolist() == [True, True, False, True, True, True]
    assert np.isnan(est.points[2]) and np.isnan(est.se[2])
    t = est.statistics()
    assert np.isnan(t[2]).all() and np.isnan(t[:, 2]).all()
    kept = np.delete(scores, 2, axis=0)  # the others' numbers are those of the board without the row
    alone = tasks_lens.estimates(kept, "G")
    np.testing.assert_allclose(np.delete(np.delete(t, 2, 0), 2, 1), alone.statistics(), rtol=1e-12)
    assert tasks_lens.estimates(scores, "mean").included.all(), "the mean has no trouble with a zero"


@pytest.mark.parametrize("aggregate", ["G", "mean"])
def test_a_copy_is_never_above_or_below_its_original(aggregate):
    scores = board(4)
    scores = np.vstack([scores, scores[2]])
    est = tasks_lens.estimates(scores, aggregate)
    assert est.pair_se[2, 6] == 0.0
    assert est.statistics()[2, 6] == 0.0 and est.statistics()[6, 2] == 0.0
    assert est.p_values()[2, 6] == 0.5 and est.p_values()[6, 2] == 0.5


@pytest.mark.parametrize("seed", range(4))
def test_better_by_the_same_amount_on_every_task_is_surely_above(seed):
    """mean: + c on every task; G: × c on every task. The difference has no spread (se 0): T = +∞, p = 0 —
    however small c, through the round-off of the sums."""
    scores = board(seed) * 0.9
    for aggregate, planted in (("mean", scores[1] + 1e-3), ("G", scores[1] * 1.001)):
        est = tasks_lens.estimates(np.vstack([scores, planted]), aggregate)
        assert est.pair_se[-1, 1] == 0.0, aggregate
        assert est.statistics()[-1, 1] == np.inf and est.statistics()[1, -1] == -np.inf
        assert est.p_values()[-1, 1] == 0.0 and est.p_values()[1, -1] == 1.0


def test_one_task_says_nothing_and_bad_input_is_refused():
    est = tasks_lens.estimates(np.array([[0.9], [0.1]]), "mean")
    assert np.isinf(est.se).all() and est.statistics()[0, 1] == 0.0 and est.p_values()[0, 1] == 0.5
    for bad, match in ((np.array([[0.5, np.nan]]), "finite"), (np.array([[0.5, -0.1]]), "≥ 0"),
                       (np.array([0.5, 0.4]), "systems × tasks")):
        with pytest.raises(ValueError, match=match):
            tasks_lens.estimates(bad, "mean")
    with pytest.raises(ValueError, match="aggregate"):
        tasks_lens.estimates(np.ones((2, 3)), "median")
