"""``evalcore leaderboard --format json`` run twice, as two processes, prints the same uncertainty: both lenses'
columns of every ranked row and the board's uncertainty record (level, kind, adjacent pairs' tests, who could be
#1). Each process starts numpy's global generator from fresh OS entropy, so a number drawn from it would differ.

The boards: each benchmark's default (RAR-b: G over 17 tasks, the tasks lens' resamples drawn from its fixed
seed; R2MED: the mean over 8 tasks, every resample enumerated), RAR-b's MCR setting (per-query rows with tie
ranges) and R2MED with simultaneous rank sets. Every shipped board through two Store instances:
tests/uncertainty/test_reproducible_boards.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalcore.store.answers import LENS_COLUMNS

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = [f"{lens}_{column}" for lens in ("queries", "tasks") for column in LENS_COLUMNS]
BOARDS = [
    ["--benchmark", "rar-b"],
    ["--benchmark", "r2med"],
    ["--benchmark", "rar-b", "--setting", "mcr"],
    ["--benchmark", "r2med", "--ranks", "simultaneous"],
]


def leaderboard_json(arguments: list[str]) -> dict:
    environment = {**os.environ, "PYTHONHASHSEED": "random"}
    environment.pop("TIEBREAK_DATA", None)
    done = subprocess.run([sys.executable, "-m", "evalcore", "leaderboard", *arguments, "--format", "json",
                           "--data", str(ROOT / "data")], capture_output=True, text=True, cwd=ROOT,
                          env=environment, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("arguments", BOARDS, ids=lambda a: " ".join(a))
def test_two_runs_print_the_same_uncertainty(arguments):
    first, second = leaderboard_json(arguments), leaderboard_json(arguments)
    assert len(first["ranked"]) >= 8
    for lens in ("queries", "tasks"):
        assert any(row[f"{lens}_lo"] is not None for row in first["ranked"]), lens  # the lens speaks here
    columns = [[{c: row[c] for c in ["system", *COLUMNS]} for row in run["ranked"]] for run in (first, second)]
    assert columns[0] == columns[1]
    assert first["uncertainty"] == second["uncertainty"]
    assert first["uncertainty"] is not None
