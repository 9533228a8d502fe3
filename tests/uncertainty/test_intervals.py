"""evalcore.uncertainty.intervals: the tasks lens' bootstrap-t interval against a resample-by-resample reference
over every ordered resample (up to ten tasks) or the documented seeded draws (more); the normal interval of the
queries lens widened by the tie range; G on the log scale, back by exp; clipped to the metric's range; NaN
outside the model; a level outside (0, 1) refused."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from evalcore.uncertainty import intervals, queries_lens, tasks_lens


def reference_bootstrap_t(y: np.ndarray, level: float, resamples: np.ndarray) -> tuple[float, float]:
    """The bootstrap-t interval of the mean of ``y`` (Efron & Tibshirani 1993, 12.5) over ``resamples`` (each a
    row of task indices, equally likely), spelled out resample by resample: t* = (ȳ* − ȳ)/(s*/√T), ±∞ by the
    sign of ȳ* − ȳ when s* is 0 (0 when ȳ* = ȳ); the quantiles are the smallest t* whose share reaches the tail
    (numpy's inverted_cdf); the interval [ȳ − t*_(1−a) s/√T, ȳ − t*_(a) s/√T]."""
    n = len(y)
    mean, scale = y.mean(), y.std(ddof=1) / np.sqrt(n)
    samples = y[resamples]  # one resample per row
    difference, spread = samples.mean(axis=1) - mean, samples.std(axis=1, ddof=1)
    flat = spread <= 1e-12 * np.abs(y).max()
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(flat, np.sign(difference) * np.inf, difference / (spread / np.sqrt(n)))
    t[flat & (difference == 0)] = 0.0
    a = round((1 - level) / 2, 12)  # 0.025, not 0.025000000000000022: at 20,000 draws the 500th, not the 501st
    low, high = np.quantile(t, [a, 1 - a], method="inverted_cdf")
    return mean - high * scale, mean - low * scale


@pytest.mark.parametrize("n_tasks, level", [(3, 0.9), (4, 0.95), (5, 0.9), (5, 0.95), (6, 0.99)])
def test_tasks_lens_intervals_are_the_bootstrap_t_over_every_ordered_resample(n_tasks, level):
    """Up to ten tasks the lens weighs every distinct resample by its multinomial probability: the same as every
    one of the T^T ordered resamples counted once."""
    rng = np.random.default_rng(n_tasks)
    scores = rng.uniform(0.05, 0.95, (3, n_tasks))
    ordered = np.array(list(itertools.product(range(n_tasks), repeat=n_tasks)))
    for aggregate, y in (("mean", scores), ("G", np.log(scores))):
        lo, hi = intervals.intervals(tasks_lens.estimates(scores, aggregate), level)
        back = np.exp if aggregate == "G" else (lambda v: v)
        for i in range(3):
            want = np.clip(back(np.array(reference_bootstrap_t(y[i], level, ordered))), 0.0, np.inf)
            assert [lo[i], hi[i]] == pytest.approx(want.tolist(), rel=1e-9), (aggregate, i)


def test_tasks_lens_intervals_over_many_tasks_are_the_seeded_draws_and_no_row_moves_another():
    """Over ten tasks: 20,000 resamples drawn by numpy's generator seeded 0 (the module's documented draws),
    the same whatever the other rows (they are computed in blocks of rows)."""
    n_tasks = 12
    rng = np.random.default_rng(5)
    scores = rng.uniform(0.05, 0.95, (70, n_tasks))
    counts = np.random.default_rng(0).multinomial(n_tasks, np.full(n_tasks, 1 / n_tasks), size=20_000)
    drawn = np.array([np.repeat(np.arange(n_tasks), row) for row in counts])
    lo, hi = intervals.intervals(tasks_lens.estimates(scores, "G"), 0.95)
    for i in (0, 69):
        want = reference_bootstrap_t(np.log(scores[i]), 0.95, drawn)
        assert (lo[i], hi[i]) == pytest.approx(np.exp(want), rel=1e-9)
    alone = intervals.intervals(tasks_lens.estimates(scores[[69]], "G"), 0.95)
    assert (alone[0][0], alone[1][0]) == (lo[69], hi[69])
    again = intervals.intervals(tasks_lens.estimates(scores, "G"), 0.95)
    np.testing.assert_array_equal(again[0], lo)


def test_tasks_lens_interval_of_a_row_without_spread_is_its_point():
    scores = np.array([[0.4, 0.4, 0.4, 0.4], [0.2, 0.5, 0.3, 0.6]])
    lo, hi = intervals.intervals(tasks_lens.estimates(scores, "mean"), 0.95)
    assert (lo[0], hi[0]) == pytest.approx((0.4, 0.4), rel=1e-12) and lo[1] < 0.4 < hi[1]


def test_queries_lens_intervals_are_normal_and_cover_the_tie_range():
    scores = np.array([[0.5, 0.4], [0.3, 0.2]])
    ties = (np.array([[0.45, 0.4], [np.nan, np.nan]]), np.array([[0.6, 0.4], [np.nan, np.nan]]))
    est = queries_lens.estimates(scores, np.array([200, 300]), "mean", ties=ties)
    lo, hi = intervals.intervals(est, 0.95)
    z = stats.norm.isf(0.025)
    assert lo[0] == pytest.approx(np.mean([0.45, 0.4]) - z * est.se[0], rel=1e-12)
    assert hi[0] == pytest.approx(np.mean([0.6, 0.4]) + z * est.se[0], rel=1e-12)
    assert (lo[1], hi[1]) == pytest.approx((0.25 - z * est.se[1], 0.25 + z * est.se[1]), rel=1e-12)


def test_clipped_to_the_metric_and_nan_outside_the_model():
    scores = np.array([[0.99, 0.98, 0.2], [0.5, 0.0, 0.4], [0.01, 0.6, 0.02]])
    lo, hi = intervals.intervals(tasks_lens.estimates(scores, "mean"), 0.95, upper=1.0)
    assert hi[0] == 1.0 and lo[2] == 0.0 and (hi <= 1).all() and (lo >= 0).all()
    unclipped_lo, unclipped_hi = intervals.intervals(tasks_lens.estimates(scores, "mean"), 0.95)
    assert unclipped_hi[0] > 1.0 and unclipped_lo[2] == 0.0, "no upper bound unless the metric has one"
    lo, hi = intervals.intervals(tasks_lens.estimates(scores, "G"), 0.95, upper=1.0)
    assert np.isnan(lo[1]) and np.isnan(hi[1]) and np.isfinite(lo[[0, 2]]).all()


def test_a_level_outside_zero_one_is_refused():
    scores = np.array([[0.5, 0.4, 0.45], [0.3, 0.2, 0.35]])
    for est in (tasks_lens.estimates(scores, "mean"), queries_lens.estimates(scores, np.array([9, 9, 9]), "mean")):
        for level in (0.0, 1.0, 1.5, -0.2):
            with pytest.raises(ValueError, match="level"):
                intervals.intervals(est, level)
