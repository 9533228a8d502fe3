"""Idle-time prefetch (ui/prefetch.py): a page schedules its neighbouring conditions, one worker thread runs
them into the query cache while the server is quiet, and the visitor's next change finds them there."""
from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
sys.path.insert(0, str(ROOT / "tests" / "pages"))

import synthetic_data  # noqa: E402
from ui.prefetch import ActivityMiddleware, IdlePrefetcher  # noqa: E402


@pytest.fixture(scope="module")
def synthetic_dir(tmp_path_factory) -> Path:
    return synthetic_data.write_small(tmp_path_factory.mktemp("prefetch-synthetic"))


@pytest.fixture(scope="module")
def uneven_dir(synthetic_dir, tmp_path_factory) -> Path:
    """The synthetic data where the offered precisions depend on the instruction state (with instructions:
    int8, no bf16+hps) and a second tie policy (docid-asc) exists for fp32 only."""
    import shutil

    import pandas as pd

    folder = tmp_path_factory.mktemp("prefetch-uneven")
    for item in synthetic_dir.iterdir():
        if item.name != "query_metrics_synthetic.parquet":
            (shutil.copytree if item.is_dir() else shutil.copy)(item, folder / item.name)
    rows = pd.read_parquet(synthetic_dir / "query_metrics_synthetic.parquet")
    rows = rows[~(rows["instruction"] & (rows["precision"] == "bf16+hps"))]
    ascending = rows[rows["precision"] == "fp32"].assign(tie_policy="docid-asc")
    int8 = rows[rows["instruction"] & (rows["precision"] == "bf16")].assign(precision="int8")
    pd.concat([rows, ascending, int8]).to_parquet(folder / "query_metrics_synthetic.parquet", index=False)
    return folder


@pytest.fixture(autouse=True)
def _prefetch_off_unless_asked(monkeypatch):
    monkeypatch.setenv("TIEBREAK_PREFETCH", "off")


def recorder():
    ran: list[str] = []

    def job(name: str, seconds: float = 0.0):
        def run():
            ran.append(name)
            time.sleep(seconds)
        return name, run

    return ran, job


def test_jobs_run_once_each_in_the_order_given():
    prefetcher = IdlePrefetcher(idle_seconds=0.0)
    ran, job = recorder()
    assert prefetcher.schedule([job("a"), job("b"), job("a"), job("c")]) == 3
    assert prefetcher.wait_until_idle(10)
    assert ran == ["a", "b", "c"]
    assert prefetcher.schedule([job("b"), job("d")]) == 1, "finished keys are not scheduled again"
    assert prefetcher.wait_until_idle(10)
    assert ran == ["a", "b", "c", "d"]


def test_nothing_starts_while_a_run_or_request_is_in_progress():
    prefetcher = IdlePrefetcher(idle_seconds=0.0)
    ran, job = recorder()
    prefetcher.activity_started()
    prefetcher.activity_started()  # a script run and an HTTP request at once
    prefetcher.schedule([job("a")])
    time.sleep(0.3)
    assert ran == []
    prefetcher.activity_finished()
    time.sleep(0.3)
    assert ran == [], "one activity is still in progress"
    prefetcher.activity_finished()
    assert prefetcher.wait_until_idle(10)
    assert ran == ["a"]


def test_a_job_waits_for_the_quiet_period_after_the_last_activity():
    prefetcher = IdlePrefetcher(idle_seconds=0.4)
    started_at: list[float] = []
    prefetcher.activity_started()
    prefetcher.schedule([("a", lambda: started_at.append(time.monotonic()))])
    prefetcher.activity_finished()
    finished_at = time.monotonic()
    assert prefetcher.wait_until_idle(10)
    assert started_at[0] - finished_at >= 0.39


def test_a_new_schedule_replaces_the_pending_jobs():
    prefetcher = IdlePrefetcher(idle_seconds=0.0)
    ran, job = recorder()
    prefetcher.activity_started()
    prefetcher.schedule([job("old-1"), job("old-2")])
    prefetcher.schedule([job("new")])  # the visitor moved on before the server was idle
    assert prefetcher.pending() == ["new"]
    prefetcher.activity_finished()
    assert prefetcher.wait_until_idle(10)
    assert ran == ["new"]


def test_a_failing_job_is_logged_and_the_worker_goes_on(caplog):
    prefetcher = IdlePrefetcher(idle_seconds=0.0)
    ran, job = recorder()

    def broken():
        raise RuntimeError("no such file")

    with caplog.at_level("WARNING", logger="tiebreak.app"):
        prefetcher.schedule([("broken", broken), job("after")])
        assert prefetcher.wait_until_idle(10)
    assert ran == ["after"] and prefetcher.failures == 1
    assert any("prefetch of 'broken' failed" in r.getMessage() for r in caplog.records)


def test_a_visitor_asking_for_a_running_prefetch_waits_for_it_instead_of_computing_again():
    """The jobs are st.cache_data calls: a second caller of the same key takes Streamlit's per-key compute
    lock and reads the first caller's result."""
    import streamlit as st

    calls = []
    gate = threading.Event()

    @st.cache_data(show_spinner=False)
    def slow_square(x: int) -> int:
        calls.append(x)
        gate.wait(10)
        return x * x

    prefetcher = IdlePrefetcher(idle_seconds=0.0)
    prefetcher.schedule([("sq", lambda: slow_square(7))])
    while not calls:
        time.sleep(0.01)
    threading.Timer(0.2, gate.set).start()
    assert slow_square(7) == 49  # blocks until the prefetch has finished
    assert calls == [7]
    assert prefetcher.wait_until_idle(10)


def test_the_middleware_counts_http_requests_but_not_websockets():
    from ui import prefetch

    seen = []

    async def inner(scope, receive, send):
        seen.append((scope["type"], prefetch.PREFETCHER._busy))

    middleware = ActivityMiddleware(inner)
    before = prefetch.PREFETCHER._busy
    asyncio.run(middleware({"type": "http"}, None, None))
    asyncio.run(middleware({"type": "websocket"}, None, None))
    assert seen == [("http", before + 1), ("websocket", before)]
    assert prefetch.PREFETCHER._busy == before


def test_the_app_registers_the_middleware():
    import app

    assert any(m.cls is ActivityMiddleware for m in app.app._user_middleware)


# -- the dashboard ------------------------------------------------------------------------------------
@pytest.fixture
def prefetching(monkeypatch):
    """Prefetch on (tests/pages turns it off), a fresh query cache, and every Store.leaderboard call recorded."""
    import streamlit as st

    from evalcore.store import Store
    from ui import prefetch

    monkeypatch.setenv(prefetch.ENV_VAR, "on")
    prefetch.PREFETCHER.wait_until_idle(60)
    prefetch.PREFETCHER.forget()
    st.cache_data.clear()
    computed = []
    original = Store.leaderboard

    def recording(self, cond, *args, **kwargs):
        computed.append(cond)
        return original(self, cond, *args, **kwargs)

    monkeypatch.setattr(Store, "leaderboard", recording)
    yield computed
    prefetch.PREFETCHER.wait_until_idle(60)
    prefetch.PREFETCHER.forget()
    st.cache_data.clear()


def open_leaderboard(monkeypatch, data_dir: Path, params: dict):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("TIEBREAK_DATA", str(data_dir))
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(params)
    return at.run()


def test_the_leaderboard_prefetches_its_neighbours_and_the_next_change_finds_them(
        prefetching, monkeypatch, synthetic_dir):
    from evalcore.store import Condition, Store
    from ui import prefetch

    at = open_leaderboard(monkeypatch, synthetic_dir, {"instr": "without"})
    assert not at.exception
    here = Condition("rar-b", "ndcg@10", "full", False, "fp32")
    assert prefetching == [here]
    assert prefetch.PREFETCHER.wait_until_idle(60)
    neighbours = [Condition("rar-b", "ndcg@10", "full", False, p) for p in ("bf16", "bf16+hps")]
    assert prefetching[1:] == neighbours, "every other precision, in the sidebar's order"

    computed = len(prefetching)
    at = open_leaderboard(monkeypatch, synthetic_dir, {"instr": "without", "prec": "bf16"})  # a new visitor
    assert not at.exception
    assert len(prefetching) == computed, "the change was served from the prefetched result"
    board = Store(synthetic_dir).leaderboard(neighbours[0], bootstrap=1000)
    shown = at.dataframe[0].value
    assert shown["system"].tolist() == board.ranked["system"].tolist()
    assert shown["G_lo"].round(12).tolist() == board.ranked["G_lo"].round(12).tolist()


def test_prefetch_is_off_when_the_env_var_says_so(prefetching, monkeypatch, synthetic_dir):
    from ui import prefetch

    monkeypatch.setenv(prefetch.ENV_VAR, "off")
    at = open_leaderboard(monkeypatch, synthetic_dir, {"instr": "without"})
    assert not at.exception
    assert prefetch.PREFETCHER.wait_until_idle(60)
    assert len(prefetching) == 1


@pytest.mark.parametrize("params, precisions", [
    ({"instr": "without"}, ["bf16", "bf16+hps"]),
    ({"instr": "with", "prec": "bf16"}, ["fp32", "int8"]),  # with instructions: int8, no bf16+hps
    ({"instr": "any", "prec": "int8"}, ["bf16", "bf16+hps", "fp32"]),
    ({"setting": "mcr", "metric": "p@1", "instr": "without"}, ["bf16", "bf16+hps"]),
    ({"instr": "without", "ties": "docid-asc"}, ["bf16", "bf16+hps"]),  # only fp32 has docid-asc
])
def test_each_neighbour_is_exactly_the_view_the_sidebar_gives_for_that_change(monkeypatch, uneven_dir, params,
                                                                              precisions):
    """A neighbour that differs from what the sidebar would select is a wasted prefetch: pick each other
    precision in a running session and compare the condition the sidebar resolves."""
    from ui import components

    at = open_leaderboard(monkeypatch, uneven_dir, params)
    view = at.session_state["_view"]
    assert view.cond.precision == params.get("prec", "fp32")
    assert view.cond.tie_policy == params.get("ties", "docid-desc")
    neighbours = components.neighbour_conditions(view)
    assert [cond.precision for cond in neighbours] == precisions
    for cond in neighbours:
        session = open_leaderboard(monkeypatch, uneven_dir, params)
        session.sidebar.selectbox(key="prec").set_value(cond.precision).run()
        assert not session.exception
        assert session.session_state["_view"].cond == cond
