"""A deep link asks no wrong address: every page opened at its own URL in a fresh browser (at the root and under
a path prefix) gets no 404 and no other error response — before ui/page_base.py the frontend asked
``/<page>/_stcore/health`` and ``/<page>/_stcore/host-config`` first (streamlit/streamlit#7074) — and moving
between pages afterwards keeps the addresses right."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from test_browser import (CHROMIUM, CHROMIUM_ARGS, ROOT, assert_no_exception, free_port,  # noqa: F401
                          playwright_browser, stop_server, wait_idle)

sys.path.insert(0, str(ROOT / "tests" / "pages"))
import synthetic_data  # noqa: E402

from ui.navigation import GLOSSARY, PAGES  # noqa: E402

pytestmark = pytest.mark.browser
SLUGS = {("" if i == 0 else spec.url_path): spec.title for i, spec in enumerate(PAGES)} | {GLOSSARY: "Glossary"}


def _start(data_dir: Path, log: Path, prefix: str = ""):
    port = free_port()
    env = {**os.environ, "STREAMLIT_SERVER_BASE_URL_PATH": prefix}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
         "--server.headless", "true", "--server.address", "127.0.0.1", "--", "--data", str(data_dir)],
        cwd=ROOT, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}" + (f"/{prefix}" if prefix else "")
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"streamlit exited; see {log}"
        try:
            with urllib.request.urlopen(base + "/_stcore/health", timeout=1):
                return proc, base
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"no health answer in 90 s; see {log}")


@pytest.fixture(scope="module", params=["", "tiebreak"], ids=["root", "prefix"])
def server(request, tmp_path_factory):
    data_dir = synthetic_data.write_small(tmp_path_factory.mktemp("deep-links-data"))
    proc, base = _start(data_dir, tmp_path_factory.mktemp("deep-links-log") / "streamlit.log", request.param)
    try:
        yield base
    finally:
        stop_server(proc)


def _open_counting_errors(browser, url: str):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(90_000)
    errors: list[str] = []
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.goto(url)
    wait_idle(page)
    return context, page, errors


@pytest.mark.parametrize("slug", list(SLUGS))
def test_a_deep_link_gets_no_error_response(server, playwright_browser, slug):
    context, page, errors = _open_counting_errors(playwright_browser, f"{server}/{slug}?bench=rar-b")
    try:
        assert_no_exception(page)
        assert page.locator("h1").first.inner_text().strip() == SLUGS[slug]
        assert errors == [], errors
    finally:
        context.close()


def test_moving_between_pages_after_a_deep_link_keeps_the_addresses(server, playwright_browser):
    context, page, errors = _open_counting_errors(playwright_browser, f"{server}/rank-flips?bench=rar-b")
    try:
        page.get_by_test_id("stSidebarNav").get_by_role("link").filter(has_text="Compare").click()
        page.wait_for_url(re.compile(re.escape(f"{server}/compare") + r"\?"), timeout=30_000)
        wait_idle(page)
        assert page.locator("h1").first.inner_text().strip() == "Compare"
        page.get_by_test_id("stSidebarNav").get_by_role("link").filter(has_text="Leaderboard").click()
        page.wait_for_url(re.compile(re.escape(f"{server}/") + r"\?"), timeout=30_000)
        wait_idle(page)
        assert page.locator("h1").first.inner_text().strip() == "Leaderboard"
        assert errors == [], errors
    finally:
        context.close()
