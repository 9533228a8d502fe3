"""Coverage of the queries lens ("on these tasks"), by simulation: per-query scores from the model of
tests/uncertainty/simulation.py — a shared query difficulty makes two systems' per-query scores positively
correlated — with the real query counts (data/query_counts.json: R2MED 77–150, RAR-b's MCR sets 1,172–5,521,
RAR-b full 1,172–10,042), 0/1 (p@1-like) and graded (Beta, nDCG-like) values, the truth the population task means
aggregated over these tasks. Rows are published (task means only: the engine bounds them), per query, or mixed.

Each claim at its level up to the simulation's error (200 boards: SE ≈ 0.0154 at 0.95): marginal rank sets
and row intervals per system ≥ 0.95 − 3 SE (mean ≥ 0.95 − 2 SE), simultaneous sets jointly ≥ 0.95 − 2 SE; widths
beside the csranks max-t reference on the first 30 boards (at most 1.3× its width).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import simulation as sim

ROOT = Path(__file__).resolve().parents[2]
COUNTS = json.loads((ROOT / "data" / "query_counts.json").read_text(encoding="utf-8"))["benchmarks"]
R2MED = tuple(entry["queries"] for entry in COUNTS["r2med"]["full"].values())
MCR = tuple(entry["queries"] for entry in COUNTS["rar-b"]["mcr"].values())
FULL = tuple(entry["queries"] for entry in COUNTS["rar-b"]["full"].values())
BOARDS = 200
SE = sim.monte_carlo_se(sim.LEVEL, BOARDS)
THETA = (0, 0.02, 0.05, 0.1, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)  # near-ties and an exact tie
_TAU = np.random.default_rng(11)
MODELS = {
    "R2MED-like, graded, mean, T=8": sim.QueriesModel(THETA, tuple(_TAU.normal(-1.2, 0.5, 8)), R2MED, "beta", "mean"),
    "MCR-like, 0/1, G, T=8": sim.QueriesModel(THETA, tuple(_TAU.normal(0.0, 0.5, 8)), MCR, "bernoulli", "G"),
    "RAR-b-full-like, graded, G, T=17": sim.QueriesModel(THETA, tuple(_TAU.normal(-1.5, 1.0, 17)), FULL, "beta",
                                                         "G"),
    "R2MED counts, 0/1, mean, T=5": sim.QueriesModel(THETA, tuple(_TAU.normal(-0.5, 0.5, 5)), R2MED[:5],
                                                     "bernoulli", "mean"),
}
CASES = [(name, rows) for name in MODELS for rows in ("published", "per query", "mixed")
         if not (name.startswith("RAR-b-full") and rows != "published")]  # the big per-query runs: the script
_FOUND: dict = {}


def found(name, rows):
    if (name, rows) not in _FOUND:
        _FOUND[name, rows] = sim.simulate_queries(MODELS[name], rows, BOARDS, seed=len(name),
                                                  reference_draws=1000, reference_boards=30)
        for (method, kind), tally in _FOUND[name, rows].items():
            if tally.boards:
                print(f"{name} · {rows} · {method} {kind}: "
                      + ", ".join(f"{key} {value:.3f}" for key, value in tally.summary().items()))
    return _FOUND[name, rows]


@pytest.mark.parametrize("name, rows", CASES)
def test_marginal_rank_sets_and_intervals_cover_each_system(name, rows):
    tally = found(name, rows)["engine", "marginal"]
    summary = tally.summary()
    assert tally.per_system().min() >= sim.LEVEL - 3 * SE and summary["mean"] >= sim.LEVEL - 2 * SE
    assert summary["interval_worst"] >= sim.LEVEL - 3 * SE and summary["interval_mean"] >= sim.LEVEL - 2 * SE


@pytest.mark.parametrize("name, rows", CASES)
def test_simultaneous_rank_sets_cover_all_at_once(name, rows):
    assert found(name, rows)["engine", "simultaneous"].summary()["joint"] >= sim.LEVEL - 2 * SE


@pytest.mark.parametrize("name, rows", [case for case in CASES if case[1] != "mixed"])
def test_widths_beside_the_csranks_reference(name, rows):
    tallies = found(name, rows)
    for kind in sim.KINDS:
        engine = np.mean(tallies["engine", kind].widths[:30])
        reference = np.mean(tallies["csranks", kind].widths)
        assert engine <= 1.3 * reference, (kind, engine, reference)


def test_published_rows_are_wider_than_their_per_query_selves():
    """The bound is conservative for graded values: the same boards, bounded, give wider sets."""
    name = "R2MED-like, graded, mean, T=8"
    assert (found(name, "published")["engine", "marginal"].summary()["width"]
            > found(name, "per query")["engine", "marginal"].summary()["width"])


def test_the_task_means_are_the_population_means():
    """The quadrature μ against the average of a million simulated queries."""
    model = sim.QueriesModel((0.3,), (-1.0,), (1_000_000,), "beta", "mean")
    drawn = model.draw(np.random.default_rng(0))[0]
    assert drawn.mean() == pytest.approx(model.task_means()[0, 0], abs=2e-3)
    assert ((drawn >= 0) & (drawn <= 1)).all()
    assert np.corrcoef(sim.QueriesModel((0.3, 0.3), (0.0,), (20_000,), "bernoulli", "mean")
                       .draw(np.random.default_rng(1))[0])[0, 1] > 0.1  # positively correlated systems
