"""Pinned rows in Chromium: ticking three rows of the Leaderboard pins them (the link carries them), "Compare
pinned" opens Compare with exactly those systems, and both views survive a copied link in a fresh browser."""
from __future__ import annotations

import pytest

from test_browser import (ROOT, assert_no_exception, open_view, playwright_browser, screenshot,  # noqa: F401
                          served, share_link, wait_idle)

from evalcore.store import Condition, Store

pytestmark = pytest.mark.browser
POOLED = "bench=rar-b&setting=full-pooled&instr=any"
ROW_HEIGHT = 35  # st.dataframe's default row height (and its header's)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with served(ROOT / "data", tmp_path_factory.mktemp("pins-log") / "streamlit.log") as base:
        yield base


def _tick(page, rows: list[int]) -> None:
    """Tick the selection boxes of ``rows`` (positions in the table as drawn) in the Leaderboard's grid."""
    grid = page.get_by_test_id("stDataFrame").first
    for row in rows:
        grid.scroll_into_view_if_needed()
        page.wait_for_timeout(200)
        box = grid.bounding_box()
        page.mouse.click(box["x"] + 18, box["y"] + ROW_HEIGHT * (row + 1) + ROW_HEIGHT / 2)
        wait_idle(page)


def _pins(url: str) -> list[str]:
    from urllib.parse import parse_qs, urlsplit
    return parse_qs(urlsplit(url).query).get("pin", [])


def test_three_pinned_rows_open_in_compare_and_survive_a_copied_link(server, playwright_browser):
    order = Store(ROOT / "data").leaderboard(Condition("rar-b", "ndcg@10", "full-pooled", None, "fp32"),
                                             uncertainty=False).ranked.sort_values("rank", kind="stable")
    names = order["system"].tolist()
    context = playwright_browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = open_view(context, f"{server}/?{POOLED}")
        _tick(page, [0, 2, 4])
        assert_no_exception(page)
        link = share_link(page)
        assert sorted(_pins(link)) == sorted(names[i] for i in (0, 2, 4)), link
        assert page.get_by_text("Pinned (3):").count() == 1
        screenshot(page, "pins-leaderboard")
        page.get_by_role("button", name="Compare pinned (3)").click()
        wait_idle(page)
        assert_no_exception(page)
        assert page.locator("h1").first.inner_text().strip() == "Compare"
        compare_link = share_link(page)
        assert sorted(_pins(compare_link.replace("sys=", "pin="))) == sorted(_pins(link))
        screenshot(page, "pins-compare")

        fresh = playwright_browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            again = open_view(fresh, link)
            assert_no_exception(again)
            assert again.get_by_text("Pinned (3):").count() == 1
            assert sorted(_pins(again.url)) == sorted(_pins(link))
            again.get_by_role("button", name="Compare pinned (3)").click()
            wait_idle(again)
            assert sorted(_pins(again.url.replace("sys=", "pin="))) == sorted(_pins(link))
            other = open_view(fresh, compare_link)
            assert_no_exception(other)
            assert sorted(_pins(other.url.replace("sys=", "pin="))) == sorted(_pins(link))
        finally:
            fresh.close()
    finally:
        context.close()
