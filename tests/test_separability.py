"""evalcore.separability: the sign-flip test against enumeration, Holm over adjacent pairs, tiers against a
spelled-out walk and their stability under filtering, the Pareto front against brute force."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from evalcore import separability as sep
from evalcore.aggregate import holm_adjusted


def _enumerated_p(d):
    observed = abs(d.sum())
    flips = [abs(np.dot(signs, d)) for signs in itertools.product((1, -1), repeat=len(d))]
    return sum(f >= observed - 1e-12 for f in flips) / len(flips)


def test_exact_p_values_equal_enumeration():
    rng = np.random.default_rng(0)
    rows = rng.normal(0.02, 0.05, size=(30, 7))
    rows[0] = 0.0  # identical systems: p = 1
    rows[1] = np.abs(rows[1])  # one better on every task: p = 2 / 2^7
    found = sep.sign_flip_p_values(rows)
    np.testing.assert_allclose(found, [_enumerated_p(r) for r in rows])
    assert found[0] == 1.0 and found[1] == pytest.approx(2 / 128)


def _matrix_p(rows):
    """Every sign vector as a matrix, the sums by one product: brute force for up to ~18 tasks."""
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=rows.shape[1])))
    flipped = np.abs(signs @ rows.T)
    return ((flipped >= np.abs(rows.sum(axis=1)) - 1e-12).sum(axis=0)) / len(signs)


def test_meeting_in_the_middle_counts_every_sign_vector():
    rng = np.random.default_rng(5)
    for n_tasks in (1, 2, 3, 8, 13, 17):
        rows = rng.normal(0.01, 0.05, size=(6, n_tasks))
        rows[0] = np.abs(rows[0])
        rows[1, : n_tasks // 2] = 0.0  # zero differences: ties of the statistic
        np.testing.assert_allclose(sep.sign_flip_p_values(rows), _matrix_p(rows), err_msg=str(n_tasks))


def test_random_flips_estimate_the_exact_p_value_reproducibly(monkeypatch):
    rng = np.random.default_rng(1)
    rows = rng.normal(0.01, 0.05, size=(5, 16))
    exact = _matrix_p(rows)
    monkeypatch.setattr(sep, "EXACT_UP_TO", 10)  # 16 tasks then take the random sign vectors
    found = sep.sign_flip_p_values(rows, seed=3)
    np.testing.assert_array_equal(found, sep.sign_flip_p_values(rows, seed=3))
    assert np.abs(found - exact).max() < 4 * np.sqrt(0.25 / sep.RANDOM_FLIPS) + 1e-4
    tiers = sep.tiers(np.arange(5), np.abs(rows) + 0.1, "mean")
    monkeypatch.setattr(sep, "EXACT_UP_TO", 24)
    assert tiers.min() == 1 and tiers.shape == (5,)


def test_g_differences_are_log_ratios_unless_a_task_is_zero():
    first = np.array([[0.5, 0.2, 0.4], [0.5, 0.0, 0.4]])
    second = np.array([[0.25, 0.4, 0.4], [0.25, 0.4, 0.4]])
    d = sep.task_differences(first, second, "G")
    np.testing.assert_allclose(d[0], np.log(first[0]) - np.log(second[0]))
    np.testing.assert_allclose(d[1], first[1] - second[1])
    np.testing.assert_allclose(sep.task_differences(first, second, "mean"), first - second)


def test_adjacent_pairs_are_holm_adjusted_together_and_queries_take_precedence():
    rng = np.random.default_rng(2)
    scores = np.sort(rng.uniform(0.1, 0.9, size=(6, 10)), axis=0)[::-1]
    scores[0] += 0.3
    order = np.arange(6)
    query_p = np.array([np.nan, 0.001, np.nan, np.nan, 0.5])
    found = sep.adjacent_pairs(order, scores, "mean", query_p, seed=0, alpha=0.05)
    task_p = sep.sign_flip_p_values(scores[:-1] - scores[1:], seed=0)
    want = np.where(np.isnan(query_p), task_p, query_p)
    np.testing.assert_allclose(found.p_value, want)
    np.testing.assert_allclose(found.adjusted, holm_adjusted(want))
    assert found.kind.tolist() == ["tasks", "queries", "tasks", "tasks", "queries"]
    assert found.n_differ == int((holm_adjusted(want) <= 0.05).sum()) and found.n_pairs == 5


def _walked_tiers(order, scores, aggregate, alpha):
    tier, leader, current = {}, None, 0
    for system in order:
        if leader is None or sep.sign_flip_p_values(
                sep.task_differences(scores[[leader]], scores[[system]], aggregate))[0] <= alpha:
            leader, current = system, current + 1
        tier[system] = current
    return [tier[i] for i in range(len(scores))]


def _board(seed, n_systems=25, n_tasks=9):
    rng = np.random.default_rng(seed)
    quality = np.sort(rng.normal(0, 0.6, n_systems))[::-1][:, None]
    scores = 1 / (1 + np.exp(-(quality + rng.normal(0, 0.5, (1, n_tasks)) + rng.normal(0, 0.3, (n_systems, n_tasks)))))
    order = np.argsort(-np.exp(np.log(scores).mean(axis=1)), kind="stable")
    return scores, order


@pytest.mark.parametrize("seed", range(4))
def test_tiers_follow_the_walk_and_are_contiguous(seed):
    scores, order = _board(seed)
    found = sep.tiers(order, scores, "G", chunk=4)
    assert found.tolist() == _walked_tiers(order, scores, "G", 0.05)
    assert (np.diff(found[order]) >= 0).all() and found[order[0]] == 1 and found.min() == 1


@pytest.mark.parametrize("seed", range(4))
def test_removing_a_system_that_leads_no_tier_moves_no_one(seed):
    scores, order = _board(seed)
    tiers = sep.tiers(order, scores, "G")
    leaders = {int(order[np.flatnonzero(tiers[order] == t)[0]]) for t in set(tiers.tolist())}
    rng = np.random.default_rng(seed)
    for removed in rng.choice([i for i in range(len(scores)) if i not in leaders], size=5, replace=False):
        kept = np.array([i for i in range(len(scores)) if i != removed])
        position = {system: index for index, system in enumerate(kept)}
        sub_order = np.array([position[i] for i in order if i != removed])
        again = sep.tiers(sub_order, scores[kept], "G")
        assert again.tolist() == tiers[kept].tolist(), f"removing {removed} moved a system"


def test_pareto_front_counts_only_sure_differences():
    rng = np.random.default_rng(4)
    for _ in range(30):
        n = 8
        sizes = rng.choice([1e8, 3e8, 1e9, 7e9, np.nan], size=n)
        above = rng.random((n, n)) < 0.3
        np.fill_diagonal(above, False)
        found = sep.real_pareto_front(sizes, above)
        for i in range(n):
            dominated = any(above[i, j] and not np.isnan(sizes[j]) and sizes[j] <= sizes[i] for j in range(n))
            assert found[i] == (not np.isnan(sizes[i]) and not dominated)
