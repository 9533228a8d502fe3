"""Coverage of the tasks lens ("on new tasks like these"), by simulation: boards from the logistic task model of
tests/uncertainty/simulation.py with the truth over the whole task population, T = 5, 8 and 17 tasks, 12–15
systems with near-ties and an exact tie. Each claim is checked up to this simulation's Monte Carlo error (300
boards: SE ≈ 0.0126 at 0.95):

- marginal rank sets: every system's own coverage ≥ 0.95 − 3 SE (and the mean over systems ≥ 0.95 − 2 SE);
- simultaneous rank sets: all systems at once ≥ 0.95 − 2 SE;
- each row's interval of the aggregate (the bootstrap-t over tasks, a marginal claim): every system ≥ its level
  − 3 SE, the mean over systems ≥ its level − 2 SE, where the level is 0.95 — except where the larger runs of
  ``python scripts/uncertainty_coverage.py --only rows`` (3,000 boards at 5 tasks, 600 at 8 and 17) found the
  bootstrap-t short of it: under G with 5 or 8 tasks, and for the most skewed system with the mean at 5 tasks.
  There the test holds the documented limit (:data:`INTERVAL_LIMITS`), not 0.95;
- the bootstrap-t covers more than the plain t interval θ̂ ± t_(T−1)·se it replaced, on the same boards.

The mean widths are printed beside the csranks max-t reference (normal draws on the plug-in covariance,
tests/uncertainty/csranks_reference.py) on the first 40 of the same boards; the engine's Holm sets may be wider,
but not useless: at most 1.6× the reference's width from 8 tasks on. Reproduce with ``-s`` to see the figures.
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
INTERVAL_LIMITS = {  # (mean over systems, worst system) the row intervals reach, where it is not 0.95
    (CLOSE, 8, "G", 1.0): (0.93, 0.91),   # G, 8 tasks: 0.932–0.933 / 0.912–0.917 over 600 boards
    (CLOSE, 5, "G", 1.0): (0.93, 0.92),   # G, 5 tasks: 0.930 / 0.926 for θ ≤ 0.6 (0.905 at θ = 1.5) over 3,000
    (SPREAD, 5, "mean", 0.3): (0.95, 0.935),  # the mean, 5 tasks: 0.954 / 0.938 at θ = 1.5 over 3,000
}
_FOUND: dict = {}
_ROWS: dict = {}


def found(theta, n_tasks, aggregate, sigma):
    key = (theta, n_tasks, aggregate, sigma)
    if key not in _FOUND:
        _FOUND[key] = sim.simulate_tasks(sim.TasksModel(theta, sigma, aggregate), n_tasks, BOARDS, seed=n_tasks,
                                         reference_draws=1000, reference_boards=40, with_intervals=False)
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


def rows(theta, n_tasks, aggregate, sigma) -> sim.RowIntervals:
    key = (theta, n_tasks, aggregate, sigma)
    if key not in _ROWS:
        _ROWS[key] = sim.row_intervals(sim.TasksModel(theta, sigma, aggregate), n_tasks, BOARDS, seed=n_tasks)
        for method in sim.ROW_METHODS:
            print(f"T={n_tasks} {aggregate} σ={sigma} row intervals, {method}: "
                  + ", ".join(f"{name} {value:.3f}" for name, value in _ROWS[key].summary(method).items()))
    return _ROWS[key]


@pytest.mark.parametrize("theta, n_tasks, aggregate, sigma", SCENARIOS)
def test_row_intervals_cover_each_system(theta, n_tasks, aggregate, sigma):
    summary = rows(theta, n_tasks, aggregate, sigma).summary("bootstrap-t")
    mean_level, worst_level = INTERVAL_LIMITS.get((theta, n_tasks, aggregate, sigma), (sim.LEVEL, sim.LEVEL))
    assert summary["worst"] >= worst_level - 3 * SE
    assert summary["mean"] >= mean_level - 2 * SE


@pytest.mark.parametrize("theta, n_tasks, aggregate, sigma", SCENARIOS)
def test_bootstrap_t_covers_more_than_the_t_interval(theta, n_tasks, aggregate, sigma):
    bootstrap_t, t = (rows(theta, n_tasks, aggregate, sigma).summary(method) for method in sim.ROW_METHODS)
    assert bootstrap_t["mean"] > t["mean"] and bootstrap_t["worst"] > t["worst"]


@pytest.mark.parametrize("n_tasks", [5, 8, 17])
def test_the_harness_measures_the_engine_intervals(n_tasks):
    """row_intervals (every board's rows in one bootstrap-t call) decides as evalcore.uncertainty.intervals does
    board by board, on the same boards."""
    model = sim.TasksModel(SPREAD, 1.0, "G")
    batched = sim.row_intervals(model, n_tasks, 6, seed=5).inside["bootstrap-t"]
    one_by_one = np.array(sim.simulate_tasks(model, n_tasks, 6, seed=5)["engine", "marginal"].inside)
    assert np.array_equal(batched, one_by_one)


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
    tally = sim.simulate_tasks(sim.TasksModel(CLOSE, 1.0, "G"), 8, 200, seed=3, with_intervals=False)[
        "engine", "simultaneous"]
    assert tally.summary()["joint"] < sim.LEVEL - 3 * sim.monte_carlo_se(sim.LEVEL, 200)


def test_the_truth_is_the_population_aggregate():
    """The quadrature truth against a direct average over a million drawn tasks."""
    model = sim.TasksModel((0.0, 0.7), 0.5, "G")
    rng = np.random.default_rng(0)
    z = rng.normal(0, 1, 1_000_000) + rng.normal(0, 0.5, 1_000_000)
    direct = [np.mean(-np.logaddexp(0, -(theta + z))) for theta in model.theta]
    np.testing.assert_allclose(model.truth(), direct, atol=3e-3)
    assert sim.TasksModel((0.3, 0.3), 1.0, "mean").truth()[0] == sim.TasksModel((0.3, 0.3), 1.0, "mean").truth()[1]
