"""The dashboard uses Streamlit's, pandas' and Starlette's public API only, except in ui/internals.py: a private
hook (a Runtime method, a module flag, Styler._translate) or a replaced library function silently stops working
on an upgrade, so every such use lives in that one module, with the version it was written for and a test of
the behaviour it relies on (tests/ui/test_internals.py). This reads the dashboard's source: Streamlit only as
``import streamlit as st`` (no module from inside the package), no ``x._name`` attribute access except on
``self`` / ``cls`` (the dashboard's own private names are module-level or its own objects' attributes), and no
``setattr`` or attribute assignment on an object the dashboard did not make (a third-party module, class or
object: ``setattr(type(st.sidebar), ...)``, ``st.markdown = ...``): no Streamlit function is replaced for the
process. What a view draws reaches its snapshot because the dashboard draws a view's content through
ui/drawing.py, which notes each element in the run's record: no content element (``markdown``, ``dataframe``,
…: ``drawing.ELEMENTS``) is drawn on ``st`` itself or on an indexed column (``cols[0].metric``) outside that
module; the sidebar's elements (``st.sidebar.caption``, a sidebar container held in a name) are not part of the
view."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = [ROOT / "app.py", *sorted((ROOT / "ui").rglob("*.py")), *sorted((ROOT / "pages").glob("*.py"))]
ADAPTER = "ui/internals.py"
DRAWING = "ui/drawing.py"
OWN = ("ui", "evalcore", "pages")
ELEMENTS = ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success", "metric",
            "dataframe", "plotly_chart", "html")


def _third_party_names(tree: ast.Module) -> set[str]:
    """Names bound by imports of other packages (``st``, ``pd``, ``StylerRenderer``, ...)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names
                      if alias.name.split(".")[0] not in OWN}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] not in OWN \
                and node.module != "__future__":
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def _own(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _in_sidebar(node: ast.AST) -> bool:
    return any(isinstance(part, ast.Attribute) and part.attr == "sidebar" for part in ast.walk(node))


def unrecorded(source: str, name: str) -> list[str]:
    """Content elements drawn past the run's record: ``st.markdown(...)``, ``(where or st).dataframe(...)``,
    ``cols[0].metric(...)`` — anything but ``st.sidebar…`` or a container held in a name."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ELEMENTS:
            receiver = node.func.value
            on_st = any(isinstance(part, ast.Name) and part.id == "st" for part in ast.walk(receiver))
            if (on_st and not _in_sidebar(receiver)) or isinstance(receiver, ast.Subscript):
                found.append(f"{name}:{node.lineno}: {ast.unparse(node.func)} not recorded")
    return found


def violations(source: str, name: str) -> list[str]:
    tree = ast.parse(source, name)
    imported = _third_party_names(tree)
    found = []
    for node in ast.walk(tree):
        own = isinstance(node, ast.Attribute) and _own(node.value)
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") and not own:
            found.append(f"{name}:{node.lineno}: private attribute .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "streamlit":
            found.append(f"{name}:{node.lineno}: import from {node.module}")
        elif isinstance(node, ast.Import):
            found += [f"{name}:{node.lineno}: import {alias.name}"
                      for alias in node.names if alias.name.startswith("streamlit.")]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") \
                and node.args and not _own(node.args[0]):
            found.append(f"{name}:{node.lineno}: {node.func.id} on {ast.unparse(node.args[0])}")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                root = _root(target)
                if isinstance(target, ast.Attribute) and isinstance(root, ast.Name) and root.id in imported:
                    found.append(f"{name}:{node.lineno}: assignment to {ast.unparse(target)}")
    return sorted(found, key=lambda hit: int(hit.split(":")[1]))


def test_the_dashboard_reaches_no_private_api_outside_the_adapter():
    assert len(DASHBOARD) > 10
    found = {str(path.relative_to(ROOT)): violations(path.read_text(), str(path.relative_to(ROOT)))
             for path in DASHBOARD}
    assert [v for file, hits in found.items() if file != ADAPTER for v in hits] == []
    kinds = {hit.split(": ", 1)[1].split(" ")[0] for hit in found[ADAPTER]}
    assert kinds == {"private"}, "the adapter holds the Styler hook, and replaces nothing"


def test_no_streamlit_object_is_patched_and_a_planted_patch_is_found():
    """Nowhere in the dashboard, the adapter included, is a third-party object given an attribute; the same
    check run over a real module with one patching line planted in it finds exactly that line."""
    hits = [hit for path in DASHBOARD for hit in violations(path.read_text(), str(path.relative_to(ROOT)))
            if any(kind in hit for kind in (": setattr", ": delattr", ": assignment"))]
    assert hits == []
    recorder = (ROOT / "ui" / "recorder.py").read_text()
    lines = len(recorder.splitlines())
    planted = recorder + "\nsetattr(type(st.sidebar), 'markdown', parts)\nst.dataframe = parts\n"
    assert violations(planted, "ui/recorder.py") == [f"ui/recorder.py:{lines + 2}: setattr on type(st.sidebar)",
                                                    f"ui/recorder.py:{lines + 3}: assignment to st.dataframe"]


def test_every_content_element_of_a_view_goes_through_the_record():
    from ui import drawing

    assert ELEMENTS == drawing.ELEMENTS
    found = [hit for path in DASHBOARD if str(path.relative_to(ROOT)) != DRAWING
             for hit in unrecorded(path.read_text(), str(path.relative_to(ROOT)))]
    assert found == []


def test_the_record_check_sees_an_element_drawn_past_it():
    page = ("st.markdown('x')\n(where or st).dataframe(frame)\ncols[0].metric('a', 1)\nst.sidebar.caption('s')\n"
            "st.sidebar.popover('p').warning('w')\nbox.markdown('b')\ndrawing.markdown('y')\n"
            "drawing.into(cols[0]).metric('a', 1)\nst.columns(2)\n")
    assert unrecorded(page, "page.py") == ["page.py:1: st.markdown not recorded",
                                           "page.py:2: (where or st).dataframe not recorded",
                                           "page.py:3: cols[0].metric not recorded"]


def test_the_check_sees_the_hooks_the_dashboard_once_had():
    hooks = ("from streamlit import runtime\nfrom streamlit.delta_generator import x\n"
             "delta_generator._use_warning_has_been_displayed = True\nstyler._translate = lambda: None\n"
             "self._lock = None\n")
    assert violations(hooks, "old.py") == [
        "old.py:1: import from streamlit",
        "old.py:2: import from streamlit.delta_generator",
        "old.py:3: private attribute ._use_warning_has_been_displayed",
        "old.py:4: private attribute ._translate",
    ]


def test_the_check_sees_setattr_and_assignment_on_third_party_objects():
    patches = ("import streamlit as st\nimport pandas as pd\nfrom starlette.responses import FileResponse\n"
               "from ui import charts\n"
               "setattr(type(st.sidebar), 'markdown', wrapper)\nsetattr(st, 'title', wrapper)\n"
               "st.markdown = wrapper\npd.DataFrame.to_html = wrapper\nFileResponse.set_stat_headers = wrapper\n"
               "setattr(self, 'x', 1)\ncharts.PALETTE = []\nthing = object()\nwrapper.marked = True\n")
    assert violations(patches, "new.py") == [
        "new.py:5: setattr on type(st.sidebar)",
        "new.py:6: setattr on st",
        "new.py:7: assignment to st.markdown",
        "new.py:8: assignment to pd.DataFrame.to_html",
        "new.py:9: assignment to FileResponse.set_stat_headers",
    ]
