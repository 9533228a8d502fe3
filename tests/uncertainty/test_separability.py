"""evalcore.uncertainty.separability: Holm's adjusted p-values against closed testing by brute force; the adjacent
pairs' two-sided tests against scipy's paired t and a literal Holm over the tested pairs (tied pairs never
differ, a lower system better than its upper never differs, a zero-G pair is not tested); why none differs; tiers as
the longest chain of "surely above" found by depth-first search over every chain; the Pareto front of real
differences against brute force."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evalcore.uncertainty import rank_sets, separability, tasks_lens
from evalcore.uncertainty.separability import holm_adjusted
from test_rank_sets import board, holm_loop


# -- Holm's adjusted p-values ---------------------------------------------------------------------------------------
def closed_testing_holm(p_values) -> list[float]:
    """Holm's procedure is the closed test of Bonferroni tests (Marcus, Peritz & Gabriel 1976): a hypothesis'
    adjusted p-value is the largest Bonferroni p-value |S| · min_{j∈S} p_j over every subset S holding it."""
    p = list(p_values)
    adjusted = []
    for i in range(len(p)):
        others = [j for j in range(len(p)) if j != i]
        worst = 0.0
        for size in range(len(p)):
            for subset in itertools.combinations(others, size):
                members = (i, *subset)
                worst = max(worst, len(members) * min(p[j] for j in members))
        adjusted.append(min(1.0, worst))
    return adjusted


def test_holm_adjusted_by_hand():
    # sorted: 0.001·6 = 0.006, 0.004·5 = 0.020, 0.012·4 = 0.048, 0.02·3 = 0.06, 0.3·2 = 0.6, 0.7·1 → 0.7
    p = [0.02, 0.7, 0.001, 0.3, 0.012, 0.004]
    assert holm_adjusted(p).tolist() == pytest.approx([0.06, 0.7, 0.006, 0.6, 0.048, 0.020], abs=1e-15)
    # 0.025·2 = 0.05 is raised to the 0.06 before it (never below); 0.4·4 = 1.6 capped at 1
    assert holm_adjusted([0.025, 0.9, 0.01, 0.02]).tolist() == pytest.approx([0.06, 0.9, 0.04, 0.06])
    assert holm_adjusted([0.4, 0.5, 0.6, 0.7]).tolist() == [1.0, 1.0, 1.0, 1.0]
    assert holm_adjusted([0.037]).tolist() == [0.037] and holm_adjusted([]).tolist() == []


def test_a_missing_p_value_stays_missing_and_does_not_count():
    adjusted = holm_adjusted([0.01, float("nan"), 0.04])
    assert np.isnan(adjusted[1]) and adjusted[[0, 2]].tolist() == pytest.approx([0.02, 0.04])  # m = 2, not 3


@pytest.mark.parametrize("bad", [[-0.1], [1.5], [0.2, 2.0]])
def test_a_p_value_outside_zero_one_is_refused(bad):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm_adjusted(bad)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 1e-4, 0.0125, 0.025, 0.05, 0.5, 1.0])),
                min_size=1, max_size=7))
def test_holm_adjusted_is_closed_testing_and_agrees_with_the_step_down(p):
    assert holm_adjusted(p).tolist() == pytest.approx(closed_testing_holm(p), rel=1e-12, abs=1e-15)
    for alpha in (0.05, 0.0125):
        assert (holm_adjusted(p) <= alpha).tolist() == holm_loop(p, alpha)


# -- adjacent pairs -------------------------------------------------------------------------------------------------
def adjacent_reference(scores, order, aggregate, alpha):
    """Each neighbour pair's two-sided paired t p-value (scipy; NaN when a row has a zero task under G) when the
    upper system is ahead, 1 when it is not; Holm by the literal loop over the tested ones."""
    y = np.log(np.where(scores > 0, scores, np.nan)) if aggregate == "G" else scores
    p = []
    for upper, lower in zip(order[:-1], order[1:]):
        d = y[upper] - y[lower]
        if np.isnan(d).any():
            p.append(np.nan)
        elif np.ptp(d) == 0:
            p.append(0.0 if d[0] > 0 else 1.0)
        else:
            test = stats.ttest_rel(y[upper], y[lower])
            p.append(test.pvalue if test.statistic > 0 else 1.0)
    return np.array(p), np.array(holm_loop(p, alpha))


@pytest.mark.parametrize("aggregate", ["G", "mean"])
@pytest.mark.parametrize("seed", range(8))
def test_adjacent_pairs_are_two_sided_paired_t_tests_holm_adjusted_together(aggregate, seed):
    scores = board(seed, n_systems=8, n_tasks=int(np.random.default_rng(seed).integers(5, 18)))
    est = tasks_lens.estimates(scores, aggregate)
    order = np.argsort(-est.points, kind="stable")
    found = separability.adjacent_pairs(est, order, alpha=0.05)
    p, differ = adjacent_reference(scores, order, aggregate, 0.05)
    assert found.first.tolist() == order[:-1].tolist() and found.second.tolist() == order[1:].tolist()
    np.testing.assert_allclose(found.p_value, p, rtol=1e-8, atol=1e-15)
    assert found.differ.tolist() == differ.tolist()
    np.testing.assert_allclose(found.adjusted, holm_adjusted(p), rtol=1e-8, atol=1e-14)
    assert found.n_pairs == 7 and found.n_tested == 7 and found.n_differ == differ.sum()
    assert (found.statistic[found.differ] > 0).all(), "a pair differs only with the upper system ahead"
    shuffled = np.random.default_rng(seed).permutation(8)  # any order, the lower system often ahead
    found = separability.adjacent_pairs(est, shuffled, alpha=0.05)
    p, differ = adjacent_reference(scores, shuffled, aggregate, 0.05)
    np.testing.assert_allclose(found.p_value, p, rtol=1e-8, atol=1e-15)
    assert found.differ.tolist() == differ.tolist() and (found.statistic[found.differ] > 0).all()


def test_tied_pairs_never_differ_and_a_lower_system_better_than_its_upper_never_differs():
    scores = board(1, n_systems=5, n_tasks=17)
    scores = np.vstack([scores, scores[0], scores[2] + 0.2])  # 5: a copy of 0; 6: better than 2 on every task
    est = tasks_lens.estimates(scores, "mean")
    order = np.array([0, 5, 2, 6, 1, 3, 4])  # the copy under its original; 6 under 2 (the wrong way round)
    found = separability.adjacent_pairs(est, order, alpha=0.5)
    assert found.p_value[0] == 1.0 and not found.differ[0]
    assert found.p_value[2] == 1.0 and not found.differ[2]
    flipped = separability.adjacent_pairs(est, np.array([0, 5, 6, 2, 1, 3, 4]), alpha=0.05)
    assert flipped.p_value[2] == 0.0 and flipped.differ[2], "the right way round it is surely ahead"


def test_a_pair_with_a_zero_g_row_is_not_tested_and_holm_counts_only_tested_pairs():
    scores = board(2, n_systems=6, n_tasks=12)
    scores[5, 3] = 0.0
    est = tasks_lens.estimates(scores, "G")
    order = np.array([*np.argsort(-np.nan_to_num(est.points, nan=-np.inf), kind="stable")])
    assert order[-1] == 5
    found = separability.adjacent_pairs(est, order, alpha=0.05)
    assert np.isnan(found.p_value[-1]) and np.isnan(found.adjusted[-1]) and not found.differ[-1]
    assert found.n_tested == 4 and found.n_pairs == 5
    np.testing.assert_allclose(found.adjusted[:-1], holm_adjusted(found.p_value[:-1]))


def test_why_none_names_the_strongest_pair_and_holms_first_threshold():
    rng = np.random.default_rng(4)
    scores = rng.uniform(0.3, 0.5, (6, 5))  # five noisy tasks: nothing separates
    scores[3, 1] = 0.0
    est = tasks_lens.estimates(scores, "G")
    order = np.argsort(-np.nan_to_num(est.points, nan=-np.inf), kind="stable")
    pairs = separability.adjacent_pairs(est, order)
    assert pairs.n_differ == 0
    why = separability.why_none(pairs)
    tested = ~np.isnan(pairs.p_value)
    best = np.flatnonzero(tested)[np.argmin(pairs.p_value[tested])]
    assert (why.first, why.second) == (order[best], order[best + 1])
    assert why.p_value == pairs.p_value[best] > why.threshold == pytest.approx(0.05 / tested.sum())
    assert why.n_tested == tested.sum() == 4
    separated = tasks_lens.estimates(np.vstack([scores[:3], scores[0] + 1.0]), "mean")
    assert separability.why_none(separability.adjacent_pairs(separated, np.array([3, 0, 1, 2]))) is None
    nothing = separability.adjacent_pairs(tasks_lens.estimates(scores[[3, 3]], "G"), np.array([0, 1]))
    assert nothing.n_tested == 0 and separability.why_none(nothing) is None
    single = separability.adjacent_pairs(est, np.array([2]))
    assert single.n_pairs == 0 and separability.why_none(single) is None


# -- tiers ----------------------------------------------------------------------------------------------------------
def longest_chains(above):
    """For each row, the length of the longest chain j_1 → j_2 → … → row with each surely above the next,
    by depth-first search over every chain (no memo: every path is walked)."""
    n = len(above)

    def walk(i):
        return 1 + max((walk(j) for j in range(n) if above[i, j]), default=0)

    return np.array([walk(i) for i in range(n)])


@pytest.mark.parametrize("kind", rank_sets.KINDS)
@pytest.mark.parametrize("seed", range(12))
def test_tiers_are_the_longest_chains_of_the_rank_sets_decisions(kind, seed):
    scores = board(seed, n_systems=9, n_tasks=int(np.random.default_rng(seed).integers(8, 30)))
    if seed % 3 == 0:
        scores[4, 2] = 0.0  # a row outside the model: every row in it is above it
    est = tasks_lens.estimates(scores, "G")
    sets = rank_sets.rank_sets(est, 0.8, kind)
    tier = separability.tiers(sets.above, est.points)
    np.testing.assert_array_equal(tier, longest_chains(sets.above))
    assert ((tier == 1) == (sets.rank_lo == 1)).all(), "tier 1 is exactly who could be #1"
    if seed % 3 == 0:
        assert tier[4] == tier[np.arange(9) != 4].max() + 1


@pytest.mark.parametrize("seed", range(30))
def test_tiers_on_random_orders_of_surely_above(seed):
    """Any relation with "surely above" ⇒ larger point (a DAG along the points), ties in points included."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 10))
    points = rng.integers(0, 5, n).astype(float)
    above = (points[None, :] > points[:, None]) & (rng.random((n, n)) < rng.uniform(0.1, 0.9))
    tier = separability.tiers(above, points)
    np.testing.assert_array_equal(tier, longest_chains(above))


def chain_members(above, end):
    """Every row on some longest chain ending at ``end``."""
    lengths = longest_chains(above)
    members = {end}
    frontier = [end]
    while frontier:
        i = frontier.pop()
        for j in range(len(above)):
            if above[i, j] and lengths[j] == lengths[i] - 1 and j not in members:
                members.add(j)
                frontier.append(j)
    return members


@pytest.mark.parametrize("seed", range(6))
def test_removing_a_row_moves_only_the_tiers_whose_longest_chain_it_lay_on(seed):
    """Under the same decisions, removing a row lowers a tier only when the row lay on a longest chain ending
    there, and raises none (the tier rule's stability under filtering; a recomputed rank set may decide more
    with fewer comparisons, which the docstring names too)."""
    scores = board(seed, n_systems=10, n_tasks=25)
    est = tasks_lens.estimates(scores, "mean")
    above = rank_sets.rank_sets(est, 0.8, "marginal").above
    tier = separability.tiers(above, est.points)
    for removed in range(10):
        kept = np.array([i for i in range(10) if i != removed])
        again = separability.tiers(above[np.ix_(kept, kept)], est.points[kept])
        for position, i in enumerate(kept):
            assert again[position] <= tier[i]
            if again[position] < tier[i]:
                assert removed in chain_members(above, i), (removed, i)


# -- Pareto front ---------------------------------------------------------------------------------------------------
def test_pareto_front_counts_only_sure_differences():
    rng = np.random.default_rng(4)
    for _ in range(50):
        n = 8
        sizes = rng.choice([1e8, 3e8, 1e9, 7e9, np.nan], size=n)
        above = rng.random((n, n)) < 0.3
        np.fill_diagonal(above, False)
        found = separability.real_pareto_front(sizes, above)
        for i in range(n):
            dominated = any(above[i, j] and not np.isnan(sizes[j]) and sizes[j] <= sizes[i] for j in range(n))
            assert found[i] == (not np.isnan(sizes[i]) and not dominated)
