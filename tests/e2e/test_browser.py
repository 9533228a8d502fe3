"""End to end in real Chromium: ``streamlit run`` on a free port, every page opens, a changed control lands in
the URL, and that URL opened in a fresh browser context shows the same view. Screenshots of every page go
to ``test-artifacts/``.

Needs Debian's ``chromium`` (``apt-get install chromium``). Without it the tests skip locally and fail when
``CI=true``.
"""
from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("TIEBREAK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
sys.path.insert(0, str(ROOT / "tests" / "pages"))

import synthetic_data  # noqa: E402
from needs import missing  # noqa: E402

from ui.navigation import PAGES as PAGE_TABLE  # noqa: E402

PAGES = {("" if i == 0 else spec.url_path): spec.title for i, spec in enumerate(PAGE_TABLE)}  # url path -> title


def _unavailable(reason: str):
    missing(f"browser tests cannot run: {reason}")


@pytest.fixture(scope="module")
def playwright_browser():
    if not Path(CHROMIUM).exists():
        _unavailable(f"{CHROMIUM} not found (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(data_dir: Path, log_path: Path, port: int | None = None,
                 app: Path = ROOT / "app.py", env: dict | None = None,
                 cwd: Path = ROOT) -> tuple[subprocess.Popen, str]:
    """``streamlit run app.py`` (or another ``app``) from ``cwd`` on ``port`` (default: a free one); returns
    once ``/_stcore/health`` answers."""
    port = port or free_port()
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(app), "--server.port", str(port),
         "--server.headless", "true", "--server.address", "127.0.0.1", "--", "--data", str(data_dir)],
        cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}; see {log_path}")
        try:
            with urllib.request.urlopen(base + "/_stcore/health", timeout=1) as response:
                if response.status == 200:
                    return proc, base
        except OSError:
            time.sleep(0.02)
    proc.kill()
    raise RuntimeError(f"streamlit did not become healthy in 60 s; see {log_path}")


def stop_server(proc: subprocess.Popen, timeout: float = 20) -> None:
    """Stop a server :func:`start_server` started: terminate, and kill it if it has not ended in ``timeout`` s."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


@contextlib.contextmanager
def served(data_dir: Path, log_path: Path, **options):
    """A dashboard server on ``data_dir`` for the ``with`` block (its base URL), stopped after it; ``options``
    as :func:`start_server`'s. Every browser test's server fixture is this, around a ``yield``."""
    proc, base = start_server(data_dir, log_path, **options)
    try:
        yield base
    finally:
        stop_server(proc)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data_dir = synthetic_data.write_small(tmp_path_factory.mktemp("e2e-data"))
    with served(data_dir, tmp_path_factory.mktemp("e2e-log") / "streamlit.log") as base:
        yield base, data_dir


def share_link(page) -> str:
    """Open the sidebar's "Share this view" popover and read the link in it."""
    sidebar = page.get_by_test_id("stSidebar")
    button = sidebar.get_by_role("button", name="Share this view")
    button.scroll_into_view_if_needed()
    button.click()
    code = page.get_by_test_id("stPopoverBody").get_by_test_id("stCode").first  # then the API URL (ui/api.py)
    code.wait_for(timeout=30_000)
    text = code.inner_text()
    page.keyboard.press("Escape")
    return text


def wait_idle(page, timeout: float = 60_000) -> None:
    page.wait_for_selector(IDLE, timeout=timeout)
    page.wait_for_timeout(300)  # let the last deltas paint
    page.wait_for_selector(IDLE, timeout=timeout)


def open_view(context, url: str):
    page = context.new_page()
    page.set_default_timeout(90_000)  # shared CI machines: generous, the test checks behaviour not speed
    page.goto(url)
    wait_idle(page)
    return page


def screenshot(page, name: str) -> Path:
    """A full-height screenshot (Streamlit scrolls inside its main block, so grow the viewport first)."""
    ARTIFACTS.mkdir(exist_ok=True)
    height = page.evaluate("() => Math.max(...[...document.querySelectorAll("
                           "'[data-testid=stMain], [data-testid=stMainBlockContainer], [data-testid=stSidebarContent]'"
                           ")].map(e => e.scrollHeight))")
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": min(int(height) + 80, 8000)})
    page.wait_for_timeout(500)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)
    return path


def metric(page, label: str) -> str:
    box = page.get_by_test_id("stMetric").filter(has=page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True))
    return box.get_by_test_id("stMetricValue").inner_text().strip()


def headlines(page) -> str:
    """The Leaderboard's headlines (one per lens: "N of M adjacent pairs differ · K could be #1"), as shown."""
    blocks = page.get_by_test_id("stMarkdownContainer").filter(has_text="adjacent pairs differ")
    return " | ".join(text.strip() for text in blocks.all_inner_texts())


def reading(page, number) -> str:
    """A number a view shows: a metric's value by its label, or what ``number(page)`` reads."""
    return number(page) if callable(number) else metric(page, number)


def combobox(page, label: str):
    """A selectbox's input (its accessible name is the widget label; its value is the selected option)."""
    return page.get_by_role("combobox", name=label, exact=True)


def selected(page, label: str) -> str:
    return combobox(page, label).input_value()


def choose(page, label: str, option: str) -> None:
    """Pick an option as a keyboard user does: open, type to filter, Enter. (Clicking the option
    element flaked: the open list can be re-mounted while a chart below it re-renders.)"""
    box = combobox(page, label)
    box.scroll_into_view_if_needed()
    box.click()
    box.fill(option)
    page.keyboard.press("Enter")
    wait_idle(page)
    value = box.input_value()
    # A precision's label may carry its kind on real runs ("bf16 (inference / scores stored)").
    if value != option and not value.startswith(f"{option} ("):  # fall back to a click if typing did not select
        box.click()
        page.get_by_role("option", name=re.compile(rf"^{re.escape(option)}( \(.*\))?$")).first.click()


def assert_no_exception(page) -> None:
    assert page.get_by_test_id("stException").count() == 0
    assert "Traceback" not in page.inner_text("body")
    assert page.get_by_role("dialog").count() == 0, page.get_by_role("dialog").all_inner_texts()


@pytest.fixture
def context(playwright_browser):
    ctx = playwright_browser.new_context(viewport={"width": 1400, "height": 1000})
    yield ctx
    ctx.close()


@pytest.mark.parametrize("slug", list(PAGES))
def test_every_page_opens_and_is_screenshotted(server, context, slug):
    base, _ = server
    page = open_view(context, f"{base}/{slug}")
    assert_no_exception(page)
    assert page.locator("h1").first.inner_text().strip() == PAGES[slug]
    assert "bench=rar-b" in page.url, "the view state is in the URL from the first render"
    path = screenshot(page, f"e2e_{slug or 'leaderboard'}")
    assert path.stat().st_size > 10_000


# (url path, change the view, label of a number that must survive the round trip, URL fragment expected)
def _change_precision(page):
    choose(page, "Precision", "bf16")


def _change_tie_task(page):
    choose(page, "Task", "PIQA")


def _click_preset(page):
    page.get_by_role("button", name="bf16 → bf16+hps").click()


def _change_mcr_task(page):
    choose(page, "Task", "SIQA")


def _change_compare_task(page):
    choose(page, "Task", "PIQA")


ROUND_TRIPS = [
    ("", _change_precision, headlines, "prec=bf16&", [("Precision", "bf16")]),
    ("ties-and-precision", _change_tie_task, "Queries per system × precision", "tp_task=PIQA", [("Task", "PIQA")]),
    ("rank-flips", _click_preset, "Kendall τ-b", "flip_b=bf16%2Bhps",
     [("Condition A: precision", "bf16"), ("Condition B: precision", "bf16+hps")]),
    ("instructions", _change_precision, "Hurts most", "prec=bf16&", [("Precision", "bf16")]),
    ("mcr-vs-full", _change_mcr_task, "System × task points", "mcr_task=SIQA", [("Task", "SIQA")]),
    ("compare", _change_compare_task, "G (oblivious) · e5-small", "task=PIQA", [("Task", "PIQA")]),
]


@pytest.mark.parametrize("slug, change, number, fragment, controls", ROUND_TRIPS, ids=[r[0] or "board" for r in ROUND_TRIPS])
def test_changed_view_survives_a_copied_url(server, playwright_browser, context, slug, change, number, fragment,
                                            controls):
    base, _ = server
    page = open_view(context, f"{base}/{slug}")
    chosen = change(page)
    if chosen is not None:  # the change picked among the options on screen
        fragment = fragment.format(chosen=urllib.parse.quote_plus(chosen))
        controls = [(label, value.format(chosen=chosen)) for label, value in controls]
    page.wait_for_url(re.compile(re.escape(fragment)), timeout=30_000)
    wait_idle(page)
    assert_no_exception(page)
    url = page.url
    shown = reading(page, number)
    assert shown, "the view shows the number"
    share = share_link(page)
    assert fragment in "".join(share.split()), "the share box holds the same URL"

    fresh_context = playwright_browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        fresh = open_view(fresh_context, url)
        assert_no_exception(fresh)
        assert fresh.locator("h1").first.inner_text().strip() == PAGES[slug]
        for label, value in controls:
            assert selected(fresh, label) == value, label
        assert reading(fresh, number) == shown
        assert fresh.url == url, "reopening changes nothing"
        assert fresh.get_by_test_id("stAlertContentWarning").filter(has_text="URL").count() == 0
    finally:
        fresh_context.close()


def test_shared_link_to_a_page_works_on_a_fresh_server(playwright_browser, tmp_path):
    """The first session of a new server opens a deep link (no 'Page not found', no fallback page)."""
    data_dir = synthetic_data.write_small(tmp_path / "data")
    with served(data_dir, tmp_path / "streamlit.log") as base:
        ctx = playwright_browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            page = open_view(ctx, f"{base}/rank-flips?bench=rar-b&flip_a=bf16&flip_b=bf16%2Bhps")
            assert_no_exception(page)
            assert page.locator("h1").first.inner_text().strip() == "Rank flips"
            assert selected(page, "Condition A: precision") == "bf16"
        finally:
            ctx.close()


def test_numbers_on_the_page_equal_the_store(server, context):
    from evalcore.store import Condition, Store

    base, data_dir = server
    page = open_view(context, f"{base}/?bench=rar-b&metric=ndcg%4010&instr=without&prec=bf16")
    board = Store(data_dir).leaderboard(Condition("rar-b", "ndcg@10", "full", False, "bf16"))
    assert page.get_by_text(f"{len(board.ranked)} systems ranked").count() == 1
    shown = headlines(page)
    for lens, label in (("queries", "On these tasks"), ("tasks", "On new tasks like these")):
        summary = board.lens(lens)
        first = int(board.ranked[f"{lens}_first"].sum())
        words = f"{label}: {summary.n_differ} of {summary.n_pairs} adjacent pairs differ · {first} could be #1"
        assert words in shown, (words, shown)

    page = open_view(context, f"{base}/rank-flips?bench=rar-b&instr=with&flip_a=fp32&flip_b=bf16")
    cond = Condition("rar-b", "ndcg@10", "full", True, "fp32")
    flips = Store(data_dir).rank_flips(cond, replace(cond, precision="bf16"))
    assert metric(page, "Kendall τ-b") == f"{flips.kendall_tau_b:.3f}"
    assert metric(page, "Flipped pairs") == str(len(flips.flipped_pairs))


def _options(page):
    """Open the Leaderboard's Options popover; its body."""
    page.get_by_role("button", name="Options").click()
    body = page.get_by_test_id("stPopoverBody")
    body.wait_for()
    return body


def test_the_lens_rank_kind_and_level_survive_a_copied_url(server, playwright_browser, context):
    """The lens control, the rank sets' kind and the level are in the URL: a copied link reopens them, with the
    same headlines."""
    base, _ = server
    page = open_view(context, f"{base}/?bench=rar-b&instr=without")
    page.get_by_test_id("stRadio").filter(has_text="Ranks and intervals").get_by_text(
        "On new tasks like these", exact=True).click()
    page.wait_for_url(re.compile(r"lens=tasks"), timeout=30_000)
    wait_idle(page)
    body = _options(page)
    body.get_by_text("All rows at once (simultaneous)", exact=True).click()
    page.wait_for_url(re.compile(r"ranks=simultaneous"), timeout=30_000)
    wait_idle(page)
    if not page.get_by_test_id("stPopoverBody").is_visible():
        _options(page)
    choose(page, "Confidence level", "99%")
    page.wait_for_url(re.compile(r"level=0\.99"), timeout=30_000)
    page.keyboard.press("Escape")
    wait_idle(page)
    assert_no_exception(page)
    url, shown = page.url, headlines(page)
    assert "On new tasks like these:" in shown.split(" | ")[0], "the chosen lens' headline first"
    share = "".join(share_link(page).split())
    for fragment in ("lens=tasks", "ranks=simultaneous", "level=0.99"):
        assert fragment in url and fragment in share, fragment
    fresh_context = playwright_browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        fresh = open_view(fresh_context, url)
        assert_no_exception(fresh)
        assert fresh.get_by_role("radio", name="On new tasks like these").is_checked()
        assert headlines(fresh) == shown
        _options(fresh)
        assert fresh.get_by_role("radio", name="All rows at once (simultaneous)").is_checked()
        assert selected(fresh, "Confidence level") == "99%"
        assert fresh.url == url, "reopening changes nothing"
    finally:
        fresh_context.close()


def test_hostile_url_is_dropped_with_a_notice(server, context):
    base, _ = server
    page = open_view(context, f"{base}/?bench=%3Cscript%3Ealert(1)%3C/script%3E&prec=x%27%3B%20DROP%20TABLE%20t"
                              f"&evil=1&bench2={'y' * 5000}")
    assert_no_exception(page)
    notices = page.get_by_test_id("stAlertContentWarning").all_inner_texts()
    assert any("bench" in n for n in notices) and any("unknown URL parameter" in n for n in notices)
    assert "script" not in page.url and "DROP" not in page.url and "evil" not in page.url
    assert selected(page, "Benchmark") == "RAR-b"  # the option's label (the URL keeps rar-b)
    screenshot(page, "e2e_hostile_url")


def test_downloads_hold_every_row_of_the_board(server, context):
    """CSV and LaTeX are written on click (deferred data): the CSV holds the store's board, every system (ranked
    ones first, then those not ranked), ranks printed as integers, both lenses' intervals; the LaTeX table every
    system too."""
    import csv
    import io

    import pandas as pd

    from evalcore.store import Condition, Store

    base, data_dir = server
    page = open_view(context, f"{base}/?bench=rar-b&metric=ndcg%4010&instr=without&prec=bf16")
    board = Store(data_dir).leaderboard(Condition("rar-b", "ndcg@10", "full", False, "bf16"))  # as the page asks
    expected = board.rows()
    files = {}
    for label in ("Download CSV", "Download LaTeX"):
        button = page.get_by_role("button", name=label)
        button.scroll_into_view_if_needed()
        with page.expect_download(timeout=30_000) as download:
            button.click()
        files[label] = Path(download.value.path()).read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(files["Download CSV"])))
    assert [row["system"] for row in rows] == expected["system"].tolist()
    assert len(board.incomplete) and [row["complete"] for row in rows][-1] == "False"
    for row, (_, want) in zip(rows, expected.iterrows()):
        if want["complete"]:
            assert float(row["G"]) == pytest.approx(want["G"], rel=1e-12, abs=1e-15)
            for column in ("rank", "queries_rank_lo", "queries_rank_hi", "queries_tier", "tasks_rank_lo",
                           "tasks_rank_hi", "tasks_tier"):
                assert row[column] == str(int(want[column])), (column, "an integer, not 1.0")
            for column in ("queries_lo", "queries_hi", "tasks_lo", "tasks_hi"):
                if pd.notna(want[column]):
                    assert float(row[column]) == pytest.approx(want[column], rel=1e-12, abs=1e-15), column
            assert (row["level"], row["ranks"]) == ("0.95", "marginal"), "each row names its level and kind"
        for task in board.tasks:
            if row[task]:
                assert float(row[task]) == pytest.approx(want[task], rel=1e-12, abs=1e-15)
    latex = files["Download LaTeX"]
    assert latex.lstrip().startswith("\\begin{table}") and "\\toprule" in latex
    assert all(name.replace("_", "\\_") in latex for name in expected["system"])
    assert_no_exception(page)


def test_clicking_through_the_sidebar_keeps_the_view(server, context):
    """A visitor who picked a precision and walks through every page from the sidebar keeps it on each page
    (the sidebar's widgets are re-created by each page). A view that compares precisions (or instruction states)
    shows that control as text and leaves it out of its URL; the next view shows the visitor's choice again."""
    base, _ = server
    page = open_view(context, f"{base}/?bench=rar-b&instr=with&prec=bf16")
    compared = {"Ties & precision": "prec", "Rank flips": "prec", "Instructions": "instr"}
    for slug, title in list(PAGES.items())[1:] + [("", PAGES[""])]:
        page.get_by_test_id("stSidebarNav").get_by_role("link").filter(has_text=title).click()
        page.wait_for_url(re.compile(rf"/{re.escape(slug)}\?"), timeout=30_000)
        wait_idle(page)
        assert_no_exception(page)
        assert page.locator("h1").first.inner_text().strip() == title
        if compared.get(title) != "prec":
            assert selected(page, "Precision") == "bf16", title
        for key, value in (("prec", "bf16"), ("instr", "with")):
            assert (f"{key}={value}" in page.url) == (compared.get(title) != key), (title, page.url)
