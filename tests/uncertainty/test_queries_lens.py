"""evalcore.uncertainty.queries_lens: the bound of a published task score's variance (Bhatia–Davis with the
Agresti–Coull adjusted mean) by hand and against every [0, 1] sample with that mean; per-query rows' (co)variances
against numpy.cov over their queries; the aggregate's standard errors summed task by task (G: the delta method
on log scores); ties in the least favourable order; a zero task under G outside the model."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from evalcore.uncertainty import queries_lens
from evalcore.uncertainty.queries_lens import PerQuery


def per_query_board(seed: int, n_rows: int = 4, counts=(40, 25, 60)):
    """Per-query values of ``n_rows`` correlated systems on len(counts) tasks (0/1 and graded values)."""
    rng = np.random.default_rng(seed)
    columns, task = [], []
    for t, n in enumerate(counts):
        difficulty = rng.uniform(0, 1, n)
        block = np.clip(difficulty[None, :] + rng.normal(0, 0.25, (n_rows, n)) + rng.normal(0, 0.1, (n_rows, 1)),
                        0, 1)
        if t == 1:
            block = (block > 0.5).astype(float)  # a 0/1 metric (p@1)
        columns.append(block)
        task += [t] * n
    return np.hstack(columns), np.array(task)


def task_means(values, task, n_tasks):
    return np.column_stack([np.nanmean(values[:, task == t], axis=1) for t in range(n_tasks)])


def test_the_bound_by_hand():
    x, n = np.array([[0.0, 0.5, 1.0, 0.37]]), np.array([10, 100, 50, 1172])
    adjusted = (n * x + 2) / (n + 4)  # two successes and two failures added
    np.testing.assert_allclose(queries_lens.bhatia_davis_variance(x, n), adjusted * (1 - adjusted) / n, rtol=1e-15)
    assert queries_lens.bhatia_davis_variance(np.array([0.0]), np.array([10]))[0] == pytest.approx(
        (2 / 14) * (12 / 14) / 10), "not 0 at x = 0: the plug-in x(1 − x) would claim no uncertainty"


def test_the_bound_holds_for_every_sample_in_zero_one_with_that_mean():
    """Var(mean of n values) = σ²/n with σ² the population variance of the values: never above the bound,
    whatever the values (0/1, graded, all equal); at x = ½ a 0/1 metric attains it."""
    rng = np.random.default_rng(2)
    for n in (1, 2, 5, 17, 103, 1172):
        for values in (rng.uniform(0, 1, n), (rng.uniform(0, 1, n) < rng.uniform()).astype(float),
                       rng.beta(0.3, 0.3, n), np.full(n, rng.uniform())):
            x = values.mean()
            assert np.var(values) / n <= queries_lens.bhatia_davis_variance(x, n) * (1 + 1e-12)
    half = np.array([0.0, 1.0] * 50)
    assert np.var(half) / 100 == pytest.approx(queries_lens.bhatia_davis_variance(0.5, 100), rel=1e-14)


@pytest.mark.parametrize("aggregate", ["G", "mean"])
def test_published_rows_sum_their_bounds_over_tasks_and_never_covary(aggregate):
    rng = np.random.default_rng(3)
    scores = rng.uniform(0.05, 0.95, (5, 6))
    n = rng.integers(20, 2000, 6)
    est = queries_lens.estimates(scores, n, aggregate)
    bound = np.array([[(n[t] * x + 2) / (n[t] + 4) * (1 - (n[t] * x + 2) / (n[t] + 4)) / n[t] for t, x in enumerate(row)]
                      for row in scores])
    scale = scores ** 2 if aggregate == "G" else np.ones_like(scores)  # delta method: Var(log x) ≈ Var(x)/x²
    variance = (bound / scale).sum(axis=1) / 36
    np.testing.assert_allclose(est.se, np.sqrt(variance), rtol=1e-12)
    np.testing.assert_allclose(est.points, (np.log(scores) if aggregate == "G" else scores).mean(axis=1), rtol=1e-13)
    assert est.df is None and est.lens == "queries"
    for i, j in itertools.permutations(range(5), 2):
        assert est.pair_se[i, j] == pytest.approx(np.sqrt(variance[i] + variance[j]), rel=1e-12)
        assert est.p_values()[i, j] == pytest.approx(
            stats.norm.sf((est.points[i] - est.points[j]) / np.sqrt(variance[i] + variance[j])), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("aggregate", ["G", "mean"])
@pytest.mark.parametrize("seed", range(3))
def test_per_query_rows_use_their_sample_covariance_over_the_shared_queries(aggregate, seed):
    counts = (40, 25, 60)
    values, task = per_query_board(seed, counts=counts)
    values = np.clip(values, 0.01, 1)  # G needs positive task scores
    scores = task_means(values, task, 3)
    published = np.array([[0.4, 0.3, 0.5]])
    board = np.vstack([scores[:2], published, scores[2:]])  # per-query rows at 0, 1, 3, 4
    rows = np.array([0, 1, 3, 4])
    est = queries_lens.estimates(board, np.array([500, 500, 500]), aggregate, PerQuery(rows, values, task))
    cov = np.zeros((5, 5))
    for t, n in enumerate(counts):
        block = np.cov(values[:, task == t]) / n  # Cov(x̄_i, x̄_j) = s_ij / n over the same n queries
        weights = board[:, t] if aggregate == "G" else np.ones(5)
        cov[np.ix_(rows, rows)] += block / np.outer(weights[rows], weights[rows])
        cov[2, 2] += queries_lens.bhatia_davis_variance(published[0, t], 500) / weights[2] ** 2
    cov /= 9
    np.testing.assert_allclose(est.se, np.sqrt(np.diagonal(cov)), rtol=1e-10)
    for i, j in itertools.permutations(range(5), 2):
        assert est.pair_se[i, j] == pytest.approx(np.sqrt(cov[i, i] + cov[j, j] - 2 * cov[i, j]), rel=1e-9), (i, j)
    # paired: the positively correlated per-query rows' differences are narrower than unpaired ones
    assert est.pair_se[0, 1] < np.sqrt(est.se[0] ** 2 + est.se[1] ** 2)
    assert est.pair_se[0, 2] == pytest.approx(np.sqrt(est.se[0] ** 2 + est.se[2] ** 2), rel=1e-12)


def test_a_row_missing_queries_uses_its_own_count_and_the_queries_it_shares():
    """Var(x̄_i) = s²_i / n_i over i's own queries; Cov(x̄_i, x̄_j) = Σ_shared (v_iq − x̄_i)(v_jq − x̄_j) / (m − 1)
    · m / (n_i n_j) with m shared queries (each row centred at its own task score)."""
    values, task = per_query_board(5, n_rows=3, counts=(30,))
    values[0, :6] = np.nan
    values[1, 20:] = np.nan
    est = queries_lens.estimates(task_means(values, task, 1), np.array([30]), "mean", PerQuery(np.arange(3), values,
                                                                                                 task))
    present = ~np.isnan(values)
    n = present.sum(axis=1)
    for i in range(3):
        assert est.se[i] == pytest.approx(np.sqrt(np.nanvar(values[i], ddof=1) / n[i]), rel=1e-12)
    for i, j in itertools.combinations(range(3), 2):
        shared = present[i] & present[j]
        m = shared.sum()
        s_ij = ((values[i, shared] - np.nanmean(values[i])) * (values[j, shared] - np.nanmean(values[j]))).sum() / (m - 1)
        cov = s_ij * m / (n[i] * n[j])
        assert est.pair_se[i, j] ** 2 == pytest.approx(est.se[i] ** 2 + est.se[j] ** 2 - 2 * cov, rel=1e-10)


def test_copies_are_never_ordered_and_better_on_every_query_by_the_same_amount_is_surely_above():
    task = np.repeat([0, 1, 2], (40, 25, 60))
    values = np.random.default_rng(6).uniform(0.05, 0.9, (2, len(task)))
    values = np.vstack([values, values[0], values[1] + 0.001])  # 2: a copy of 0; 3: row 1 + 0.001 on every query
    board = np.vstack([task_means(values, task, 3), [[0.4, 0.3, 0.5], [0.4, 0.3, 0.5]]])  # 4, 5: published copies
    est = queries_lens.estimates(board, np.array([300, 300, 300]), "mean", PerQuery(np.arange(4), values, task))
    t, p = est.statistics(), est.p_values()
    assert est.pair_se[0, 2] == 0.0 and t[0, 2] == t[2, 0] == 0.0 and p[0, 2] == p[2, 0] == 0.5
    assert est.pair_se[4, 5] > 0 and t[4, 5] == t[5, 4] == 0.0 and p[4, 5] == 0.5
    assert t[3, 1] == np.inf and p[3, 1] == 0.0 and p[1, 3] == 1.0


def test_rows_sharing_fewer_than_two_queries_do_not_covary():
    values = np.array([[0.2, 0.9, np.nan, np.nan], [np.nan, 0.4, 0.6, 0.1]])
    est = queries_lens.estimates(np.array([[0.55], [1.1 / 3]]), np.array([4]), "mean",
                                 PerQuery(np.array([0, 1]), values, np.zeros(4, dtype=int)))
    assert est.pair_se[0, 1] == pytest.approx(np.sqrt(est.se[0] ** 2 + est.se[1] ** 2), rel=1e-12)


@pytest.mark.parametrize("aggregate", ["G", "mean"])
def test_ties_take_the_least_favourable_order_and_unknown_ranges_are_the_score(aggregate):
    scores = np.array([[0.50, 0.40], [0.45, 0.42], [0.30, 0.20]])
    low = np.array([[0.45, 0.40], [np.nan, np.nan], [0.35, 0.10]])  # 0.35 > 0.30: a minimum is never above
    high = np.array([[0.55, 0.40], [np.nan, np.nan], [0.30, 0.25]])
    est = queries_lens.estimates(scores, np.array([100, 100]), aggregate, ties=(low, high))
    f = np.log if aggregate == "G" else (lambda x: x)
    np.testing.assert_allclose(est.low, [f(np.array([0.45, 0.40])).mean(), f(scores[1]).mean(),
                                         f(np.array([0.30, 0.10])).mean()], rtol=1e-14)
    np.testing.assert_allclose(est.high, [f(np.array([0.55, 0.40])).mean(), f(scores[1]).mean(),
                                          f(np.array([0.30, 0.25])).mean()], rtol=1e-14)
    np.testing.assert_allclose(est.points, f(scores).mean(axis=1), rtol=1e-14)
    t = est.statistics()
    assert t[0, 1] == pytest.approx((est.low[0] - est.points[1]) / est.pair_se[0, 1])
    assert t[1, 0] == pytest.approx((est.points[1] - est.high[0]) / est.pair_se[0, 1])


def test_a_zero_task_under_g_is_outside_the_model():
    scores = np.array([[0.5, 0.4], [0.0, 0.9], [0.3, 0.2]])
    est = queries_lens.estimates(scores, np.array([100, 100]), "G")
    assert est.included.tolist() == [True, False, True]
    assert np.isnan([est.points[1], est.low[1], est.high[1], est.se[1]]).all()
    assert np.isnan(est.statistics()[1]).all() and np.isnan(est.statistics()[:, 1]).all()
    assert np.isfinite(est.statistics()[0, 2])
    assert queries_lens.estimates(scores, np.array([100, 100]), "mean").included.all()


def test_a_g_of_zero_only_by_ties_stays_in_the_model_and_is_never_surely_above():
    """A zero task whose tie maximum is above 0 (the ties broken against the row): θ̂ = θ̂⁻ = −∞ (G = 0), θ̂⁺ the
    G with every tie broken for it, the delta method scaled by the tie maximum where the score is 0."""
    scores = np.array([[0.0, 0.5], [0.3, 0.4], [0.05, 0.06]])
    low = np.array([[0.0, 0.5], [np.nan, np.nan], [np.nan, np.nan]])
    high = np.array([[0.3, 0.5], [np.nan, np.nan], [np.nan, np.nan]])
    n = np.array([100, 100])
    est = queries_lens.estimates(scores, n, "G", ties=(low, high))
    assert est.included.all()
    assert est.points[0] == -np.inf and est.low[0] == -np.inf
    assert est.high[0] == pytest.approx(np.log([0.3, 0.5]).mean(), rel=1e-14)
    bound = queries_lens.bhatia_davis_variance(scores[0], n)
    assert est.se[0] == pytest.approx(np.sqrt(bound[0] / 0.3 ** 2 + bound[1] / 0.5 ** 2) / 2, rel=1e-12)
    t = est.statistics()
    assert (t[0, 1:] == -np.inf).all(), "never surely above another row"
    assert t[1, 0] == pytest.approx((est.low[1] - est.high[0]) / est.pair_se[1, 0], rel=1e-12)
    assert t[2, 0] < 0, "below its best-case G: not surely above it"
    from evalcore.uncertainty import rank_sets

    sets = rank_sets.rank_sets(est, 0.95, "marginal")
    assert sets.rank_hi[0] == 3 and not sets.above[:, 0].any() and sets.rank_lo[0] >= 1


def test_bad_input_is_refused():
    for scores, n, match in ((np.array([[0.5, 1.2]]), [10, 10], r"\[0, 1\]"), (np.array([[0.5, np.nan]]), [10, 10],
                                                                             r"\[0, 1\]"),
                             (np.array([[0.5, 0.4]]), [10, np.nan], "query count"),
                             (np.array([[0.5, 0.4]]), [10, 0], "query count"),
                             (np.array([[0.5, 0.4]]), [10], "one query count per task")):
        with pytest.raises(ValueError, match=match):
            queries_lens.estimates(scores, np.array(n, dtype=float), "mean")
    with pytest.raises(ValueError, match="aggregate"):
        queries_lens.estimates(np.array([[0.5]]), np.array([3.0]), "median")
