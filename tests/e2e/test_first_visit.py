"""A first-time visitor clicks through the sidebar ("Done when"): a fresh server on the shipped data,
the root URL, then every entry of the sidebar's navigation in order, touching nothing else. Every view shows
its answer — the analysis views a chart and a results table, moving to a condition that has what they need
and saying so in one line — and none shows an empty-state box, an exception, an error response or a request
outside the server's origin. Screenshots go to ``test-artifacts/first_visit_<view>.png``."""
from __future__ import annotations

import base64
import re

import pytest

from test_browser import (ROOT, assert_no_exception, playwright_browser, screenshot,  # noqa: F401
                          served, wait_idle)

from ui.hints import EMPTY_STATE_KEY
from ui.navigation import PAGES

pytestmark = pytest.mark.browser
SHIPPED = ROOT / "data"
CHART = "[data-testid='stPlotlyChart'], .tb-forest"
TABLE = "[data-testid='stDataFrame']"
EMPTY_STATE = f"[class*='st-key-{EMPTY_STATE_KEY}']"
# the analysis views (each shows a chart and a results table) and the one line naming the condition a view
# moved to for what it needs (None: the Leaderboard shows the first visit's condition itself)
ANALYSIS = {
    "Leaderboard": None,
    "Ties & precision": "Ties & precision needs per-query results: showing RAR-b · full (pooled candidates)",
    "Rank flips": "Rank flips needs runs at two precisions: showing RAR-b · full (pooled candidates)",
    "Instructions": "Instructions needs results with and without instruction for the same system: showing RAR-b",
    "MCR vs full": "MCR vs full needs full and multiple-choice (MCR) results for the same system: showing RAR-b",
    "Compare": "Compare needs two systems with per-query results: showing RAR-b · full (pooled candidates)",
}
OTHER = {  # sidebar entries that are not an analysis of the shipped data: what shows they are drawn
    "Evaluate your run": "[data-testid='stFileUploader']",
    "Glossary": "h2, h3",
}


@pytest.fixture(scope="module")
def shipped_server(tmp_path_factory):
    with served(SHIPPED, tmp_path_factory.mktemp("first-visit") / "streamlit.log") as base:
        yield base


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def test_every_sidebar_view_shows_its_answer_on_a_first_visit(shipped_server, playwright_browser):
    context = playwright_browser.new_context(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    outside: list[str] = []

    def stay_home(route):  # no request may leave the server's origin (it would fail offline and leak the visit)
        if route.request.url.startswith(shipped_server):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", stay_home)
    try:
        page = context.new_page()
        page.set_default_timeout(120_000)
        page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        page.goto(f"{shipped_server}/")
        wait_idle(page)
        nav = page.get_by_test_id("stSidebarNav").get_by_role("link")
        titles = [t.strip().splitlines()[-1].strip() for t in nav.all_inner_texts()]  # (after the icon's name)
        assert [spec.title for spec in PAGES] == titles[:len(PAGES)], titles
        for index, title in enumerate(titles):
            if index:
                nav.nth(index).click()
            page.locator("h1").filter(has_text=title).first.wait_for()
            wait_idle(page)
            if title in ANALYSIS:
                page.locator(CHART).first.wait_for()  # a chart library may load after the script run
                page.locator(TABLE).first.wait_for()
            elif title in OTHER:
                page.locator(OTHER[title]).first.wait_for()
            screenshot(page, f"first_visit_{_slug(title)}")
            assert_no_exception(page)
            main = page.get_by_test_id("stMain")
            assert page.locator(EMPTY_STATE).count() == 0, (title, page.locator(EMPTY_STATE).all_inner_texts())
            assert "could not be drawn" not in main.inner_text(), title
            assert "evalcore ingest" not in main.inner_text(), f"{title}: an ingest hint on the shipped data"
            if ANALYSIS.get(title):
                moved = main.get_by_test_id("stAlert").filter(has_text=ANALYSIS[title])
                assert moved.count() == 1, (title, main.get_by_test_id("stAlert").all_inner_texts())
            if title in ANALYSIS:
                assert main.locator(CHART).count() >= 1 and main.locator(TABLE).count() >= 1, title
            if title == "Leaderboard":
                assert main.locator(".tb-forest").count() == 1, "the default view draws its chart"
        assert errors == [], errors
        assert outside == [], outside
        icons = page.evaluate("() => [...document.querySelectorAll(\"link[rel~='icon']\")].map(l => l.href)")
        prefix = "data:image/svg+xml;base64,"
        assert icons and all(href.startswith(prefix) for href in icons), [href[:60] for href in icons]
        drawn = {base64.b64decode(href[len(prefix):]).decode() for href in icons}
        assert all('fill="#0d9488"' in svg for svg in drawn), "the favicon is ui/favicon.svg, inlined (no request)"
    finally:
        context.close()
