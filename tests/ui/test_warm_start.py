"""The warm start (ui/warm_start.py): ``streamlit run app.py`` serves the st.App in app.py, whose lifespan
draws the default view once as soon as the server is up, so the first visitor finds the store and the
Leaderboard's queries in memory."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
sys.path.insert(0, str(ROOT / "tests" / "pages"))
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import synthetic_data  # noqa: E402

WARM_LINE = "warm start: default view drawn"


def test_streamlit_run_finds_the_st_app_in_app_py():
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(APP)
    assert found.is_asgi_app and found.import_string == "app:app"


def test_a_failing_warm_start_is_reported_not_raised(monkeypatch):
    from streamlit import runtime

    from ui import warm_start

    def no_runtime():
        raise RuntimeError("no runtime here")

    monkeypatch.setattr(runtime, "get_instance", no_runtime)
    ok, message = asyncio.run(warm_start.warm_default_view())
    assert not ok and "no runtime here" in message


def test_after_the_warm_run_long_lived_objects_leave_the_per_rerun_collection(monkeypatch):
    import gc

    from streamlit import runtime

    from ui import warm_start

    class Runtime:
        async def does_script_run_without_error(self):
            return True, "ok"

    monkeypatch.setattr(runtime, "get_instance", lambda: Runtime())
    gc.unfreeze()
    survivor = {"made before the warm run ends": []}
    try:
        assert asyncio.run(warm_start.warm_default_view()) == (True, "ok")
        assert gc.get_freeze_count() > 0
        assert not any(obj is survivor for obj in gc.get_objects()), "still tracked by the collector"
        fresh = {"made after": []}
        assert any(obj is fresh for obj in gc.get_objects()), "later objects are still collected"
    finally:
        gc.unfreeze()


def test_the_bare_mode_check_is_skipped_in_the_server(monkeypatch):
    """Streamlit's first element of a process asks env_util.is_repl() (an inspect.stack() walk) unless its
    'hint shown' flag is set; the warm start sets it. If a Streamlit upgrade renames the flag, this fails."""
    from streamlit import delta_generator, env_util

    from ui import warm_start

    def walked(*args):
        raise AssertionError("is_repl() ran")

    monkeypatch.setattr(env_util, "is_repl", walked)
    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", False)
    with pytest.raises(AssertionError, match="is_repl"):
        delta_generator._maybe_print_use_warning()  # the flag is what gates the walk
    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", False)
    assert warm_start.skip_bare_mode_check() is True
    delta_generator._maybe_print_use_warning()  # no walk


def test_lifespan_starts_the_warm_up_without_waiting_and_cancels_it_on_shutdown(monkeypatch):
    from ui import warm_start

    events = []

    async def slow_warm_up():
        events.append("started")
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            events.append("cancelled")
            raise

    monkeypatch.setattr(warm_start, "warm_default_view", slow_warm_up)

    async def serve_briefly():
        async with warm_start.lifespan(None):
            events.append("serving")  # reached at once: the warm-up does not hold the server back
            await asyncio.sleep(0.05)
        await asyncio.sleep(0)

    asyncio.run(asyncio.wait_for(serve_briefly(), timeout=30))
    assert events == ["serving", "started", "cancelled"]


def _serve(command: list[str], env: dict, log_path: Path) -> subprocess.Popen:
    with open(log_path, "w") as log:
        return subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)


def _wait_for(predicate, proc, log_path: Path, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            raise AssertionError(f"server exited ({proc.returncode}) before {what}:\n{log_path.read_text()}")
        time.sleep(0.1)
    raise AssertionError(f"no {what} within {timeout} s:\n{log_path.read_text()}")


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.mark.slow
def test_the_server_draws_the_default_view_before_any_browser_connects(tmp_path):
    """No browser ever connects: the store's on-disk sums cache (written when the store opens the data) and
    the log line can only come from the warm start."""
    from test_browser import free_port

    data_dir = synthetic_data.write_small(tmp_path / "data")
    cache_dir = tmp_path / "sums-cache"
    port = free_port()
    env = dict(os.environ, TIEBREAK_CACHE=str(cache_dir))
    command = [sys.executable, "-m", "streamlit", "run", str(APP), "--server.port", str(port),
               "--server.address", "127.0.0.1", "--server.headless", "true", "--", "--data", str(data_dir)]
    log_path = tmp_path / "server.log"
    proc = _serve(command, env, log_path)
    try:
        _wait_for(lambda: _healthy(port), proc, log_path, "health")
        _wait_for(lambda: WARM_LINE in log_path.read_text(), proc, log_path, "warm start")
        line = next(l for l in log_path.read_text().splitlines() if WARM_LINE in l)
        assert line.endswith("(ok)"), line
        _wait_for(lambda: "long-lived objects exempted" in log_path.read_text(), proc, log_path, "gc.freeze")
        assert any(cache_dir.rglob("*")), "the store was not opened by the warm start"
        assert "Traceback" not in log_path.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
