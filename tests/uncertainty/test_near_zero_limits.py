"""A documented limit of the queries lens ("on these tasks"), not a claim of 0.95: a board ranked by G with a task
whose mean is near 0. The model (tests/uncertainty/simulation.py ``near_zero_model``): 4 systems ranked by G over
8 tasks; on the low task (n queries) system 0's population mean is μ₀ and the others' a little higher; seven tasks
of 500 queries with means 0.5–0.7. What ``python scripts/uncertainty_coverage.py --only near-zero`` found over 600
boards, asserted here over 300 (SE ≈ 0.0126 near 0.95, 0.028 near 0.4):

- **n ≥ 1,000 queries, μ₀ ≥ 0.005**: every system's interval covers at least 0.92 (found 0.928–1.000), whatever the
  values (0/1 or graded) and rows (published or per query).
- **0/1 values, n = 100: the zero-task exit.** A task mean of exactly 0 happens with probability (1 − μ)^n (each
  query is 0 with probability 1 − μ, independently); the row's G is then 0, it leaves the model (tied at the
  bottom, no interval) although its true G is positive. That is what costs the coverage: system 0 at μ₀ = 0.005
  covers only 0.34–0.38, while published rows that stay in cover ≥ 0.93 (per-query rows that stay in: ≥ 0.857 —
  kept in only because they are not 0, they over-estimate a tiny mean).
- **graded values, per query, n = 100**: no exit (Beta values are never exactly 0), but the delta method on the
  log scale with a skewed, tiny mean: 0.80–0.88 at μ₀ = 0.005. Published graded rows keep ≥ 0.99 (the bound is
  far from attained by graded values).
"""
from __future__ import annotations

import numpy as np
import pytest

import simulation as sim

BOARDS = 300
_FOUND: dict = {}


def found(mu0: float, n: int, values: str, rows: str) -> dict:
    key = (mu0, n, values, rows)
    if key not in _FOUND:
        model = sim.near_zero_model(mu0, n, values)
        summary = sim.simulate_near_zero(model, rows, BOARDS, seed=2).summary()
        summary["mu_low"] = model.task_means()[:, 0]
        _FOUND[key] = summary
        print(f"μ₀={mu0} n={n} {values} {rows}: coverage {np.round(summary['coverage'], 3)}, left out "
              f"{np.round(summary['excluded'], 3)}, coverage when in {np.round(summary['coverage_included'], 3)}")
    return _FOUND[key]


def se(p: float) -> float:
    return sim.monte_carlo_se(p, BOARDS)


@pytest.mark.parametrize("mu0", [0.005, 0.02])
@pytest.mark.parametrize("values", ["bernoulli", "beta"])
@pytest.mark.parametrize("rows", ["published", "per query"])
def test_a_thousand_queries_keep_the_documented_level(mu0, values, rows):
    coverage = found(mu0, 1000, values, rows)["coverage"]
    assert coverage.min() >= 0.92 - 3 * se(0.92)
    assert coverage.mean() >= 0.92 - 2 * se(0.92)


@pytest.mark.parametrize("mu0", [0.005, 0.01])
@pytest.mark.parametrize("rows", ["published", "per query"])
def test_the_zero_task_exit_costs_the_coverage(mu0, rows):
    s = found(mu0, 100, "bernoulli", rows)
    exit_probability = (1 - s["mu_low"]) ** 100  # the closed form, per system
    assert np.abs(s["excluded"] - exit_probability).max() <= 3 * np.sqrt(exit_probability * (1 - exit_probability)
                                                                       / BOARDS).max()
    assert (s["coverage"] <= 1 - s["excluded"] + 1e-12).all()  # a row left out has no interval: never covers
    stays = 0.93 if rows == "published" else (0.86 if mu0 == 0.005 else 0.93)
    assert s["coverage_included"].min() >= stays - 3 * se(stays)


def test_the_failure_is_where_it_is_documented():
    """Pinned within Monte Carlo error, so a change of the engine that moves it shows here (and in the docs)."""
    published = found(0.005, 100, "bernoulli", "published")["coverage"][0]
    assert abs(published - 0.38) <= 3 * se(0.38)
    graded = found(0.005, 100, "beta", "per query")["coverage"]
    assert graded.min() >= 0.80 - 3 * se(0.80) and graded.max() <= 0.88 + 3 * se(0.88)


def test_published_graded_rows_keep_their_level_near_zero():
    assert found(0.005, 100, "beta", "published")["coverage"].min() >= 0.99 - 3 * se(0.99)
