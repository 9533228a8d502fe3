"""evalcore.uncertainty.rank_sets: Holm's step-down against a literal loop of Holm (1979); the rank sets against
their definition spelled out — p-values from scipy's paired t, each family tested by that loop, the decisions
counted —; simultaneous sets hold the marginal ones; rows outside the model form the bottom block; a copy gets
its original's set; a system far better on every task is 1–1; the sets do not depend on the rows' order."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evalcore.uncertainty import queries_lens, rank_sets, tasks_lens


def holm_loop(p_values, alpha):
    """Holm (1979), as the paper states it: order the m hypotheses by p, reject H_(1), H_(2), … while
    p_(s) ≤ α / (m − s + 1); stop at the first that is not rejected. NaN: not in the family."""
    members = [(p, index) for index, p in enumerate(p_values) if not np.isnan(p)]
    members.sort()
    m = len(members)
    rejected = [False] * len(p_values)
    for s, (p, index) in enumerate(members, start=1):
        if p > alpha / (m - s + 1):
            break
        rejected[index] = True
    return rejected


p_value = st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 1e-4, 0.0125, 0.01, 0.025, 0.05, 0.5, 1.0, np.nan]))


@settings(max_examples=400, deadline=None)
@given(st.lists(p_value, min_size=0, max_size=12), st.sampled_from([0.05, 0.1, 0.01]))
def test_holm_rejections_are_the_literal_procedure(p, alpha):
    assert rank_sets.holm_rejections(np.array(p, dtype=float), alpha).tolist() == holm_loop(p, alpha)


def test_holm_on_hand_computed_families():
    # sorted 0.001 ≤ 0.05/6, 0.004 ≤ 0.05/5, 0.012 ≤ 0.05/4, 0.02 > 0.05/3: stop — 0.03 is not rejected either
    p = np.array([0.02, 0.7, 0.001, 0.03, 0.012, 0.004])
    assert rank_sets.holm_rejections(p, 0.05).tolist() == [False, False, True, False, True, True]
    tied = np.array([0.025, 0.025, np.nan])  # m = 2: 0.025 ≤ 0.05/2, then 0.025 ≤ 0.05/1
    assert rank_sets.holm_rejections(tied, 0.05).tolist() == [True, True, False]
    assert rank_sets.holm_rejections(np.full((2, 2), np.nan), 0.05).tolist() == [[False, False], [False, False]]


def paired_t_p(scores, aggregate):
    """p_ij of "i better than j" by scipy's one-sided paired t (NaN on the diagonal)."""
    y = np.log(scores) if aggregate == "G" else scores
    n = len(scores)
    p = np.full((n, n), np.nan)
    for i, j in itertools.permutations(range(n), 2):
        d = y[i] - y[j]
        if np.ptp(d) == 0:
            p[i, j] = 0.0 if d[0] > 0 else 1.0 if d[0] < 0 else 0.5
        else:
            p[i, j] = stats.ttest_rel(y[i], y[j], alternative="greater").pvalue
    return p


def brute_rank_sets(p, alpha, kind):
    """The module docstring's sets: rank_lo = 1 + #surely above, rank_hi = S − #surely below, each decision
    taken in k's own family (marginal) or in the family of all ordered pairs (simultaneous)."""
    n = len(p)
    pairs = [(i, j) for i, j in itertools.permutations(range(n), 2)]
    everything = dict(zip(pairs, holm_loop([p[i, j] for i, j in pairs], alpha)))
    lo, hi = [], []
    for k in range(n):
        if kind == "simultaneous":
            decided = everything
        else:
            family = [(k, j) for j in range(n) if j != k] + [(j, k) for j in range(n) if j != k]
            decided = dict(zip(family, holm_loop([p[i, j] for i, j in family], alpha)))
        lo.append(1 + sum(decided[(j, k)] for j in range(n) if j != k))
        hi.append(n - sum(decided[(k, j)] for j in range(n) if j != k))
    return np.array(lo), np.array(hi)


def board(seed, n_systems=None, n_tasks=None):
    rng = np.random.default_rng(seed)
    n_systems = n_systems or int(rng.integers(2, 9))
    n_tasks = n_tasks or int(rng.integers(3, 18))
    quality = rng.normal(0, rng.uniform(0.2, 2.0), (n_systems, 1))
    return 1 / (1 + np.exp(-(quality + rng.normal(0, 1, (1, n_tasks)) + rng.normal(0, 0.3, (n_systems, n_tasks)))))


@pytest.mark.parametrize("kind", rank_sets.KINDS)
@pytest.mark.parametrize("aggregate", ["G", "mean"])
@pytest.mark.parametrize("seed", range(8))
def test_the_sets_are_the_counted_decisions_of_each_family(kind, aggregate, seed):
    scores = board(seed)
    if seed == 0:
        scores = np.vstack([scores, scores[0]])  # an exact copy
    level = (0.95, 0.9, 0.8)[seed % 3]
    found = rank_sets.rank_sets(tasks_lens.estimates(scores, aggregate), level, kind)
    want_lo, want_hi = brute_rank_sets(paired_t_p(scores, aggregate), 1 - level, kind)
    np.testing.assert_array_equal(found.rank_lo, want_lo)
    np.testing.assert_array_equal(found.rank_hi, want_hi)
    np.testing.assert_array_equal(found.rank_lo, 1 + found.above.sum(axis=1))
    points = (np.log(scores) if aggregate == "G" else scores).mean(axis=1)
    best = stats.rankdata(-points, method="min")
    worst = stats.rankdata(-points, method="max")
    assert ((found.rank_lo <= best) & (worst <= found.rank_hi)).all()
    i, j = np.nonzero(found.above)
    assert (points[j] > points[i]).all(), "surely above means a larger point"


def test_queries_lens_sets_from_hand_computed_normal_p_values():
    rng = np.random.default_rng(7)
    scores = np.sort(rng.uniform(0.2, 0.6, (7, 5)), axis=0)
    n = np.full(5, 300)
    est = queries_lens.estimates(scores, n, "mean")
    variance = ((n * scores + 2) / (n + 4) * (1 - (n * scores + 2) / (n + 4)) / n).sum(axis=1) / 25
    points = scores.mean(axis=1)
    p = stats.norm.sf((points[:, None] - points[None, :]) / np.sqrt(variance[:, None] + variance[None, :]))
    np.fill_diagonal(p, np.nan)
    for kind in rank_sets.KINDS:
        found = rank_sets.rank_sets(est, 0.95, kind)
        want_lo, want_hi = brute_rank_sets(p, 0.05, kind)
        np.testing.assert_array_equal(found.rank_lo, want_lo)
        np.testing.assert_array_equal(found.rank_hi, want_hi)


@pytest.mark.parametrize("seed", range(20))
def test_simultaneous_sets_hold_the_marginal_ones_and_a_higher_level_holds_a_lower(seed):
    est = tasks_lens.estimates(board(seed, n_systems=10, n_tasks=12), "G")
    marginal = rank_sets.rank_sets(est, 0.95, "marginal")
    simultaneous = rank_sets.rank_sets(est, 0.95, "simultaneous")
    assert (simultaneous.rank_lo <= marginal.rank_lo).all() and (marginal.rank_hi <= simultaneous.rank_hi).all()
    assert not (simultaneous.above & ~marginal.above).any()
    wider = rank_sets.rank_sets(est, 0.99, "marginal")
    assert (wider.rank_lo <= marginal.rank_lo).all() and (marginal.rank_hi <= wider.rank_hi).all()


@pytest.mark.parametrize("kind", rank_sets.KINDS)
def test_rows_outside_the_model_are_the_bottom_block(kind):
    scores = board(3, n_systems=8, n_tasks=9)
    scores[[1, 5], [2, 7]] = 0.0  # two zero tasks under G
    found = rank_sets.rank_sets(tasks_lens.estimates(scores, "G"), 0.95, kind)
    inside = np.array([0, 2, 3, 4, 6, 7])
    assert found.rank_lo[[1, 5]].tolist() == [7, 7] and found.rank_hi[[1, 5]].tolist() == [8, 8]
    assert (found.rank_hi[inside] <= 6).all() and (found.rank_lo[inside] >= 1).all()
    assert found.above[np.ix_([1, 5], inside)].all() and not found.above[1, 5] and not found.above[5, 1]
    assert not found.above[np.ix_(inside, [1, 5])].any()
    alone = rank_sets.rank_sets(tasks_lens.estimates(scores[inside], "G"), 0.95, kind)
    np.testing.assert_array_equal(found.rank_lo[inside], alone.rank_lo)
    np.testing.assert_array_equal(found.rank_hi[inside], alone.rank_hi)


@pytest.mark.parametrize("kind", rank_sets.KINDS)
@pytest.mark.parametrize("seed", range(10))
def test_a_copy_gets_its_originals_set_and_is_never_decided_against_it(kind, seed):
    scores = board(seed, n_systems=7)
    copied = int(np.random.default_rng(seed).integers(0, 7))
    found = rank_sets.rank_sets(tasks_lens.estimates(np.vstack([scores, scores[copied]]), "G"), 0.95, kind)
    assert (found.rank_lo[-1], found.rank_hi[-1]) == (found.rank_lo[copied], found.rank_hi[copied])
    assert not found.above[copied, -1] and not found.above[-1, copied]


@pytest.mark.parametrize("kind", rank_sets.KINDS)
@pytest.mark.parametrize("seed", range(10))
def test_a_system_far_better_on_every_task_is_one_to_one_on_any_board(kind, seed):
    """Better than the best on every task by 1 (mean) or 1,000 times (G): every t statistic against it is huge;
    one better by the same amount as another on every task is surely above that one (p = 0)."""
    scores = board(seed)
    for aggregate, planted in (("mean", scores.max(axis=0) + 1.0), ("G", scores.max(axis=0) * 1000)):
        found = rank_sets.rank_sets(tasks_lens.estimates(np.vstack([scores, planted]), aggregate), 0.95, kind)
        assert (found.rank_lo[-1], found.rank_hi[-1]) == (1, 1), aggregate
        assert found.above[:-1, -1].all()
    parallel = np.vstack([scores, scores[0] + 0.01])
    found = rank_sets.rank_sets(tasks_lens.estimates(parallel, "mean"), 0.95, kind)
    assert found.above[0, -1]


@pytest.mark.parametrize("kind", rank_sets.KINDS)
@pytest.mark.parametrize("seed", range(10))
def test_the_sets_follow_the_systems_not_the_row_order(kind, seed):
    scores = board(seed, n_systems=9)
    scores[1] = scores[4]  # a tie
    if seed % 2:
        scores[2, 0] = 0.0
    est = tasks_lens.estimates(scores, "G")
    found = rank_sets.rank_sets(est, 0.95, kind)
    order = np.random.default_rng(seed).permutation(9)
    again = rank_sets.rank_sets(tasks_lens.estimates(scores[order], "G"), 0.95, kind)
    np.testing.assert_array_equal(again.rank_lo, found.rank_lo[order])
    np.testing.assert_array_equal(again.rank_hi, found.rank_hi[order])
    np.testing.assert_array_equal(again.above, found.above[np.ix_(order, order)])


def test_bad_arguments_are_refused():
    est = tasks_lens.estimates(board(0), "mean")
    with pytest.raises(ValueError, match="level"):
        rank_sets.rank_sets(est, 1.0)
    with pytest.raises(ValueError, match="kind"):
        rank_sets.rank_sets(est, 0.95, "joint")
