"""The warm start (ui/warm_start.py): ``streamlit run app.py`` serves the st.App in app.py, whose lifespan
prepares the default view's data once as soon as the server is up, so the first visitor finds it in memory;
the server log says whether it worked."""
from __future__ import annotations

import asyncio
import gc
import io
import logging
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from evalcore.store import Store
from ui import warm_start
from ui.navigation import MAIN_SCRIPT

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import synthetic_data  # noqa: E402  (tests/ui/conftest.py puts tests/pages on the path)

READY_LINE = "warm start: default view ready"


def _drew_the_leaderboard(at) -> bool:
    """The first visit drew the Leaderboard: its ranked table with rows, and both lenses' headlines."""
    from ui import board

    tables = [d.value for d in at.dataframe if {"rank", "system"} <= set(d.value.columns)]
    text = " ".join(m.value for m in at.markdown)
    return bool(tables) and len(tables[0]) > 0 and all(f"**{name}:**" in text for name in board.LENSES.values())


@pytest.fixture
def log_lines():
    """The lines the dashboard's logger writes while the test runs."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("tiebreak.app")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield lambda: stream.getvalue()
    logger.removeHandler(handler)


def test_streamlit_run_serves_the_main_script_with_no_pages_folder_beside_it():
    """app.py's st.App runs ui/entry/dashboard.py: a pages/ folder beside the running script would make
    Streamlit start as a legacy multipage app (deep links on a fresh server: "Page not found")."""
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(APP)
    assert found.is_asgi_app and found.import_string == "app:app"
    script = subprocess.run([sys.executable, "-c", "import app; print(app.app.script_path)"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.strip()
    assert Path(script) == MAIN_SCRIPT
    assert not (MAIN_SCRIPT.parent / "pages").exists()
    assert sorted(p.name for p in MAIN_SCRIPT.parent.iterdir() if p.suffix == ".py") == [MAIN_SCRIPT.name], \
        "the main script's folder is first on sys.path during every run: nothing else belongs there"


def test_the_warm_start_asks_the_question_of_a_first_visit(synthetic_dir, fresh_answers, monkeypatch):
    """After the warm start, the first visitor's Leaderboard is drawn without asking the store anything."""
    from streamlit.testing.v1 import AppTest

    assert warm_start.prepare_default_view(synthetic_dir).startswith("Leaderboard of rar-b")

    def asked(*args, **kwargs):
        raise AssertionError("the store was asked: the warm start prepared another question")

    for name in ("leaderboard", "facets", "task_table"):
        monkeypatch.setattr(Store, name, asked)
    monkeypatch.setenv("TIEBREAK_DATA", str(synthetic_dir))
    at = AppTest.from_file(str(MAIN_SCRIPT), default_timeout=120).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert _drew_the_leaderboard(at)


def test_the_warm_start_remembers_the_pointer_line_the_first_visit_draws(synthetic_dir, fresh_answers, monkeypatch):
    """The Leaderboard's line pointing to per-query results is remembered per process: the warm start works it
    out, so the first visitor's run finds it (a miss there cost that run ~0.05 s)."""
    from streamlit.testing.v1 import AppTest

    from ui import board

    board._remembered_pointer.cache_clear()
    warm_start.prepare_default_view(synthetic_dir)
    made = board._remembered_pointer.cache_info()
    assert made.currsize == 1
    monkeypatch.setenv("TIEBREAK_DATA", str(synthetic_dir))
    at = AppTest.from_file(str(MAIN_SCRIPT), default_timeout=120).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    after = board._remembered_pointer.cache_info()
    assert after.hits > made.hits and after.misses == made.misses, (made, after)


def test_a_first_script_run_loads_no_emoji_catalogue(synthetic_dir):
    """The favicon is an SVG file: an emoji favicon made Streamlit import its emoji catalogue and compile its
    pattern in the first visitor's script run (~0.1 s, on a server still preparing the default view). A fresh
    process runs the dashboard's script once and says whether the catalogue was loaded."""
    code = ("import sys; from streamlit.testing.v1 import AppTest; from ui.navigation import MAIN_SCRIPT; "
            "at = AppTest.from_file(str(MAIN_SCRIPT), default_timeout=120).run(); "
            "print(any({'rank', 'system'} <= set(d.value.columns) for d in at.dataframe), not at.exception, "
            "'streamlit.emojis' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TIEBREAK_DATA=str(synthetic_dir)))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-3:] == ["True", "True", "False"], (done.stdout, done.stderr[-2000:])


def test_the_shipped_landing_reads_no_precision_kinds(fresh_answers, monkeypatch):
    """The shipped first visit is a board of published scores, which carry no precision kind: neither the warm
    start nor the first visitor's Leaderboard scans the per-query files for kinds (~0.1 s of a first visit)."""
    from streamlit.testing.v1 import AppTest

    def asked(*args, **kwargs):
        raise AssertionError("precision kinds were read for a board of published scores")

    monkeypatch.setattr(Store, "precision_kinds", asked)
    assert "rar-b · full · ndcg@10" in warm_start.prepare_default_view(ROOT / "data")
    monkeypatch.setenv("TIEBREAK_DATA", str(ROOT / "data"))
    at = AppTest.from_file(str(MAIN_SCRIPT), default_timeout=120).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert _drew_the_leaderboard(at)


def test_a_failing_default_view_is_logged_as_failed(synthetic_dir, fresh_answers, monkeypatch, log_lines):
    def broken(*args, **kwargs):
        raise RuntimeError("the leaderboard broke")

    monkeypatch.setattr(Store, "leaderboard", broken)
    assert warm_start.warm_default_view(synthetic_dir) is False
    assert "warm start FAILED" in log_lines() and "the leaderboard broke" in log_lines()
    assert READY_LINE not in log_lines()


def test_nothing_to_prepare_is_said(tmp_path, log_lines):
    assert warm_start.warm_default_view(tmp_path / "missing") is True
    assert "no data folder" in log_lines()
    assert warm_start.prepare_default_view(tmp_path).startswith("nothing: no results")


def test_after_the_warm_start_long_lived_objects_leave_the_per_rerun_collection(synthetic_dir, fresh_answers):
    gc.unfreeze()
    survivor = {"made before the warm start ends": []}
    try:
        assert warm_start.warm_default_view(synthetic_dir) is True
        assert gc.get_freeze_count() > 0
        assert not any(obj is survivor for obj in gc.get_objects()), "still tracked by the collector"
        fresh = {"made after": []}
        assert any(obj is fresh for obj in gc.get_objects()), "later objects are still collected"
    finally:
        gc.unfreeze()


def test_lifespan_starts_the_warm_up_without_waiting(monkeypatch):
    started, release = threading.Event(), threading.Event()
    events = []

    def slow_warm_up():
        started.set()
        release.wait(30)
        events.append("warmed")

    monkeypatch.setattr(warm_start, "warm_default_view", slow_warm_up)

    async def serve_briefly():
        async with warm_start.lifespan(None):
            events.append("serving")  # reached at once: the warm-up does not hold the server back

    asyncio.run(asyncio.wait_for(serve_briefly(), timeout=30))
    assert started.wait(30) and events == ["serving"]
    release.set()


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


def _wait_for(predicate, proc, log_path: Path, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            raise AssertionError(f"server exited ({proc.returncode}) before {what}:\n{log_path.read_text()}")
        time.sleep(0.1)
    raise AssertionError(f"no {what} within {timeout} s:\n{log_path.read_text()}")


@pytest.mark.slow
def test_the_server_prepares_the_default_view_before_any_browser_connects(tmp_path):
    """No browser ever connects: the log line naming the Leaderboard it prepared can only come from the warm
    start."""
    from test_browser import free_port

    data_dir = synthetic_data.write_small(tmp_path / "data")
    port = free_port()
    env = dict(os.environ)
    command = [sys.executable, "-m", "streamlit", "run", str(APP), "--server.port", str(port),
               "--server.address", "127.0.0.1", "--server.headless", "true", "--", "--data", str(data_dir)]
    log_path = tmp_path / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_for(lambda: _healthy(port), proc, log_path, "health")
        _wait_for(lambda: READY_LINE in log_path.read_text(), proc, log_path, "warm start")
        line = next(text for text in log_path.read_text().splitlines() if READY_LINE in text)
        assert "Leaderboard of rar-b" in line, line
        _wait_for(lambda: "long-lived objects exempted" in log_path.read_text(), proc, log_path, "gc.freeze")
        assert "Traceback" not in log_path.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_warm_start_imports_what_plotly_looks_up_before_any_session_draws():
    """A fresh server process drew two sessions' first figures at once and one failed: plotly's JSON encoder
    found ``PIL.Image`` half-imported by another thread. The warm start imports it (and orjson) first, in a fresh
    process here, so no script thread ever imports it while another reads it."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys; from ui import warm_start; warm_start.import_late_modules(); "
            "image = sys.modules.get('PIL.Image'); print(image is not None and hasattr(image, 'Image'))")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True", (done.stdout, done.stderr)
