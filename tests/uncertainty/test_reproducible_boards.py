"""The Leaderboard's uncertainty is a function of the data alone: no seed, no state carried between calls.

Every shipped board (each condition of the shipped data's facets: benchmark × setting × metric × precision ×
instruction × tie policy, 139 boards) is built by two separate :class:`~evalcore.store.Store` instances, and
between the two numpy's and Python's global random states are moved and the tasks lens' cached resamples
(:func:`evalcore.uncertainty.intervals.resamples`, drawn from a fixed seed beyond 10 tasks) are cleared — so a
number that leaned on a global generator, on the order of calls or on a cache would differ. Both lenses'
columns (interval, rank set, tier, could be #1) must be identical to the bit, and the JSON the CLI prints for the
board (``json_record``, what ``evalcore leaderboard --format json`` and the API serve) identical as text.
The CLI itself is run twice as separate processes in tests/uncertainty/test_reproducible_cli.py.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.commands.leaderboard import json_record
from evalcore.store import Condition, Store
from evalcore.store.answers import LENS_COLUMNS
from evalcore.uncertainty import intervals

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = [f"{lens}_{column}" for lens in ("queries", "tasks") for column in LENS_COLUMNS]
SHIPPED_BOARDS = 139

pytestmark = pytest.mark.slow  # every shipped board twice: about 40 s CPU on a loaded 2-core machine


def conditions(store: Store) -> list[Condition]:
    frame = store.facets()["conditions"]
    return [Condition(benchmark=row.benchmark, metric=row.metric, setting=row.setting,
                      instruction=None if pd.isna(row.instruction) else bool(row.instruction),
                      precision=row.precision, tie_policy=row.tie_policy) for row in frame.itertuples()]


def answers(store: Store, seed: int) -> dict:
    """{condition: (uncertainty columns, JSON text)} of every shipped board, with the global random states set
    from ``seed`` before each board and the resample cache cleared before the first."""
    intervals.resamples.cache_clear()
    found = {}
    for cond in conditions(store):
        np.random.seed(seed)
        random.seed(seed)
        np.random.random(seed % 7 + 1)  # and moved by a board-dependent amount
        board = store.leaderboard(cond)
        record = json_record(board, cond)
        text = json.dumps({"ranked": [{c: row[c] for c in COLUMNS} for row in record["ranked"]],
                           "uncertainty": record["uncertainty"]}, sort_keys=True)
        found[cond] = (board.ranked[["system", *COLUMNS]].reset_index(drop=True), text)
        seed += 1
    return found


@pytest.fixture(scope="module")
def two_runs():
    return answers(Store(ROOT / "data"), seed=1), answers(Store(ROOT / "data"), seed=1000)


def test_every_shipped_board_is_compared(two_runs):
    first, second = two_runs
    assert len(first) == len(second) == SHIPPED_BOARDS
    assert first.keys() == second.keys()
    boards_with_both = sum(1 for frame, _ in first.values()
                           if frame["queries_lo"].notna().any() and frame["tasks_lo"].notna().any())
    assert boards_with_both == SHIPPED_BOARDS  # both lenses speak of every shipped board


def test_uncertainty_columns_are_identical(two_runs):
    first, second = two_runs
    for cond, (frame, _) in first.items():
        pd.testing.assert_frame_equal(frame, second[cond][0], check_exact=True, obj=str(cond))


def test_the_json_is_identical(two_runs):
    first, second = two_runs
    different = [cond for cond, (_, text) in first.items() if text != second[cond][1]]
    assert not different


def test_a_draw_from_the_global_generator_would_be_caught(monkeypatch):
    """Planted bug: the tasks lens' resamples beyond 10 tasks drawn from numpy's global generator — the board of
    17 tasks then changes with the global state, and the comparison above sees it."""
    def global_draws(n_tasks):
        counts = np.random.multinomial(n_tasks, np.full(n_tasks, 1.0 / n_tasks), size=intervals.DRAWS)
        return counts.astype(np.float64), np.full(intervals.DRAWS, 1.0 / intervals.DRAWS)

    monkeypatch.setattr(intervals, "resamples", global_draws)
    store = Store(ROOT / "data")
    cond = Condition(benchmark="rar-b", setting="full", metric="ndcg@10", instruction=None)
    found = []
    for seed in (1, 2):
        np.random.seed(seed)
        found.append(store.leaderboard(cond).ranked[["tasks_lo", "tasks_hi"]].to_numpy())
    assert not np.array_equal(found[0], found[1], equal_nan=True)
