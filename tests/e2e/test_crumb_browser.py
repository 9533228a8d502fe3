"""The CRUMB board in a browser: a data folder holding synthetic RAR-b rows and the CRUMB fixture runs imported
with ``evalcore import-crumb`` (passages with and without the instruction, full documents); a first-time
visitor picks CRUMB, sees it ranked by the mean over tasks with the fixture's numbers, switches to full
documents, and opens the instruction comparison — no traceback anywhere."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from test_browser import (assert_no_exception, choose, context, open_view, playwright_browser,  # noqa: F401
                          screenshot, served, wait_idle)

import synthetic_data  # noqa: I001 - on the path test_browser sets
from evalcore.cli import main

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crumb"


@pytest.fixture(scope="module")
def crumb_server(tmp_path_factory):
    data_dir = synthetic_data.write_small(tmp_path_factory.mktemp("crumb-e2e-data"))
    imports = [("minilm", ()), ("minilm-instructed", ("--system", "minilm", "--instruction", "yes")),
               ("bm25", ()), ("minilm-full", ("--system", "minilm", "--setting", "full-document"))]
    for folder, extra in imports:
        assert main(["import-crumb", str(FIXTURES / "runs" / folder), "--crumb", str(FIXTURES),
                     "--data", str(data_dir), *extra]) == 0
    with served(data_dir, tmp_path_factory.mktemp("crumb-e2e-log") / "streamlit.log") as base:
        yield base


def ranked_and_top(page) -> tuple[int, str]:
    """How many systems the Leaderboard ranks (its caption) and its first row's name and score (the chart's)."""
    count = re.search(r"(\d+) systems? ranked", page.get_by_test_id("stMain").inner_text()).group(1)
    first = page.locator(".tb-forest .tb-row[title]").first.get_attribute("title").splitlines()[0]
    return int(count), first


def test_a_visitor_finds_the_crumb_board(crumb_server, context):  # noqa: F811
    page = open_view(context, crumb_server)
    assert_no_exception(page)
    choose(page, "Benchmark", "CRUMB")
    assert_no_exception(page)
    sidebar = page.get_by_test_id("stSidebar").inner_text()
    assert "Passages" in sidebar and "Full documents" in sidebar
    assert "bench=crumb" in page.url and "setting=passage" in page.url
    # as published: minilm's with-instruction rows (mean nDCG@10 0.8812 over 3 tasks), bm25's without (0.8174)
    assert ranked_and_top(page) == (2, "minilm: mean 0.8812")
    body = page.inner_text("body")
    assert "Ranked by mean" in body and "CRUMB" in body
    assert screenshot(page, "e2e_crumb_board").stat().st_size > 10_000

    page.get_by_test_id("stSidebar").get_by_text("Full documents", exact=True).click()
    wait_idle(page)
    assert_no_exception(page)
    assert "setting=full-document" in page.url
    assert ranked_and_top(page) == (1, "minilm: mean 0.9404")


def test_the_instruction_view_compares_crumb_runs(crumb_server, context):  # noqa: F811
    page = open_view(context, f"{crumb_server}/instructions?bench=crumb&setting=passage")
    assert_no_exception(page)
    assert re.search(r"minilm", page.inner_text("body"))
    screenshot(page, "e2e_crumb_instructions")
