"""The adjacent-pairs headline under the null: "N of M adjacent pairs differ" must name a pair of equal systems as
differing in at most 5% of boards (family-wise), on either lens. The board's order comes from the same data
(as on the Leaderboard), so each pair's direction is chosen by the data.

- Complete null: every system equal (2, 3 and 12 systems).
- Partial null: an exact tie between two neighbours among clearly separated systems — Holm's step-down reaches
  the tied pair with threshold α once the others are rejected, so its test must be valid on its own.

Rates from 2,000 boards (SE ≈ 0.005 at 0.05); the check is rate ≤ 0.05 + 2 SE.
"""
from __future__ import annotations

import numpy as np
import pytest

import simulation as sim
from evalcore.uncertainty import separability, tasks_lens

BOARDS = 2000
ALPHA = 1.0 - sim.LEVEL
CEILING = ALPHA + 2 * sim.monte_carlo_se(ALPHA, BOARDS)
QUERY_COUNTS = (100, 300, 1000, 150, 120, 500, 80, 200)


def tasks_draw(model: sim.TasksModel, n_tasks: int):
    return lambda rng: tasks_lens.estimates(model.draw(n_tasks, rng), model.aggregate)


def queries_draw(model: sim.QueriesModel, rows: str):
    def draw(rng):
        est, _, _ = sim.queries_board(model, model.draw(rng), rows, reference=False)
        return est
    return draw


@pytest.mark.parametrize("systems", [2, 3, 12])
@pytest.mark.parametrize("n_tasks, aggregate", [(5, "G"), (8, "mean"), (17, "G")])
def test_tasks_lens_complete_null(systems, n_tasks, aggregate):
    model = sim.TasksModel((0.3,) * systems, 0.5, aggregate)
    rate, _ = sim.null_adjacent_rate(tasks_draw(model, n_tasks), BOARDS, seed=systems * 100 + n_tasks)
    print(f"tasks lens, {systems} equal systems, T={n_tasks} {aggregate}: family-wise rate {rate:.3f}")
    assert rate <= CEILING


@pytest.mark.parametrize("systems", [2, 3, 12])
@pytest.mark.parametrize("rows", ["published", "per query"])
def test_queries_lens_complete_null(systems, rows):
    model = sim.QueriesModel((0.2,) * systems, tuple(np.linspace(-1, 1, 8)), QUERY_COUNTS, "bernoulli", "mean")
    rate, _ = sim.null_adjacent_rate(queries_draw(model, rows), BOARDS, seed=systems)
    print(f"queries lens, {systems} equal systems, {rows}: family-wise rate {rate:.3f}")
    assert rate <= CEILING


def tied_pair_rate(draw, tied: set, boards: int, seed: int) -> float:
    """How often the tied neighbours are declared to differ."""
    rng = np.random.default_rng(seed)
    wrong = 0
    for _ in range(boards):
        est = draw(rng)
        pairs = separability.adjacent_pairs(est, np.argsort(-est.points, kind="stable"), ALPHA)
        wrong += any(differ and {int(a), int(b)} == tied
                     for a, b, differ in zip(pairs.first, pairs.second, pairs.differ))
    return wrong / boards


def test_tasks_lens_partial_null():
    model = sim.TasksModel((3.0, 2.0, 1.0, 1.0, 0.0, -1.0), 0.3, "mean")
    rate = tied_pair_rate(tasks_draw(model, 17), {2, 3}, BOARDS, seed=1)
    print(f"tasks lens, a tied pair among separated systems: rate {rate:.3f}")
    assert rate <= CEILING


@pytest.mark.parametrize("rows", ["published", "per query"])
def test_queries_lens_partial_null(rows):
    model = sim.QueriesModel((2.0, 1.0, 0.3, 0.3, -0.5, -1.5), tuple(np.linspace(-0.5, 0.5, 8)), (500,) * 8,
                             "bernoulli", "mean")
    rate = tied_pair_rate(queries_draw(model, rows), {2, 3}, BOARDS, seed=2)
    print(f"queries lens, a tied pair among separated systems, {rows}: rate {rate:.3f}")
    assert rate <= CEILING
