"""bench/soak.py's verdict on made-up samples: each of its four checks passes on figures within its limit and
fails just past it (errors, p95 of the last window against the first, RSS growth over the last window, RSS
after the users left against the loaded baseline)."""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def soak():
    sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("soak_under_test", ROOT / "bench" / "soak.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _run(soak, first_latency=0.5, last_latency=0.5, growth=1.0, after=1.1, errors=0):
    """30 minutes of actions every second, RSS samples every 5 s for two processes of baseline 100 MB that grow
    by ``growth`` over the last 15 minutes, and stand at ``after`` × 100 MB once the users left."""
    minutes = 30.0
    actions = [soak.Action(sent=float(t), latency=first_latency if t < 300 else last_latency if t >= 1500 else 0.4,
                           kind="change", errors=["boom"] if t < errors else []) for t in range(int(60 * minutes))]
    samples = soak.Samples(pids=[1, 2])
    start = 1000.0
    stop = start + 60 * minutes
    for t in range(0, int(60 * minutes) + 1, 5):
        level = 120.0 if start + t < stop - 900 else 120.0 * (1 + (growth - 1) * (start + t - (stop - 900)) / 900)
        samples.rows.append((start + t, "load", [level, level]))
    for t in range(5, 181, 5):
        samples.rows.append((stop + t, "after", [100.0 * after, 100.0 * after]))
    run = {"actions": actions, "open_errors": [], "start": start, "stop": stop, "after_end": stop + 180,
           "cpu": 100.0, "machine": 200.0, "tracebacks": 0}
    args = argparse.Namespace(minutes=minutes, window=0.0, growth_window=0.0, users=50, processes=2)
    return soak.verdict(run, [100.0, 100.0], samples, args)


def test_a_steady_run_passes(soak):
    result = _run(soak)
    assert result["ok"], result["checks"]
    assert result["window_min"] == 5 and result["growth_window_min"] == 15


@pytest.mark.parametrize("change, check", [
    (dict(errors=1), "errors"),
    (dict(last_latency=0.61), "p95_last_over_first"),
    (dict(growth=1.07), "rss_growth_last_window"),
    (dict(after=1.25), "rss_after_over_baseline"),
])
def test_each_check_fails_past_its_limit(soak, change, check):
    result = _run(soak, **change)
    assert not result["ok"]
    assert [name for name, c in result["checks"].items() if not c["ok"]] == [check]


def test_within_the_limits_each_check_passes(soak):
    assert _run(soak, last_latency=0.59, growth=1.04, after=1.19)["ok"]
