"""A snapshot that travels: every view of the page table, in its default state on the shipped data,
downloaded with "Download this view (HTML)" and opened in a fresh browser context that blocks every request
not to a file:// or data: URL, shows what the live view shows — its title and section headings, the condition,
the headline numbers, every table (column labels, row count, and each cell the live grid rendered, to the
digits the snapshot prints), every chart's data (plotly traces; the forest chart's rows), its notices and the
share link —
and asks for nothing over the network, with no error in the console.

The live numbers are read from the page Streamlit drew (the grid's accessible table holds the raw values of
the rows it rendered; plotly's graph div holds the trace data), the snapshot's from the downloaded file: two
renderings of one run, compared cell by cell. Screenshots of each snapshot go to ``test-artifacts/``.
"""
from __future__ import annotations

import math
import re
import time
from pathlib import Path

import pytest
from test_browser import (ARTIFACTS, ROOT, assert_no_exception, open_view, playwright_browser,  # noqa: F401 (fixture)
                          served, share_link)

from ui.navigation import PAGES as PAGE_TABLE
from ui.recorder import BUTTON

pytestmark = pytest.mark.browser

VIEWS = ["" if i == 0 else spec.url_path for i, spec in enumerate(PAGE_TABLE)]
MAX_PLAIN_BYTES = 1_000_000  # a view without a plotly figure (the Leaderboard's chart is HTML/CSS)
MAX_PLOTLY_BYTES = 7_000_000  # plotly.js is ~4.8 MB, embedded once

# What a page shows, read the same way from the live view and from the snapshot (JS, run in the page).
READ_LIVE = """() => {
  const main = document.querySelector('[data-testid=stMain]');
  const text = (e) => e.innerText.trim();
  return {
    headings: [...main.querySelectorAll('[data-testid=stHeading]')].map(text),
    metrics: [...main.querySelectorAll('[data-testid=stMetric]')].map(m => [
      text(m.querySelector('[data-testid=stMetricLabel]')), text(m.querySelector('[data-testid=stMetricValue]'))]),
    conditions: [...main.querySelectorAll('[data-testid=stCaptionContainer]')].map(text)
      .filter(t => t.includes('ties: ') && t.includes(' · ')),
    tables: [...main.querySelectorAll('[data-testid=stDataFrame]')].map(d => {
      const t = d.querySelector('table[aria-rowcount]');
      if (!t) return null;
      return {rows: Number(t.getAttribute('aria-rowcount')) - 1,
              cells: [...t.querySelectorAll('tr[aria-rowindex]')].map(r => [Number(r.getAttribute('aria-rowindex')),
                       [...r.children].map(c => c.textContent)])};
    }),
    figures: [...main.querySelectorAll('.js-plotly-plot')].map(FIGURE),
    forest: [...main.querySelectorAll('.tb-forest .tb-row[title]')].map(r => r.getAttribute('title')),
    notes: [...main.querySelectorAll('[data-testid=stAlertContainer]')].map(text),
    lines: [...main.querySelectorAll('[data-testid=stMarkdownContainer]')].map(text),
  };
}"""
READ_SNAPSHOT = """() => {
  const text = (e) => e.innerText.trim();
  return {
    title: text(document.querySelector('h1')),
    headings: [...document.querySelectorAll('main > h1, main > h2, main > h3, main > h4')].map(text),
    metrics: [...document.querySelectorAll('.tb-metric')].map(m => [
      text(m.querySelector('.tb-label')), text(m.querySelector('.tb-value'))]),
    condition: (document.querySelector('[data-tb=condition]') || {innerText: ''}).innerText.trim(),
    share: text(document.querySelector('[data-tb=share-link]')),
    tiePolicy: (document.querySelector('[data-tb=tie-policy]') || {innerText: ''}).innerText.trim(),
    snapshotDate: (document.querySelector('[data-tb=data-snapshot]') || {innerText: ''}).innerText.trim(),
    sources: [...document.querySelectorAll('[data-tb=source]')].map(text),
    tables: [...document.querySelectorAll('.tb-table table')].map(t => ({
      head: [...t.querySelectorAll('thead th')].map(text),
      rows: [...t.querySelectorAll('tbody tr')].map(r => [...r.children].map(c => c.textContent))})),
    figures: [...document.querySelectorAll('.js-plotly-plot')].map(FIGURE),
    forest: [...document.querySelectorAll('.tb-forest .tb-row[title]')].map(r => r.getAttribute('title')),
    notes: [...document.querySelectorAll('.tb-text-info, .tb-text-warning, .tb-text-error, .tb-text-success')].map(text),
    lines: [...document.querySelectorAll('.tb-text')].map(text),
  };
}"""
HEADLINE = re.compile(r"(On these tasks|On new tasks like these): (\d+ of \d+ adjacent pairs differ · \d+ could be #1)")
"""The Leaderboard's headline numbers, one per lens (there are no metrics on that view)."""
FIGURE = """(g) => (g._fullData || []).filter(t => t.visible !== false).map(t => ({
  type: t.type, name: t.name || '', x: Array.from(t.x || []), y: Array.from(t.y || []),
  z: JSON.stringify(t.z || null), text: JSON.stringify(t.text || null)}))"""


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """The dashboard on the shipped data/ (what a collaborator is sent a snapshot of)."""
    with served(ROOT / "data", tmp_path_factory.mktemp("snapshot-log") / "streamlit.log") as base:
        yield base


def _read(page, script: str) -> dict:
    return page.evaluate(script.replace("FIGURE", FIGURE))


def _settled_live(page, expected: dict, timeout: float = 90.0) -> dict:
    """The live view once it shows as many tables (with their accessible rows), metrics, headings and charts as
    the snapshot holds — Streamlit paints a run's elements progressively — or as it is at the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        live = _read(page, READ_LIVE)
        counts = [len(live["tables"]), len(live["metrics"]), len(live["headings"]), len(live["figures"]),
                  len(live["forest"])]
        want = [len(expected["tables"]), len(expected["metrics"]), len(expected["headings"]),
                len(expected["figures"]), len(expected["forest"])]
        ready = all(t and t["cells"] for t in live["tables"]) and all(f for f in live["figures"])
        if (counts == want and ready) or time.monotonic() > deadline:
            return live
        page.wait_for_timeout(250)


def _number(text: str) -> tuple[float, float] | None:
    """A printed number and half a unit of its last digit (``7.1B`` → (7.1e9, 0.05e9))."""
    match = re.fullmatch(r"([+-]?\d[\d,]*)(?:\.(\d+))?([KMBT]?)%?", text.strip())
    if not match:
        return None
    scale = {"": 1, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[match.group(3)] / (100 if text.endswith("%") else 1)
    digits = len(match.group(2) or "")
    value = float(match.group(1).replace(",", "") + ("." + match.group(2) if match.group(2) else ""))
    return value * scale, 0.5 * 10 ** -digits * scale


def _same_cell(live: str, shown: str) -> bool:
    """Does the snapshot's cell print the live grid's raw value (the grid formats it like the snapshot)?"""
    live, shown = live.strip(), shown.strip()
    if live in ("", "None", "null", "NaN", "nan", "<NA>"):
        return shown == ""
    if live in ("true", "false"):
        return shown == {"true": "yes", "false": "no"}[live]
    try:
        value = float(live)
    except ValueError:
        return shown == live or (live.startswith(("http://", "https://")) and bool(shown) and shown in live)  # a link: its display text
    printed = _number(shown)
    if printed is None or not math.isfinite(value):
        return False
    if shown.endswith("%") and abs(printed[0] * 100 - value) <= printed[1] * 100 * (1 + 1e-9) + 1e-12:
        return True  # a printf "%.2f%%" column: its values are in percent already (ui.tables.share_column)
    return abs(printed[0] - value) <= printed[1] * (1 + 1e-9) + 1e-12


def _download(page, target: Path) -> Path:
    button = page.get_by_test_id("stSidebar").get_by_role("button", name=BUTTON)
    button.scroll_into_view_if_needed()
    with page.expect_download(timeout=60_000) as download:
        button.click()
    download.value.save_as(target)
    return target


def _open_offline(browser, path: Path):
    """The file in a fresh context where every request other than file:// and data: is refused (and noted)."""
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    asked, errors = [], []

    def route(request_route):
        url = request_route.request.url
        if url.startswith(("file:", "data:")):
            request_route.continue_()
        else:
            asked.append(url)
            request_route.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return context, page, asked, errors


@pytest.mark.parametrize("slug", VIEWS)
def test_the_snapshot_offline_shows_the_live_views_numbers(shipped, playwright_browser, slug, tmp_path):
    live_context = playwright_browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    offline_context = None
    try:
        page = open_view(live_context, f"{shipped}/{slug}")
        assert_no_exception(page)
        link = share_link(page)
        path = _download(page, tmp_path / f"{slug or 'leaderboard'}.html")
        text = path.read_text(encoding="utf-8")

        offline_context, offline, asked, errors = _open_offline(playwright_browser, path)
        figures = text.count("Plotly.newPlot(")
        if figures:
            offline.wait_for_function(f"document.querySelectorAll('.js-plotly-plot').length === {figures}",
                                      timeout=60_000)
        snap = _read(offline, READ_SNAPSHOT)
        ARTIFACTS.mkdir(exist_ok=True)
        offline.screenshot(path=str(ARTIFACTS / f"snapshot_{slug or 'leaderboard'}.png"), full_page=True)
        assert asked == [] and errors == [], "offline: no request, no error"
        assert len(text.encode()) < (MAX_PLOTLY_BYTES if figures else MAX_PLAIN_BYTES)
        assert re.search(r"\ssrc=", text) is None, "nothing is loaded from anywhere"

        live = _settled_live(page, snap)
        # title, headings, condition, share link, data snapshot, tie policy
        assert snap["title"] == live["headings"][0]
        assert snap["headings"] == live["headings"]
        assert snap["share"] == link and link.startswith(shipped)
        snap_parts = snap["condition"].split(" · ")
        if live["conditions"]:  # the page's condition line (some views leave a field out, add a note)
            common = set(live["conditions"][0].split(" · ")) & set(snap_parts)
            assert len(common) >= 4 and any(p.startswith("ties: ") for p in common), (live["conditions"], snap_parts)
        else:  # a view without a condition line (Evaluate): the sidebar's condition
            assert len(snap_parts) >= 5, snap_parts
        assert snap["tiePolicy"] == next(p for p in snap_parts if p.startswith("ties: ")).removeprefix("ties: ")
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", snap["snapshotDate"]) and snap["sources"]
        assert any("@ " in s for s in snap["sources"]), "sources name their commit"
        # headline numbers and charts
        assert snap["metrics"] == live["metrics"]
        headlines = [HEADLINE.findall(" ".join(t.split())) for t in ("\n".join(snap["lines"]), "\n".join(live["lines"]))]
        assert headlines[0] == headlines[1] and (len(headlines[1]) == 2) == (slug == ""), headlines
        assert snap["forest"] == live["forest"]
        assert len(snap["notes"]) == len(live["notes"]), (snap["notes"], live["notes"])
        for live_note, snap_note in zip(live["notes"], snap["notes"]):  # notices: policy swaps, a moved view …
            assert " ".join(snap_note.split()) in " ".join(live_note.split()), (snap_note, live_note)
        assert len(snap["figures"]) == len(live["figures"]) == figures
        for live_figure, snap_figure in zip(live["figures"], snap["figures"]):
            assert snap_figure == live_figure and any(t["x"] or t["y"] or t["z"] != "null" for t in snap_figure)
        # tables: labels, row counts, every cell the live grid rendered
        assert len(snap["tables"]) == len(live["tables"])
        compared = 0
        for number, (live_table, snap_table) in enumerate(zip(live["tables"], snap["tables"])):
            assert live_table is not None, f"table {number}: the live grid has no accessible table"
            assert len(snap_table["rows"]) == live_table["rows"], f"table {number}: row count"
            header = dict(live_table["cells"])[1]
            assert all(label in snap_table["head"] for label in header), (number, header, snap_table["head"])
            positions = [snap_table["head"].index(label) for label in header]
            for row_index, cells in live_table["cells"]:
                if row_index == 1:
                    continue
                shown = snap_table["rows"][row_index - 2]
                for label, position, value in zip(header, positions, cells):
                    assert _same_cell(value, shown[position]), (number, row_index, label, value, shown[position])
                    compared += 1
        if live["tables"]:
            assert compared >= 10, "the live grids rendered cells to compare"
    finally:
        live_context.close()
        if offline_context is not None:
            offline_context.close()


def test_a_wrong_cell_is_noticed():
    """The comparison can fail: a rounded value that is off by more than its last printed digit, a missing
    value shown as 0, a different name."""
    assert _same_cell("0.31413555735561927", "0.3141") and _same_cell("13990394880", "14B")
    assert not _same_cell("0.31413555735561927", "0.3142") and not _same_cell("13990394880", "13B")
    assert not _same_cell("", "0.0000") and not _same_cell("codefuse-ai/F2LLM-v2-14B", "codefuse-ai/F2LLM-v2-8B")
    assert _same_cell("true", "yes") and not _same_cell("true", "no")
    assert _same_cell("0.0005164319248826291", "0.05%") and not _same_cell("0.0005164319248826291", "0.06%")
