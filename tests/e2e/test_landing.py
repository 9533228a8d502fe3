"""The Leaderboard as a first-time visitor sees it, in Chromium on the shipped data: without a click
a ranking with per-row rank ranges, a chart, and one line whose link opens the per-query board in the same tab;
at 1440×900 the table's first row shows without scrolling; on a phone (390×844) the sidebar starts collapsed,
nothing scrolls sideways, the table's first four columns (#, rank range, system, score) fit, and the chart's
legend sits below its rows. On the same server: the Ties & precision panels' score axes carry round ticks."""
from __future__ import annotations

import re

import pytest

from test_browser import (ROOT, assert_no_exception, playwright_browser, screenshot,  # noqa: F401
                          served, wait_idle)

from ui import board as boards

pytestmark = pytest.mark.browser
IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
          "Version/17.0 Mobile/15E148 Safari/604.1")
SHIPPED = ROOT / "data"


@pytest.fixture(scope="module")
def shipped_server(tmp_path_factory):
    with served(SHIPPED, tmp_path_factory.mktemp("landing") / "streamlit.log") as base:
        yield base


def _open(browser, url: str, **context_options):
    context = browser.new_context(**context_options)
    page = context.new_page()
    page.set_default_timeout(120_000)
    errors: list[str] = []
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.goto(url)
    wait_idle(page)
    return context, page, errors


def test_a_first_visit_shows_ranks_a_chart_and_one_click_to_the_per_query_board(shipped_server, playwright_browser):
    context, page, errors = _open(playwright_browser, f"{shipped_server}/", viewport={"width": 1400, "height": 1000})
    try:
        assert_no_exception(page)
        chart = page.locator(".tb-forest")
        chart.first.wait_for()  # drawn below the table, after it: a loaded machine paints it a moment later
        assert chart.count() == 1 and chart.locator(".tb-row[title]").count() == 15
        assert page.get_by_text("task-level scores only").count() >= 1
        screenshot(page, "landing_desktop")
        link = page.get_by_role("link", name=re.compile(r"^show them — RAR-b · Full \(pooled candidates\)"))
        link.click()
        page.wait_for_url(re.compile(r"setting=full-pooled"), timeout=60_000)
        wait_idle(page)
        assert_no_exception(page)
        assert page.get_by_text(re.compile(r"\d+ of \d+ ranked systems")).count() == 1
        assert page.locator(".tb-forest .tb-seg").count() > 0, "the per-query board draws its intervals"
        assert errors == [], errors
    finally:
        context.close()


ROW_HEIGHT = 35
"""Streamlit's data grid draws its header and each row 35 px high (the page sizes its table as 35 × rows + 40)."""


def test_a_first_visit_at_1440_by_900_shows_table_rows_above_the_fold(shipped_server, playwright_browser):
    """At 1440×900 not one row of the table was visible on a first visit (a paragraph, controls, five big numbers,
    captions, a notice and a warning came first): now the first rows are, and both lenses' headlines above them."""
    context, page, errors = _open(playwright_browser, f"{shipped_server}/", viewport={"width": 1440, "height": 900})
    try:
        assert_no_exception(page)
        main = page.get_by_test_id("stMain")
        assert main.evaluate("(e) => e.scrollTop") == 0 and page.evaluate("() => window.scrollY") == 0, \
            "nothing scrolled: the first screen"
        frame = page.get_by_test_id("stDataFrame").first.bounding_box()
        first_row_top = frame["y"] + ROW_HEIGHT  # under the header row
        assert first_row_top < 900, frame
        assert first_row_top + ROW_HEIGHT <= 900, ("the whole first row shows", frame)
        for label in boards.LENSES.values():
            headline = main.get_by_text(f"{label}:", exact=False).first.bounding_box()
            assert headline and headline["y"] + headline["height"] <= frame["y"], (label, headline, frame)
        screenshot(page, "landing_1440x900")
        assert errors == [], errors
    finally:
        context.close()


def test_a_phone_gets_a_collapsed_sidebar_and_no_sideways_scrolling(shipped_server, playwright_browser):
    context, page, errors = _open(playwright_browser, f"{shipped_server}/?bench=rar-b&setting=full-pooled",
                                  viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                  device_scale_factor=2, user_agent=IPHONE)
    try:
        assert_no_exception(page)
        assert page.get_by_test_id("stSidebar").get_attribute("data-collapsed") == "true"
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        frame = page.get_by_test_id("stDataFrame").first.bounding_box()
        assert frame["width"] >= sum(boards.PHONE_WIDTHS[:4]), "#, rank range, system and score fit without scrolling"
        rows = page.locator(".tb-forest .tb-row[title]")
        legend = page.locator(".tb-forest .tb-legend").bounding_box()
        last = rows.nth(rows.count() - 1).bounding_box()
        assert legend["y"] >= last["y"] + last["height"] - 1, "the legend is below the plot, not on it"
        name, track = rows.first.locator(".tb-name").bounding_box(), rows.first.locator(".tb-track").bounding_box()
        assert track["y"] >= name["y"] + name["height"] - 1, "on a phone the name sits above its bar"
        screenshot(page, "landing_phone_pooled")
        assert errors == [], errors
    finally:
        context.close()


def test_the_precision_profiles_score_axes_carry_round_ticks(shipped_server, playwright_browser):
    """Each Ties & precision panel's score axis read 0.7429, 0.7248, 0.7067, … (synced to the right axis' 0–100 %
    grid by Streamlit's theme); a reader wants round values (0.74, 0.72, …)."""
    context, page, _ = _open(playwright_browser, f"{shipped_server}/ties-and-precision?setting=full-pooled&"
                             "instr=without&tp_task=WinoGrande", viewport={"width": 1400, "height": 1000})
    try:
        assert_no_exception(page)
        panels = page.locator("[data-testid='stPlotlyChart']")
        panels.first.wait_for()
        page.wait_for_function("document.querySelectorAll('.y2tick text').length >= 9", timeout=60_000)
        ticks = [t.strip() for t in page.locator(".y2tick text").all_text_contents()]
        significant = [len(t.replace("−", "").replace("-", "").replace(".", "").lstrip("0")) for t in ticks]
        assert ticks and max(significant) <= 3, ticks  # 0.74, 0.0055, 0.748 — not 0.7429
        screenshot(page, "ties_profile_ticks")
    finally:
        context.close()
