"""The Ties & precision what-if follows the Task chosen above it (first-visitor review): with the table on
WinoGrande, the what-if still ran the ARCChallenge run, because the page wrote the run it showed by default into
the URL — a reload or a copied link then held it as the visitor's choice — and a run picked under one Task stayed
when the Task changed. On the shipped data, which holds a raw run of ARCChallenge and one of WinoGrande."""
from __future__ import annotations

import re

import pytest

from app_harness import ROOT, texts

SHIPPED = ROOT / "data"
RUNS = SHIPPED / "runs"
ARC, WINO = "ARCChallenge", "WinoGrande"


def run_file(task: str) -> str:
    """The shipped raw run of ``task`` (its file name), read from the folder, not from the page."""
    found = sorted(p.name for p in RUNS.glob(f"rar-b_{task}_*.parquet"))
    if not found:
        pytest.fail(f"data/runs ships no raw run of {task}")
    return found[0]


def run_line(at) -> str:
    line = next((c for c in texts(at, "caption") if c.startswith("Run: ")), None)
    assert line is not None, texts(at, "caption")
    return line


def test_a_reloaded_view_then_a_task_choice_runs_that_tasks_run(open_url):
    """Open the view, reload its own URL (or open the copied link), then set Task to WinoGrande."""
    first = open_url(SHIPPED, "ties-and-precision.py", {"instr": "without"})
    assert not first.exception
    assert first.selectbox(key="wi_run").value == run_file(ARC), "all tasks: the first run"
    at = open_url(SHIPPED, "ties-and-precision.py", dict(first.query_params))  # the URL the page wrote
    at.selectbox(key="tp_task").set_value(WINO).run()
    assert not at.exception
    assert at.selectbox(key="wi_run").value == run_file(WINO)
    line = run_line(at)
    assert f"· {WINO} ·" in line and "same condition" in line.rsplit("—", 1)[1], line


def test_a_task_choice_moves_a_run_chosen_before_it(open_url):
    """A run picked under 'all tasks' belonged to that view: choosing a Task that has a shipped run moves the
    what-if to it."""
    at = open_url(SHIPPED, "ties-and-precision.py", {"instr": "without"})
    at.selectbox(key="wi_run").set_value(run_file(WINO)).run()
    assert at.selectbox(key="wi_run").value == run_file(WINO)
    at.selectbox(key="tp_task").set_value(ARC).run()
    assert not at.exception
    assert at.selectbox(key="wi_run").value == run_file(ARC)
    line = run_line(at)
    assert f"· {ARC} ·" in line and "same condition" in line.rsplit("—", 1)[1], line


def test_a_run_chosen_under_the_task_stays_and_the_line_says_how_it_differs(open_url):
    """Choosing another task's run after the Task is kept, and the line does not claim the table's condition."""
    at = open_url(SHIPPED, "ties-and-precision.py", {"instr": "without", "tp_task": WINO})
    assert at.selectbox(key="wi_run").value == run_file(WINO)
    at.selectbox(key="wi_run").set_value(run_file(ARC)).run()
    assert not at.exception
    assert at.selectbox(key="wi_run").value == run_file(ARC)
    assert at.query_params.get("wi_run") == run_file(ARC), "a chosen run is in the link"
    line = run_line(at)
    assert "the same condition" not in line, line
    # the table's task, the run's task, and that the table's task has a run of its own
    assert re.findall(rf"{WINO}|{ARC}", line.rsplit("—", 1)[1]) == [WINO, ARC, WINO], line
