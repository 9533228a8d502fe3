"""Self-validation of the protocol client (``bench/ws_session.py``) against a real Chromium, for ``bench/load_ws.py``.

The same URL is opened twice on the same server: by headless Chromium (Playwright, ``/usr/bin/chromium``) with
every websocket frame recorded, and by a :class:`ws_session.Session`. Then both make the same moves: a control
change (a sidebar selectbox set to another option: Chromium opens the list and picks it), a page switch
(Chromium clicks the page in the sidebar navigation) and a control change on that page. After the first view
and after each move:

- **the rerun message**: the ``BackMsg`` Chromium sent equals the client's — widget states (ids and values), query
  string, page hash and name, the page URL in ``context_info``, and the cached messages it lists (by delta path:
  a message holding a random uuid, such as a pandas Styler's, has another hash in every session);
- **the elements**: the page tree built from the frames Chromium received equals the client's, element by
  element at the same delta path: widget ids, labels, options and disabled flags; markdown, headings, alerts,
  metrics, code; every dataframe's Arrow table (and the Styler's display values and CSS, with its random uuid
  masked); chart specs; blocks;
- **what Chromium drew**: every widget label the page tree says is mounted is on the screen, and no label of a
  widget inside a closed popover is (the rule the client uses to leave those widgets' states out);
- Chromium sent no other message than reruns (a lazily loaded table or a deferred download would need more).

A difference is reported with its path; :func:`validate` returns a :class:`Validation` whose ``ok`` says
whether the client may stand in for a browser on this app.
"""
from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg

from ws_session import FINISHED, PageTree, Session, VALUE_FIELD

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
UUID = re.compile(r"T_[0-9a-f_]+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Labels Chromium draws for the widget kinds of this app (the testid of the widget's container)
TESTIDS = {"selectbox": "stSelectbox", "radio": "stRadio", "checkbox": "stCheckbox", "text_input": "stTextInput",
           "multiselect": "stMultiSelect", "button": "stButton", "text_area": "stTextArea",
           "number_input": "stNumberInput", "slider": "stSlider", "button_group": "stButtonGroup"}


@dataclass
class Step:
    name: str
    differences: list[str] = field(default_factory=list)
    elements: int = 0
    widgets: int = 0
    tables: int = 0
    table_cells: int = 0


@dataclass
class Validation:
    url: str
    steps: list[Step] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.steps) and not any(step.differences for step in self.steps)

    def text(self) -> str:
        lines = [f"self-validation against Chromium at {self.url}: {'PASSED' if self.ok else 'FAILED'} "
                 f"({self.seconds:.0f} s)"]
        for step in self.steps:
            lines.append(f"- {step.name}: {step.elements} elements, {step.widgets} widgets, {step.tables} tables "
                         f"({step.table_cells} cells): " + ("same" if not step.differences else
                                                           f"{len(step.differences)} difference(s)"))
            lines.extend(f"    {d}" for d in step.differences[:15])
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------- element summaries
def _arrow(data: bytes):
    import pyarrow as pa

    if not data:
        return None
    return pa.ipc.open_stream(data).read_all()


def summarize(tree: PageTree) -> dict[tuple[int, ...], tuple]:
    """Each node of the page tree as a comparable tuple (run ids, random uuids and session URLs left out)."""
    out = {}
    for path, node in tree.nodes.items():
        p, kind = node.proto, node.kind
        if kind.startswith("block:"):
            inner = getattr(p, kind[6:], None)
            label = getattr(inner, "label", "") if inner is not None else ""
            out[path] = (kind, label)
        elif kind != "dataframe" and (kind in VALUE_FIELD or kind in ("button", "download_button")):
            out[path] = (kind, p.id if kind != "download_button" else "", p.label,
                         tuple(getattr(p, "options", ())), getattr(p, "disabled", False), getattr(p, "help", ""))
        elif kind == "dataframe":
            table = _arrow(p.arrow_data.data)
            styler = p.arrow_data.styler if p.arrow_data.HasField("styler") else None
            display = _arrow(styler.display_values) if styler is not None else None
            out[path] = (kind, table, display, UUID.sub("T_", styler.styles) if styler else "",
                         styler.caption if styler else "", p.columns, tuple(p.column_order), p.id,
                         tuple(p.selection_mode), p.selection_default)
        elif kind == "plotly_chart":
            out[path] = (kind, UUID.sub("", p.spec), p.config)
        elif kind in ("markdown", "heading", "code", "alert", "metric", "exception", "text"):
            fields = {f.name: v for f, v in p.ListFields() if isinstance(v, (str, int, float, bool))}
            fields.pop("id", None)
            out[path] = (kind, tuple(sorted(fields.items())))
        else:
            out[path] = (kind,)
    return out


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if hasattr(a, "equals") and not isinstance(a, (str, bytes)):
        return a.equals(b)
    return a == b


def _short(value) -> str:
    text = repr(value)
    return text if len(text) < 160 else text[:157] + "..."


def compare_trees(browser: PageTree, client: PageTree, step: Step) -> None:
    a, b = summarize(browser), summarize(client)
    step.elements = len(b)
    step.widgets = len(client.widgets(mounted_only=False))
    for path, summary in b.items():
        if summary[0] == "dataframe" and summary[1] is not None:
            step.tables += 1
            step.table_cells += summary[1].num_rows * summary[1].num_columns
    for path in sorted(set(a) | set(b)):
        if path not in b:
            step.differences.append(f"{path}: only Chromium received {_short(a[path][:2])}")
        elif path not in a:
            step.differences.append(f"{path}: only the client received {_short(b[path][:2])}")
        elif not _same(a[path], b[path]):
            diff = [i for i, (x, y) in enumerate(zip(a[path], b[path])) if not _same(x, y)]
            chromium, client_side = [a[path][i] for i in diff], [b[path][i] for i in diff]
            step.differences.append(f"{path} {a[path][0]}: differs in field(s) {diff}: Chromium "
                                    f"{_short(chromium)} vs client {_short(client_side)}")
    if browser.query_string != client.query_string:
        step.differences.append(f"URL query: Chromium {browser.query_string!r} vs client {client.query_string!r}")


def rerun_fields(msg: BackMsg, tree: PageTree) -> dict:
    """A rerun message as comparable fields (widget states by id; cached messages by their delta path, since a
    message holding a random uuid, e.g. a Styler's, has another hash in every session)."""
    state = msg.rerun_script
    widgets = {}
    for w in state.widget_states.widgets:
        which = w.WhichOneof("value")
        value = getattr(w, which) if which else None
        if hasattr(value, "data"):
            value = list(value.data)
        widgets[w.id] = (which, value)
    return {"query_string": state.query_string, "page_script_hash": state.page_script_hash,
            "page_name": state.page_name, "widget_states": widgets,
            "cached_messages": sorted(tree.hash_paths.get(h, ("unknown hash", h)) for h in state.cached_message_hashes),
            "context_url": state.context_info.url, "fragment_id": state.fragment_id}


def compare_reruns(browser: BackMsg | None, client: BackMsg | None, step: Step, browser_tree: PageTree,
                   client_tree: PageTree) -> None:
    if browser is None or client is None:
        step.differences.append(f"rerun message missing: Chromium {browser is not None}, client {client is not None}")
        return
    a, b = rerun_fields(browser, browser_tree), rerun_fields(client, client_tree)
    for key in a:
        if a[key] != b[key]:
            if key == "widget_states":
                only_a = {k: v for k, v in a[key].items() if b[key].get(k) != v}
                only_b = {k: v for k, v in b[key].items() if a[key].get(k) != v}
                step.differences.append(f"rerun widget states: Chromium {_short(only_a)} vs client {_short(only_b)}")
            else:
                step.differences.append(f"rerun {key}: Chromium {_short(a[key])} vs client {_short(b[key])}")


# ---------------------------------------------------------------------------------------- Chromium side
class BrowserTab:
    """A Chromium page whose websocket frames are recorded and fed to a :class:`PageTree`."""

    def __init__(self, page):
        self.page = page
        self.tree = PageTree()
        self.sent: list[BackMsg] = []
        self.finished = 0
        self.last_frame = time.monotonic()
        page.on("websocket", self._on_websocket)

    def _on_websocket(self, ws) -> None:
        if not ws.url.endswith("/_stcore/stream"):
            return
        ws.on("framesent", self._sent)
        ws.on("framereceived", self._received)

    def _sent(self, payload) -> None:
        msg = BackMsg()
        msg.ParseFromString(payload if isinstance(payload, bytes) else payload.encode("latin-1"))
        self.sent.append(msg)

    def _received(self, payload) -> None:
        data = payload if isinstance(payload, bytes) else payload.encode("latin-1")
        self.last_frame = time.monotonic()
        msg = self.tree.decode(data)
        self.tree.apply(msg)
        if msg.WhichOneof("type") == "script_finished" and msg.script_finished != FINISHED.FINISHED_EARLY_FOR_RERUN:
            self.finished += 1

    async def settle(self, finished_before: int, timeout: float) -> None:
        """Wait for a finished run after ``finished_before``, the app idle, and 0.5 s without frames."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.finished > finished_before and time.monotonic() - self.last_frame > 0.5:
                if await self.page.locator(IDLE).count():
                    return
            await asyncio.sleep(0.1)
        raise TimeoutError(f"Chromium's page did not finish a run within {timeout:.0f} s")

    async def drawn_labels(self, tree: PageTree | None = None, patience: float = 5.0) -> set[str]:
        """Text lines of the widgets' labels on screen (a button's icon name is a line of its own). With
        ``tree``, read again for up to ``patience`` seconds until every widget the client mounted is on screen:
        on a busy machine the browser may still be drawing a long page (Ties & precision: a chart per system)
        when the app is idle, and a widget drawn late is not a difference."""
        drawn = await self._drawn_labels()
        deadline = time.monotonic() + patience
        while tree is not None and time.monotonic() < deadline and _missing(tree, drawn):
            await asyncio.sleep(0.25)
            drawn = await self._drawn_labels()
        return drawn

    async def _drawn_labels(self) -> set[str]:
        selector = ", ".join(f"[data-testid='{t}']" for t in sorted(set(TESTIDS.values())))
        texts = await self.page.evaluate(
            """(selector) => [...document.querySelectorAll(selector)].map((el) => {
                 const label = el.querySelector("[data-testid='stWidgetLabel']") || el.querySelector("label") || el;
                 return label.innerText;
               })""", selector)
        return {line.strip() for text in texts for line in text.splitlines() if line.strip()}


def _on_screen(label: str, drawn: set[str]) -> bool:
    return any(label == text or text.startswith(label) for text in drawn)


def _missing(tree: PageTree, drawn: set[str]) -> bool:
    """Whether a widget the client mounted has no label on screen (yet)."""
    return any(node.proto.label.strip() and tree.mounted(node.path) and not _on_screen(node.proto.label.strip(), drawn)
               for node in _controls(tree, mounted_only=False).values())


def _controls(tree: PageTree, mounted_only: bool = True) -> dict:
    """The widgets with a label (controls), by id: not a table whose rows can be selected."""
    return {widget_id: node for widget_id, node in tree.widgets(mounted_only).items() if node.kind != "dataframe"}


def check_drawn(tree: PageTree, drawn: set[str], step: Step) -> None:
    for widget_id, node in _controls(tree, mounted_only=False).items():
        label = node.proto.label.strip()
        if not label:
            continue
        on_screen = _on_screen(label, drawn)
        if tree.mounted(node.path) and not on_screen:
            step.differences.append(f"{node.path} {node.kind} {label!r}: mounted per the client, not drawn by Chromium")
        if not tree.mounted(node.path) and on_screen and sum(1 for n in _controls(tree, False).values()
                                                              if n.proto.label.strip() == label) == 1:
            step.differences.append(f"{node.path} {node.kind} {label!r}: inside a closed popover, yet drawn by "
                                    "Chromium")


def _pick_change(tree: PageTree, avoid: str = ""):
    """A sidebar selectbox with another option to pick: (widget id, label, new option)."""
    for widget_id, node in _controls(tree).items():
        if node.kind == "selectbox" and node.path[0] == 1 and len(node.proto.options) > 1:
            current = tree.widget_values.get(widget_id, (None, None))[1]
            others = [o for o in node.proto.options if o != current]
            wanted = node.proto.label in ("Benchmark", "Metric", "Precision")
            if others and wanted and f"({node.proto.label} " not in avoid:
                return widget_id, node.proto.label, others[0]
    for widget_id, node in _controls(tree).items():
        if node.kind == "selectbox" and len(node.proto.options) > 1:
            current = tree.widget_values.get(widget_id, (None, None))[1]
            return widget_id, node.proto.label, next(o for o in node.proto.options if o != current)
    return None


async def _choose(page, label: str, option: str) -> None:
    box = page.get_by_role("combobox", name=label, exact=True)
    await box.scroll_into_view_if_needed()
    await box.click()
    await page.get_by_role("option", name=option, exact=True).click()


async def _change_step(page, tab: BrowserTab, session: Session, result: Validation, timeout: float, name: str,
                       avoid: str = "") -> None:
    """Chromium picks another option of a sidebar selectbox; the session sets the same value; compare."""
    pick = _pick_change(session.tree, avoid)
    step = Step(name)
    result.steps.append(step)
    if pick is None:
        step.differences.append("no selectbox with two options to change")
        return
    widget_id, label, option = pick
    step.name = f"{name} ({label} → {option})"
    before, sent_before = tab.finished, len(tab.sent)
    await _choose(page, label, option)
    await tab.settle(before, timeout)
    changed = await session.change(widget_id, option)
    step.differences.extend(changed.errors)
    browser_reruns = [m for m in tab.sent[sent_before:] if m.WhichOneof("type") == "rerun_script"]
    compare_reruns(browser_reruns[0] if browser_reruns else None, session.sent[-1], step, tab.tree, session.tree)
    if len(browser_reruns) > 1:
        step.differences.append(f"Chromium sent {len(browser_reruns)} reruns for one change")
    compare_trees(tab.tree, session.tree, step)
    check_drawn(session.tree, await tab.drawn_labels(session.tree), step)


async def validate(url: str, timeout: float = 120.0, page_title: str | None = None,
                   session_class: type[Session] = Session) -> Validation:
    """Open ``url`` in Chromium and in a protocol session, make the same moves, compare (see module doc).
    ``session_class``: the client to check (a test passes a deliberately wrong one to see the check fail)."""
    from playwright.async_api import async_playwright

    started = time.monotonic()
    result = Validation(url=url)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(viewport={"width": 1400, "height": 1000})
            page = await context.new_page()
            page.set_default_timeout(timeout * 1000)
            tab = BrowserTab(page)
            session = session_class(url, timeout=timeout)
            session.keep_sent = True
            try:
                # 1. the first view
                await page.goto(url)
                await tab.settle(0, timeout)
                opened = await session.open()
                step = Step("default view")
                step.differences.extend(opened.errors)
                compare_reruns(tab.sent[0] if tab.sent else None, session.sent[0] if session.sent else None, step,
                               tab.tree, session.tree)
                compare_trees(tab.tree, session.tree, step)
                check_drawn(session.tree, await tab.drawn_labels(session.tree), step)
                result.steps.append(step)

                # 2. one control change; 4. (after the page switch) another one on the new page
                await _change_step(page, tab, session, result, timeout, "after a control change")
                # 3. one page switch
                pages = [p for p in session.tree.pages if p["page_script_hash"] != session.tree.page_hash]
                target = next((p for p in pages if p["page_name"] == page_title), pages[0] if pages else None)
                step = Step("after a page switch")
                if target is None:
                    step.differences.append("no other page to switch to")
                else:
                    step.name = f"after a page switch (→ {target['page_name']})"
                    before, sent_before = tab.finished, len(tab.sent)
                    nav = page.get_by_test_id("stSidebarNav").get_by_role("link", name=target["page_name"])
                    await nav.click()
                    await tab.settle(before, timeout)
                    switched = await session.switch_page(target["page_script_hash"])
                    step.differences.extend(switched.errors)
                    browser_reruns = [m for m in tab.sent[sent_before:] if m.WhichOneof("type") == "rerun_script"]
                    compare_reruns(browser_reruns[0] if browser_reruns else None, session.sent[-1], step,
                                   tab.tree, session.tree)
                    compare_trees(tab.tree, session.tree, step)
                    check_drawn(session.tree, await tab.drawn_labels(session.tree), step)
                result.steps.append(step)

                await _change_step(page, tab, session, result, timeout, "after a control change on that page",
                                   avoid=result.steps[1].name)
                others = sorted({m.WhichOneof("type") for m in tab.sent} - {"rerun_script"})
                if others:
                    result.steps[-1].differences.append(f"Chromium also sent {others}: the client does not")
            finally:
                await session.close()
                await context.close()
        finally:
            await browser.close()
    result.seconds = time.monotonic() - started
    return result


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the app's root, e.g. http://127.0.0.1:8501/")
    parser.add_argument("--page", default=None, help="title of the page to switch to (default: the second)")
    args = parser.parse_args()
    result = asyncio.run(validate(args.url, page_title=args.page))
    print(result.text())
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
