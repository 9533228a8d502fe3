"""evalcore.uncertainty.estimates: the pairwise statistic T_ij = (θ̂⁻_i − θ̂⁺_j)/se_ij of the least favourable tie
order, element by element in a loop; pairs without spread; rows outside the model; and the standard errors of
differences from a covariance matrix against Var(a − b) of drawn vectors."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from evalcore.uncertainty.estimates import Estimates, pair_standard_errors


def estimates(points, low, high, pair_se, included=None, df=None) -> Estimates:
    points = np.asarray(points, dtype=float)
    included = np.ones(len(points), dtype=bool) if included is None else np.asarray(included)
    return Estimates("queries", "mean", points, np.asarray(low, float), np.asarray(high, float),
                     np.diagonal(pair_se).copy(), np.asarray(pair_se, float), df, included)


def test_statistics_use_the_least_favourable_tie_order_pair_by_pair():
    rng = np.random.default_rng(0)
    for df in (None, 3, 16):
        points = rng.uniform(0.2, 0.6, 6)
        low, high = points - rng.uniform(0, 0.05, 6), points + rng.uniform(0, 0.05, 6)
        low[0] = high[0] = points[0]  # a row without ties
        se = rng.uniform(0.01, 0.05, (6, 6))
        se = (se + se.T) / 2
        np.fill_diagonal(se, 0.0)
        est = estimates(points, low, high, se, df=df)
        t, p = est.statistics(), est.p_values()
        reference = stats.norm if df is None else stats.t(df)
        for i, j in itertools.permutations(range(6), 2):
            assert t[i, j] == pytest.approx((low[i] - high[j]) / se[i, j], rel=1e-14)
            assert p[i, j] == pytest.approx(reference.sf((low[i] - high[j]) / se[i, j]), rel=1e-9, abs=1e-15)
            # i ahead of j only when ahead under the least favourable order: never on both sides of a pair
            assert not (t[i, j] > 0 and t[j, i] > 0)


def test_a_pair_tied_on_the_aggregate_is_never_ordered():
    points = np.array([0.5, 0.5, 0.5])
    low, high = points - [0.0, 0.01, 0.0], points + [0.0, 0.01, 0.0]
    est = estimates(points, low, high, np.full((3, 3), 0.02) - np.eye(3) * 0.02)
    off = ~np.eye(3, dtype=bool)
    assert (est.statistics()[off] <= 0).all() and (est.p_values()[off] >= 0.5).all()


def test_pairs_without_spread():
    """se_ij = 0: ±∞ for a non-zero difference, 0 (p = ½) for none — a copy is never above its original."""
    points = np.array([0.6, 0.4, 0.4])
    est = estimates(points, points, points, np.zeros((3, 3)))
    t, p = est.statistics(), est.p_values()
    assert t[0, 1] == np.inf and t[1, 0] == -np.inf and p[0, 1] == 0.0 and p[1, 0] == 1.0
    assert t[1, 2] == 0.0 and t[2, 1] == 0.0 and p[1, 2] == 0.5 and p[2, 1] == 0.5
    # a tie range reaching past the other's: no spread, yet not ordered
    est = estimates(points, [0.6, 0.35, 0.4], [0.6, 0.45, 0.4], np.zeros((3, 3)))
    assert est.statistics()[1, 2] == -np.inf and est.statistics()[2, 1] == -np.inf


def test_rows_outside_the_model_take_no_part():
    points = np.array([0.6, np.nan, 0.4])
    se = np.full((3, 3), 0.05)
    se[1, :] = se[:, 1] = np.nan
    est = estimates(points, points, points, se, included=[True, False, True])
    t = est.statistics()
    assert np.isnan(t[1]).all() and np.isnan(t[:, 1]).all() and np.isnan(np.diagonal(t)).all()
    assert t[0, 2] == pytest.approx(0.2 / 0.05) and np.isnan(est.p_values()[1, 0])
    assert est.size == 3


def test_pair_standard_errors_are_the_spread_of_differences():
    rng = np.random.default_rng(1)
    draws = rng.normal(size=(5, 5)) @ rng.normal(size=(5, 2000))  # correlated rows
    cov = np.cov(draws)
    found = pair_standard_errors(cov)
    for i, j in itertools.product(range(5), repeat=2):
        assert found[i, j] == pytest.approx(np.std(draws[i] - draws[j], ddof=1), rel=1e-9, abs=1e-12)
    assert (np.diagonal(found) == 0).all()


def test_round_off_below_a_millionth_of_a_millionth_of_the_largest_variance_is_zero():
    x = np.array([0.1, 0.37, 0.52, 0.9])
    rows = np.vstack([x, x + 0.1, x * 3])  # row 1 minus row 0 is constant: Var = 0 up to round-off
    cov = np.cov(rows)
    direct = cov[0, 0] + cov[1, 1] - 2 * cov[0, 1]
    assert abs(direct) < 1e-12 * cov.max()  # what the round-off is
    found = pair_standard_errors(cov)
    assert found[0, 1] == 0.0 and found[1, 0] == 0.0 and found[0, 2] > 0
    assert (pair_standard_errors(np.zeros((2, 2))) == 0).all()
