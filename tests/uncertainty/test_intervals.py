"""evalcore.uncertainty.intervals: each row's interval is scipy's t interval over tasks (the tasks lens; G on the
log scale, back by exp), the normal interval of the queries lens widened by the tie range, clipped to the
metric's range, NaN outside the model."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from evalcore.uncertainty import intervals, queries_lens, tasks_lens


@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.99])
def test_tasks_lens_intervals_are_t_intervals(level):
    rng = np.random.default_rng(0)
    scores = rng.uniform(0.1, 0.9, (4, 8))
    lo, hi = intervals.intervals(tasks_lens.estimates(scores, "mean"), level)
    want = stats.t.interval(level, 7, loc=scores.mean(axis=1), scale=stats.sem(scores, axis=1))
    np.testing.assert_allclose(lo, want[0], rtol=1e-10)
    np.testing.assert_allclose(hi, want[1], rtol=1e-10)
    lo, hi = intervals.intervals(tasks_lens.estimates(scores, "G"), level)
    logs = np.log(scores)
    want = stats.t.interval(level, 7, loc=logs.mean(axis=1), scale=stats.sem(logs, axis=1))
    np.testing.assert_allclose(lo, np.exp(want[0]), rtol=1e-10)
    np.testing.assert_allclose(hi, np.exp(want[1]), rtol=1e-10)
    g = stats.gmean(scores, axis=1)
    assert ((lo < g) & (g < hi)).all() and (hi - g > g - lo).all(), "exp makes G's interval asymmetric upwards"


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
    est = tasks_lens.estimates(np.array([[0.5, 0.4], [0.3, 0.2]]), "mean")
    for level in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="level"):
            intervals.intervals(est, level)
