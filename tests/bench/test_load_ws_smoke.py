"""Smoke test of bench/load_ws.py: the protocol-level load client against a real server.

One ``streamlit run app.py`` on loopback with the shipped data. First the self-validation: Chromium and the
protocol client open the same URL and make the same moves, and must send the same rerun messages and receive
the same elements (bench/ws_validate.py) — and a deliberately wrong client (one that sends the states of the
widgets inside a closed popover, which a browser never mounts) must fail that check, so it can fail. Then
2 simulated users act for a few seconds: actions are served, with latencies, 0 errors, and the server's CPU
and RSS were measured. No timing assertions: figures on a shared machine are noise.
"""
from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest

from needs import missing, require_module

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def load(name: str):
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def modules():
    require_module("playwright")
    require_module("psutil")
    require_module("websockets")
    ws_session = load("ws_session")
    ws_validate = load("ws_validate")
    if not Path(ws_validate.CHROMIUM).exists():
        missing(f"{ws_validate.CHROMIUM} not found (apt-get install chromium)")
    return load("load_ws"), ws_validate, ws_session


@pytest.fixture(scope="module")
def target(modules, tmp_path_factory):
    load_ws = modules[0]
    server = load_ws.start_direct(ROOT / "data", tmp_path_factory.mktemp("load-ws"))
    yield server
    server.close()


def test_client_matches_chromium_and_a_wrong_client_does_not(modules, target):
    _, ws_validate, ws_session = modules
    result = asyncio.run(ws_validate.validate(target.url, timeout=120))
    print(result.text())
    assert result.ok, result.text()
    assert len(result.steps) == 4  # default view, a change, a page switch, a change on that page
    assert all(step.widgets > 5 and step.elements > 20 for step in result.steps), result.text()
    assert result.steps[0].tables >= 1 and result.steps[0].table_cells > 100, result.text()

    class MountsClosedPopovers(ws_session.Session):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.tree.mounted = lambda path: True

    wrong = asyncio.run(ws_validate.validate(target.url, timeout=120, session_class=MountsClosedPopovers))
    assert not wrong.ok, wrong.text()
    assert any("rerun widget states" in d for step in wrong.steps for d in step.differences), wrong.text()


def test_two_users_are_served_without_errors(modules, target):
    load_ws = modules[0]
    assert not asyncio.run(load_ws.warm_up(target, sessions=1, actions=2, seed=1, timeout=120))
    step = asyncio.run(load_ws.run_step(target, sessions=2, duration=8, think=(0.5, 1.5), seed=1, timeout=120,
                                        ramp=1))
    row = step.summary()
    print(row)
    assert row["errors"] == 0, row["error_examples"]
    assert row["actions_served"] >= 4, row
    assert all(latency > 0 for latency in step.latencies) and row["p95_s"] >= row["p50_s"] > 0
    assert len(step.opens) == 2
    assert step.cpu_seconds > 0 and row["server_cpu_ms_per_action"] > 0
    assert step.rss_before > 50 * 2**20 and step.rss_end > 50 * 2**20
    assert row["sessions_per_process"] == [2]  # Streamlit itself counted both sessions
    assert set(row["action_kinds"]) <= {"change", "page", "click"}
    print(load_ws.markdown([row]))
