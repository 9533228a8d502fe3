"""The dashboard uses Streamlit's and pandas' public API only: a private hook (a Runtime method, a module flag,
Styler._translate) silently stops working on an upgrade. This reads the dashboard's source: Streamlit only as
``import streamlit as st`` (no module from inside the package), and no ``x._name`` attribute access except on
``self`` / ``cls`` (the dashboard's own private names are module-level or its own objects' attributes)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = [ROOT / "app.py", *sorted((ROOT / "ui").rglob("*.py")), *sorted((ROOT / "pages").glob("*.py"))]
# The one hook kept because it measurably matters (ui/tables.py `_with_precomputed_rendering`: pandas' Styler
# rendering on every rerun), pinned to the tested Streamlit and pandas minors in requirements.txt and guarded by
# tests/ui/test_tables.py::test_the_rendering_hook_spares_pandas_the_per_cell_work.
KEPT = {("ui/tables.py", "_compute"), ("ui/tables.py", "_translate")}


def violations(source: str, name: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, name)):
        own = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") and not own:
            found.append(f"{name}:{node.lineno}: private attribute .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "streamlit":
            found.append(f"{name}:{node.lineno}: import from {node.module}")
        elif isinstance(node, ast.Import):
            found += [f"{name}:{node.lineno}: import {alias.name}"
                      for alias in node.names if alias.name.startswith("streamlit.")]
    return found


def test_the_dashboard_reaches_no_private_api():
    assert len(DASHBOARD) > 10
    found = [v for path in DASHBOARD for v in violations(path.read_text(), str(path.relative_to(ROOT)))]
    assert [v for v in found if (v.split(":")[0], v.rsplit(".", 1)[-1]) not in KEPT] == []
    assert {(v.split(":")[0], v.rsplit(".", 1)[-1]) for v in found} == KEPT, "a kept hook that is gone leaves KEPT"


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
