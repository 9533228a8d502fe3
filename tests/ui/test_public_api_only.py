"""The dashboard uses Streamlit's and pandas' public API only: a private hook (a Runtime method, a module flag,
Styler._translate) silently stops working on an upgrade. This reads the dashboard's source: Streamlit only as
``import streamlit as st`` (no module from inside the package), and no ``x._name`` attribute access except on
``self`` / ``cls`` (the dashboard's own private names are module-level or its own objects' attributes)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = [ROOT / "app.py", *sorted((ROOT / "ui").rglob("*.py")), *sorted((ROOT / "pages").glob("*.py"))]


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
    assert [v for path in DASHBOARD for v in violations(path.read_text(), str(path.relative_to(ROOT)))] == []


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
