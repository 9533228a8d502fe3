"""The dashboard uses Streamlit's, pandas' and Starlette's public API only, except in ui/internals.py: a private
hook (a Runtime method, a module flag, Styler._translate) or a replaced library function silently stops working
on an upgrade, so every such use lives in that one module, with the version it was written for and a test of
the behaviour it relies on (tests/ui/test_internals.py). This reads the dashboard's source: Streamlit only as
``import streamlit as st`` (no module from inside the package), no ``x._name`` attribute access except on
``self`` / ``cls`` (the dashboard's own private names are module-level or its own objects' attributes), and no
``setattr`` or attribute assignment on an object the dashboard did not make (a third-party module, class or
object: ``setattr(type(st.sidebar), ...)``, ``st.markdown = ...``)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = [ROOT / "app.py", *sorted((ROOT / "ui").rglob("*.py")), *sorted((ROOT / "pages").glob("*.py"))]
ADAPTER = "ui/internals.py"
OWN = ("ui", "evalcore", "pages")


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
    assert kinds == {"private", "setattr"}, "the adapter holds the Styler hook and the element wrapping"


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
