"""Coverage of the tasks lens ("on new tasks like these"), by simulation: boards from the logistic task model of
tests/uncertainty/simulation.py with the truth over the whole task population, T = 5, 8 and 17 tasks, 12–15
systems with near-ties and an exact tie. Each claim is checked at its own level, up to this simulation's Monte
Carlo error (300 boards: SE ≈ 0.0126 at 0.95):

- marginal rank sets: every system's own coverage ≥ 0.95 − 3 SE (and the mean over systems ≥ 0.95 − 2 SE);
- simultaneous rank sets: all systems at once ≥ 0.95 − 2 SE;
- each row's interval of the aggregate (a marginal claim): every system ≥ 0.95 − 3 SE, mean ≥ 0.95 − 2 SE.

The mean widths are printed beside the csranks max-t reference (normal draws on the plug-in covariance,
tests/uncertainty/csranks_reference.py) on the first 40 of the same boards; the engine's Holm sets may be wider,
but not useless: at most 1.6× the reference's width from 8 tasks on. Reproduce with ``-s`` to see the figures; the larger runs
are ``python scripts/uncertainty_coverage.py``.
"""
from __future__ import annotations

import numpy as np
import pytest

import simulation as sim
from evalcore.uncertainty import rank_sets

BOARDS = 300
SE = sim.monte_carlo_se(sim.LEVEL, BOARDS)
SPREAD = (0, 0.05, 0.1, 0.2, 0.3, 0.3, 0.5, 0.6, 0.8, 1.0, 1.05, 1.5)  # near-ties and an exact tie
CLOSE = tuple(np.linspace(0, 0.6, 15))  # fifteen systems 0.04 apart
SCENARIOS = [(SPREAD, 17, "G", 0.3), (SPREAD, 8, "mean", 0.3), (CLOSE, 8, "G", 1.0), (CLOSE, 5, "G", 1.0),
             (SPREAD, 5, "mean", 0.3)]
_FOUND: dict = {}


def found(theta, n_tasks, aggregate, sigma):
    key = (theta, n_tasks, aggregate, sigma)
    if key not in _FOUND:
        _FOUND[key] = sim.simulate_tasks(sim.TasksModel(theta, sigma, aggregate), n_tasks, BOARDS, seed=n_tasks,
                                         reference_draws=1000, reference_boards=40)
        for (method, kind), tally in _FOUND[key].items():
            print(f"T={n_tasks} {aggregate} σ={sigma} {method} {kind}: "
                  + ", ".join(f"{name} {value:.3f}" for name, value in tally.summary().items()))
    return _FOUND[key]


@pytest.mark.parametrize("theta, n_tasks, aggregate, sigma", SCENARIOS)
def test_marginal_rank_sets_cover_each_system(theta, n_tasks, aggregate, sigma):
    tally = found(theta, n_tasks, aggregate, sigma)["engine", "marginal"]
    assert tally.per_system().min() >= sim.LEVEL - 3 * SE
    assert tally.summary()["mean"] >= sim.LEVEL - 2 * SE


@pytest.mark.parametrize("theta, n_tasks, aggregate, sigma", SCENARIOS)
def test_simultaneous_rank_sets_cover_all_systems_at_once(theta, n_tasks, aggregate, sigma):
    tally = found(theta, n_tasks, aggregate, sigma)["engine", "simultaneous"]
    assert tally.summary()["joint"] >= sim.LEVEL - 2 * SE


@pytest.mark.parametrize("theta, n_tasks, aggregate, sigma", SCENARIOS)
def test_row_intervals_cover_each_system(theta, n_tasks, aggregate, sigma):
    summary = found(theta, n_tasks, aggregate, sigma)["engine", "marginal"].summary()
    assert summary["interval_worst"] >= sim.LEVEL - 3 * SE
    assert summary["interval_mean"] >= sim.LEVEL - 2 * SE


@pytest.mark.parametrize("theta, n_tasks, aggregate, sigma", SCENARIOS)
def test_widths_beside_the_csranks_reference(theta, n_tasks, aggregate, sigma):
    """From 8 tasks on; at 5 the normal reference is no yardstick (it ignores the t quantile and under-covers)."""
    tallies = found(theta, n_tasks, aggregate, sigma)
    for kind in sim.KINDS:
        engine = np.mean(tallies["engine", kind].widths[:40])
        reference = np.mean(tallies["csranks", kind].widths)
        assert (np.array(tallies["engine", kind].widths) >= 1).all()
        if n_tasks >= 8:
            assert engine <= 1.6 * reference, (kind, engine, reference)


def test_unadjusted_pairwise_tests_fail_the_simultaneous_coverage(monkeypatch):
    """Planted bug: every pair tested at α on its own (no Holm): the simultaneous sets miss."""
    monkeypatch.setattr(rank_sets, "holm_rejections",
                        lambda p, alpha: np.nan_to_num(np.asarray(p, dtype=np.float64), nan=1.0) <= alpha)
    tally = sim.simulate_tasks(sim.TasksModel(CLOSE, 1.0, "G"), 8, 200, seed=3)["engine", "simultaneous"]
    assert tally.summary()["joint"] < sim.LEVEL - 3 * sim.monte_carlo_se(sim.LEVEL, 200)


def test_the_truth_is_the_population_aggregate():
    """The quadrature truth against a direct average over a million drawn tasks."""
    model = sim.TasksModel((0.0, 0.7), 0.5, "G")
    rng = np.random.default_rng(0)
    z = rng.normal(0, 1, 1_000_000) + rng.normal(0, 0.5, 1_000_000)
    direct = [np.mean(-np.logaddexp(0, -(theta + z))) for theta in model.theta]
    np.testing.assert_allclose(model.truth(), direct, atol=3e-3)
    assert sim.TasksModel((0.3, 0.3), 1.0, "mean").truth()[0] == sim.TasksModel((0.3, 0.3), 1.0, "mean").truth()[1]
