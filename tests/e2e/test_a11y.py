"""Accessibility in Chromium, on the shipped data:

- axe-core (the copy ``axe-playwright-python`` bundles), rules of WCAG 2.0, 2.1 and 2.2 at levels A and AA, on
  every view of the sidebar at its first visit and on the glossary, walked as a first-time visitor walks them
  (root URL, then each sidebar entry): no violation of impact *serious* or *critical*;
- the keyboard reaches every control of every view: Tab through the view until every visible focusable element
  has had the focus (not counted: what the page itself takes out of the Tab order with ``tabindex="-1"`` and
  reaches otherwise — a selectbox's arrow button, whose text field is the Tab stop, and a radio group's unticked
  options, reached with the arrow keys from the ticked one);
- the Leaderboard's pins with the keyboard only: Tab into the table, Shift+Space ticks and unticks rows (arrows
  move between them), Tab to "Compare pinned", Enter opens Compare with those systems (tests/e2e/test_pins.py
  is the mouse's version).
"""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from needs import require_module
from test_browser import (ROOT, assert_no_exception, open_view, playwright_browser, screenshot,  # noqa: F401
                          served, wait_idle)
from test_first_visit import ANALYSIS, CHART, OTHER, TABLE

from ui.navigation import PAGES

pytestmark = pytest.mark.browser
SHIPPED = ROOT / "data"
WCAG_A_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
FAILING_IMPACTS = ("serious", "critical")
POOLED = "bench=rar-b&setting=full-pooled&instr=any"
MAX_TABS = 800  # a view's Tab stops (the Leaderboard's table takes one per column) are far fewer
FOCUSABLE = ('a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"]), '
             '[contenteditable="true"]')

_MARK = """(selector) => {
  document.querySelectorAll('[data-a11y-mark]').forEach(e => e.removeAttribute('data-a11y-mark'));
  const marked = [];
  document.querySelectorAll(selector).forEach((e, i) => {
    const box = e.getBoundingClientRect(), style = getComputedStyle(e);
    if (e.disabled || e.getAttribute('tabindex') === '-1' || style.visibility === 'hidden' || style.display === 'none'
        || (box.width === 0 && box.height === 0) || e.closest('[aria-hidden="true"], [inert]')) return;
    e.setAttribute('data-a11y-mark', String(i));
    const named = e.getAttribute('aria-label') || e.innerText || e.getAttribute('data-testid') || e.tagName;
    marked.push([String(i), named.trim().split('\\n').pop().slice(0, 60)]);
  });
  window.__a11yFocused = new Set();
  document.addEventListener('focusin', event => {
    const mark = event.target.closest('[data-a11y-mark]');
    if (mark) window.__a11yFocused.add(mark.getAttribute('data-a11y-mark'));
  }, true);
  return marked;
}"""


@pytest.fixture(scope="module")
def axe_script() -> str:
    require_module("axe_playwright_python", hint="pip install -r requirements-dev.txt")
    from axe_playwright_python.base import AXE_SCRIPT

    return AXE_SCRIPT


@pytest.fixture(scope="module")
def shipped_server(tmp_path_factory):
    with served(SHIPPED, tmp_path_factory.mktemp("a11y") / "streamlit.log") as base:
        yield base


def _axe(page, script: str) -> dict:
    """axe-core's results for the whole page: the script goes into every frame (axe in the top frame then tests
    the frames through it), the rules are WCAG 2 A/AA."""
    for frame in page.frames:
        frame.evaluate(script)
    return page.evaluate("options => axe.run(document, options)",
                         {"runOnly": {"type": "tag", "values": WCAG_A_AA},
                          "resultTypes": ["violations"]})


def _failures(results: dict) -> list[str]:
    """One line per element of each serious or critical violation: rule, impact, what axe says, the element."""
    lines = []
    for rule in results["violations"]:
        if rule["impact"] in FAILING_IMPACTS:
            for node in rule["nodes"]:
                checks = node.get("any", []) + node.get("all", []) + node.get("none", [])
                says = "; ".join(check["message"] for check in checks)
                lines.append(f"{rule['id']} ({rule['impact']}): {says} — {node['html'][:160]}")
    return lines


def _unreached_by_tab(page) -> list[str]:
    """The visible focusable elements of the view that pressing Tab (from where the focus is) never focuses."""
    marked = dict(page.evaluate(_MARK, FOCUSABLE))
    assert marked, "a view with nothing to focus"
    tabs = 0
    while tabs < MAX_TABS:
        for _ in range(20):
            page.keyboard.press("Tab")
        tabs += 20
        if page.evaluate("marks => marks.every(m => window.__a11yFocused.has(m))", list(marked)):
            return []
    focused = set(page.evaluate("() => [...window.__a11yFocused]"))
    return [name for mark, name in marked.items() if mark not in focused]


def _view_drawn(page, title: str) -> None:
    page.locator("h1").filter(has_text=title).first.wait_for()
    wait_idle(page)
    if title in ANALYSIS:
        page.locator(CHART).first.wait_for()
        page.locator(TABLE).first.wait_for()
    elif title in OTHER:
        page.locator(OTHER[title]).first.wait_for()


def test_no_serious_axe_violation_and_every_control_reachable_by_tab_on_a_first_visit(
        shipped_server, playwright_browser, axe_script):
    context = playwright_browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = open_view(context, f"{shipped_server}/")
        nav = page.get_by_test_id("stSidebarNav").get_by_role("link")
        titles = [t.strip().splitlines()[-1].strip() for t in nav.all_inner_texts()]
        assert titles == [spec.title for spec in PAGES] + ["Glossary"], titles
        failures, unreached = {}, {}
        for index, title in enumerate(titles):
            if index:
                nav.nth(index).click()
            _view_drawn(page, title)
            assert_no_exception(page)
            results = _axe(page, axe_script)
            if _failures(results):
                failures[title] = _failures(results)
                screenshot(page, f"a11y_{index}")
            missed = _unreached_by_tab(page)
            if missed:
                unreached[title] = missed
        assert not failures, "\n".join(f"{title}:\n  " + "\n  ".join(lines) for title, lines in failures.items())
        assert not unreached, unreached
    finally:
        context.close()


def test_axe_finds_what_it_checks(shipped_server, playwright_browser, axe_script):
    """The check can fail: on a view given a caption of too little contrast, axe reports it as serious."""
    context = playwright_browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = open_view(context, f"{shipped_server}/glossary")
        assert _failures(_axe(page, axe_script)) == []
        page.evaluate("""() => { const p = document.createElement('p'); p.textContent = 'faint words';
                                 p.style.color = '#bbbbbb'; document.querySelector('h1').after(p); }""")
        lines = _failures(_axe(page, axe_script))
        assert len(lines) == 1 and lines[0].startswith("color-contrast (serious)") and "faint words" in lines[0], lines
    finally:
        context.close()


def _pins(url: str) -> list[str]:
    return sorted(parse_qs(urlsplit(url).query).get("pin", []))


def _focused_test_id(page) -> str | None:
    return page.evaluate("() => document.activeElement?.closest('[data-testid]')?.getAttribute('data-testid')")


def _press(page, *keys: str) -> None:
    for key in keys:
        page.keyboard.press(key)
        page.wait_for_timeout(100)
    wait_idle(page)


def test_pins_ticked_unticked_and_compared_with_the_keyboard_only(shipped_server, playwright_browser):
    """Which rows are which is tests/e2e/test_pins.py's business; here: each Shift+Space ticks or unticks the
    focused row, the arrows move to other rows, and the link pins exactly the rows ticked."""
    context = playwright_browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = open_view(context, f"{shipped_server}/?{POOLED}")
        for _ in range(MAX_TABS):  # Tab from the top of the page into the table
            page.keyboard.press("Tab")
            if _focused_test_id(page) == "data-grid-canvas":
                break
        assert _focused_test_id(page) == "data-grid-canvas", "Tab never reached the Leaderboard's table"
        _press(page, "Shift+Space")  # the first row
        first = _pins(page.url)
        assert len(first) == 1, page.url
        _press(page, "ArrowDown", "ArrowDown", "Shift+Space")
        two = _pins(page.url)
        assert len(two) == 2 and set(first) < set(two), page.url
        _press(page, "ArrowDown", "Shift+Space")
        three = _pins(page.url)
        assert len(three) == 3 and set(two) < set(three), page.url
        _press(page, "Shift+Space")  # untick that row again
        assert _pins(page.url) == two
        assert page.get_by_text("Pinned (2):").count() == 1
        assert_no_exception(page)
        screenshot(page, "a11y_keyboard_pins")

        compare = page.get_by_role("button", name="Compare pinned (2)")
        for _ in range(MAX_TABS):
            page.keyboard.press("Tab")
            if compare.evaluate("button => button === document.activeElement"):
                break
        assert compare.evaluate("button => button === document.activeElement"), "Tab never reached Compare pinned"
        _press(page, "Enter")
        assert_no_exception(page)
        assert page.locator("h1").first.inner_text().strip() == "Compare"
        assert sorted(parse_qs(urlsplit(page.url).query).get("sys", [])) == two, page.url
        screenshot(page, "a11y_keyboard_compare")
    finally:
        context.close()
