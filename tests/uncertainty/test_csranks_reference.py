"""The csranks port (tests/uncertainty/csranks_reference.py) against brute force and closed forms on small
boards — so that the engine is compared with something that is itself checked."""
from __future__ import annotations

import itertools
import math
from statistics import NormalDist

import numpy as np
import pytest
from scipy import integrate, stats

import csranks_reference as ref

Z975 = NormalDist().inv_cdf(0.975)


# -- the critical values of the first step -------------------------------------------------------------------
@pytest.mark.parametrize("p", [3, 5, 8])
def test_simultaneous_first_quantile_is_the_studentized_range(p):
    """Independent systems of equal variance: max over ordered pairs of (Z_i − Z_j)/(σ√2) = range/(σ√2), whose
    0.95 quantile is q(0.95; p, ∞)/√2."""
    sigma = np.eye(p) * 0.3
    pairs = np.array([(i, j) for i in range(p) for j in range(p) if i != j])
    found = ref.max_quantile(sigma, pairs, ref.difference_sds(sigma), 0.95, 200_000, np.random.default_rng(1))
    exact = stats.studentized_range.ppf(0.95, p, np.inf) / math.sqrt(2)
    assert found == pytest.approx(exact, abs=0.015)


@pytest.mark.parametrize("p", [3, 6])
def test_marginal_first_quantile_is_the_integral(p):
    """System 0's family (pairs (0, j) and (j, 0)): max_j |Z_0 − Z_j|/(σ√2) ≤ c with probability
    ∫ φ(z) [Φ(z + c√2) − Φ(z − c√2)]^(p−1) dz."""
    def probability(c):
        return integrate.quad(lambda z: stats.norm.pdf(z) * (stats.norm.cdf(z + c * math.sqrt(2))
                                                             - stats.norm.cdf(z - c * math.sqrt(2))) ** (p - 1),
                              -9, 9)[0]
    lo, hi = 0.5, 5.0  # bisection for probability(c) = 0.95
    for _ in range(60):
        middle = (lo + hi) / 2
        lo, hi = (middle, hi) if probability(middle) < 0.95 else (lo, middle)
    exact = (lo + hi) / 2
    sigma = np.eye(p)
    pairs = np.array([(0, j) for j in range(1, p)] + [(j, 0) for j in range(1, p)])
    found = ref.max_quantile(sigma, pairs, ref.difference_sds(sigma), 0.95, 200_000, np.random.default_rng(2))
    assert found == pytest.approx(exact, abs=0.015)


def test_correlated_draws_have_the_covariance():
    sigma = np.array([[1.0, 0.6, 0.2], [0.6, 2.0, -0.3], [0.2, -0.3, 0.5]])
    z = ref.normal_draws(sigma, 400_000, np.random.default_rng(3))
    np.testing.assert_allclose(np.cov(z.T), sigma, atol=0.01)


def test_a_singular_covariance_is_drawn_from_as_it_is():
    """Two tasks, three systems: Σ has rank 1; the draws lie on its line."""
    y = np.array([[0.1, 0.3], [0.2, 0.1], [0.5, 0.6]])
    sigma = np.cov(y, ddof=1) / 2
    z = ref.normal_draws(sigma, 50_000, np.random.default_rng(4))
    np.testing.assert_allclose(np.cov(z.T), sigma, atol=2e-3)
    assert np.linalg.matrix_rank(z[:100], tol=1e-6) == 1


# -- two systems: everything in closed form ------------------------------------------------------------------
@pytest.mark.parametrize("simul", [False, True])
@pytest.mark.parametrize("t, separated", [(2.4, True), (1.6, False), (-2.4, True), (0.0, False)])
def test_two_systems_separate_exactly_when_the_z_test_does(simul, t, separated):
    sigma = np.diag([0.5, 1.5])
    x = np.array([t * math.sqrt(2.0), 0.0])  # s_12 = √(0.5 + 1.5)
    found = ref.csranks(x, sigma, simul=simul, draws=20_000, seed=5)
    if separated:
        first, second = (0, 1) if t > 0 else (1, 0)
        assert found.rank_lo[first] == found.rank_hi[first] == 1
        assert found.rank_lo[second] == found.rank_hi[second] == 2
    else:
        assert list(found.rank_lo) == [1, 1] and list(found.rank_hi) == [2, 2]
    assert abs(t) > Z975 if separated else abs(t) < Z975


def test_an_exact_copy_is_never_separated_and_a_certain_difference_always_is():
    sigma = np.diag([0.0, 0.0, 1.0])  # systems 0 and 1: no uncertainty at all
    found = ref.csranks(np.array([0.5, 0.4, 0.45]), sigma, simul=True, draws=2000, seed=6)
    assert found.above[1, 0] and not found.above[0, 1]
    copy = ref.csranks(np.array([0.5, 0.5]), np.array([[1.0, 1.0], [1.0, 1.0]]), draws=2000, seed=6)
    assert list(copy.rank_lo) == [1, 1] and list(copy.rank_hi) == [2, 2]


# -- the step-down is closed testing with max-t local tests ----------------------------------------------------
def closed_testing(x, sigma, family, coverage, draws):
    """Brute force: (i, j) rejected iff every subset of the family containing it has max t > its quantile
    (same draws for every subset)."""
    diff = x[:, None] - x[None, :]
    sd = ref.difference_sds(sigma)
    hypotheses = [tuple(h) for h in np.argwhere(family & ~np.eye(len(x), dtype=bool))]
    t = {h: diff[h] / sd[h] for h in hypotheses}
    quantile = {}
    for size in range(1, len(hypotheses) + 1):
        for subset in itertools.combinations(hypotheses, size):
            pairs = np.array(subset)
            scaled = (draws[:, pairs[:, 0]] - draws[:, pairs[:, 1]]) / sd[pairs[:, 0], pairs[:, 1]]
            quantile[subset] = np.quantile(scaled.max(axis=1), coverage)
    rejected = np.zeros_like(family)
    for h in hypotheses:
        rejected[h] = all(max(t[g] for g in subset) > q for subset, q in quantile.items() if h in subset)
    return rejected


@pytest.mark.parametrize("seed", range(6))
def test_the_stepdown_is_closed_testing(seed):
    rng = np.random.default_rng(seed)
    p = 4
    a = rng.normal(size=(p, p))
    sigma = a @ a.T / p * 0.05
    x = rng.normal(size=p)
    draws = ref.normal_draws(sigma, 4000, rng)
    family = np.ones((p, p), dtype=bool) if seed % 2 == 0 else np.isin(np.arange(p), [seed % p])[:, None] | \
        np.isin(np.arange(p), [seed % p])[None, :]
    np.fill_diagonal(family, False)
    fast = ref.stepdown_lower(x, sigma, family, 0.95, 0, rng, fixed=draws)
    np.testing.assert_array_equal(fast, closed_testing(x, sigma, family, 0.95, draws))
    pairs = np.argwhere(family)
    first = ref.max_quantile(sigma, pairs, ref.difference_sds(sigma), 0.95, 0, rng, fixed=draws)
    single_step = family & (x[:, None] - x[None, :] - ref.difference_sds(sigma) * first > 0)
    assert (fast >= single_step).all()
    REJECTIONS.append((int(fast.sum()), int(single_step.sum()), int(family.sum())))


REJECTIONS: list[tuple[int, int, int]] = []


def test_the_closed_testing_boards_are_not_trivial():
    """The six boards above (this runs after them): rejections on every board but none rejects everything, and
    on some the step-down rejects more than its first step."""
    assert len(REJECTIONS) == 6
    assert all(0 < stepped < size for stepped, _, size in REJECTIONS)
    assert any(stepped > single for stepped, single, _ in REJECTIONS)


# -- properties and coverage under its own model -------------------------------------------------------------
def test_the_estimated_rank_is_always_in_the_set():
    rng = np.random.default_rng(7)
    for _ in range(20):
        p = int(rng.integers(3, 9))
        x = np.round(rng.normal(size=p), 1)  # some exact ties
        a = rng.normal(size=(p, p))
        sigma = a @ a.T * 0.01
        for simul in (False, True):
            found = ref.csranks(x, sigma, simul=simul, draws=500, seed=int(rng.integers(1 << 30)))
            best = 1 + (x[None, :] > x[:, None]).sum(axis=1)  # the best rank a tie allows
            worst = p - (x[None, :] < x[:, None]).sum(axis=1)
            assert (found.rank_lo <= best).all() and (worst <= found.rank_hi).all()
            if simul:
                assert (found.rank_lo >= 1).all()


def test_simultaneous_sets_contain_the_marginal_ones():
    rng = np.random.default_rng(8)
    x = np.linspace(0, 1, 8)
    sigma = np.diag(rng.uniform(0.005, 0.03, 8))
    marginal = ref.csranks(x, sigma, simul=False, draws=4000, seed=1)
    joint = ref.csranks(x, sigma, simul=True, draws=4000, seed=1)
    assert (joint.rank_lo <= marginal.rank_lo).all() and (joint.rank_hi >= marginal.rank_hi).all()
    assert (joint.rank_hi - joint.rank_lo).sum() > (marginal.rank_hi - marginal.rank_lo).sum()


def test_coverage_under_its_own_normal_model():
    """θ̂ ~ N(θ, Σ) with Σ known, near-ties and an exact tie: the marginal sets cover each true rank, the
    simultaneous ones all at once, at ≥ 0.95 up to this simulation's error (400 boards: SE ≈ 0.011)."""
    theta = np.array([0.0, 0.0, 0.05, 0.1, 0.3, 0.32, 0.6, 1.0])
    sigma = np.diag(np.full(len(theta), 0.01)) + 0.004  # correlated estimates
    rng = np.random.default_rng(9)
    best = 1 + (theta[None, :] > theta[:, None]).sum(axis=1)
    worst = len(theta) - (theta[None, :] < theta[:, None]).sum(axis=1)
    root = np.linalg.cholesky(sigma)
    marginal, joint = [], []
    for board in range(400):
        x = theta + root @ rng.standard_normal(len(theta))
        m = ref.csranks(x, sigma, simul=False, draws=400, seed=board)
        s = ref.csranks(x, sigma, simul=True, draws=400, seed=board)
        # a tie's true rank is any of its ranks: covered when the set meets [best, worst]
        marginal.append((m.rank_lo <= worst) & (best <= m.rank_hi))
        joint.append(((s.rank_lo <= worst) & (best <= s.rank_hi)).all())
    marginal = np.array(marginal)
    assert marginal.mean(axis=0).min() >= 0.95 - 3 * 0.011
    assert np.mean(joint) >= 0.95 - 3 * 0.011
