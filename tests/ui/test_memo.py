"""ui/memo.py: every memo of the dashboard is registered there, clear_answers() empties each one, and
docs/ARCHITECTURE.md's table "What is kept, and under which key" lists exactly the registry."""
from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import plotly.graph_objects as go
import pytest

from evalcore.store import Condition
from ui import memo

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from candidate_data import write_tasks  # noqa: E402

UI_MODULES = sorted(f"ui.{p.stem}" for p in (ROOT / "ui").glob("*.py") if p.stem != "__init__")
DASHBOARD = [ROOT / "app.py", *sorted((ROOT / "ui").glob("*.py")), *sorted((ROOT / "pages").glob("*.py"))]
MEMO_MAKERS = {"lru_cache", "cache", "cache_data", "cache_resource"}


def _registry() -> dict[str, memo.Memo]:
    for name in UI_MODULES:
        importlib.import_module(name)
    return memo.REGISTRY


def _fill_every_memo(synthetic_dir: Path, tmp_path: Path, monkeypatch) -> list:
    """Use each registered memo once, as the dashboard does; returns what must stay alive meanwhile (the
    static-files middleware, which the registry holds weakly, as the server holds it)."""
    from evalcore.store import catalogue
    from evalcore.uncertainty import intervals
    from ui import board, charts, data, sidebar, static_assets, upload

    data.data_dir_from(["--data", str(synthetic_dir)], {})
    snap = data.snapshot(synthetic_dir)
    conditions = data.facets(snap)["conditions"]
    row = conditions.iloc[0]
    chosen = {"benchmark": row["benchmark"], "setting": row["setting"]}
    sidebar.precision_label(snap, conditions, chosen, row["precision"])
    sidebar.need_rows(snap, sidebar.rows_with_query_data)
    cond = Condition(row["benchmark"], row["metric"], row["setting"], None, row["precision"], "oblivious")
    board._remembered_pointer(snap, cond, True)
    monkeypatch.setattr(charts.drawing.st, "plotly_chart", lambda figure, **kwargs: None)
    charts.draw_remembered(("test-memo", 1), go.Figure)
    tasks = write_tasks(tmp_path / "with-tasks")
    assert data.task_texts(data.Snapshot(tasks, "x"), "rar-b", "Alpha") is not None
    folder = tasks / "tasks" / "rar-b"
    versions = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.glob("*.parquet")))
    assert data.inputs_zip(str(tasks), versions, "rar-b", "mcr")
    (tmp_path / "static").mkdir()
    (tmp_path / "static" / "a.js").write_text("x")
    middleware = static_assets.StaticFromMemory(None, tmp_path / "static")
    assert middleware._file({"path": "/static/a.js", "headers": []}) is not None
    session: dict = {}
    monkeypatch.setattr(upload, "_session", lambda: session)
    upload.remember(("a question",), lambda: 1)
    catalogue._bounded("ndcg@10")
    intervals.resamples(3)
    return [middleware]


def test_clear_answers_empties_every_registered_memo(synthetic_dir, tmp_path, monkeypatch):
    from ui import data

    registry = _registry()
    data.clear_answers()
    alive = _fill_every_memo(synthetic_dir, tmp_path, monkeypatch)
    kept = {name: m.size() for name, m in registry.items() if m.scope != "disk"}
    assert [name for name, size in kept.items() if size == 0] == [], "a memo this test does not fill"
    data.clear_answers()
    assert {name: m.size() for name, m in registry.items() if m.scope != "disk"} == dict.fromkeys(kept, 0)
    assert alive[0].files == {}
    assert {m.name for m in registry.values() if m.scope == "disk"} == {"a per-query file's sums"}


def _memo_makers(path: Path) -> list[str]:
    """``name:line`` of each memo made without ui/memo.py: functools' lru_cache / cache, st.cache_*."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and node.attr in MEMO_MAKERS or isinstance(node, ast.ImportFrom) \
                and node.module == "functools" and {alias.name for alias in node.names} & MEMO_MAKERS:
            found.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}")
    return found


def test_every_memo_is_made_through_the_registry():
    outside = [hit for path in DASHBOARD if path.name != "memo.py" for hit in _memo_makers(path)]
    # ui/board.py is being rewritten; until then its one lru_cache is listed in the registry (memo.ELSEWHERE)
    assert [hit for hit in outside if not hit.startswith("ui/board.py:")] == []
    assert len([hit for hit in outside if hit.startswith("ui/board.py:")]) <= 1


def test_every_lru_cache_of_evalcore_and_board_is_listed():
    registry = _registry()
    made = set()
    for path in [*sorted((ROOT / "evalcore").rglob("*.py")), ROOT / "ui" / "board.py"]:
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any(
                    "lru_cache" in ast.unparse(d) or ast.unparse(d).endswith("cache") for d in node.decorator_list):
                made.add((module, node.name))
    assert made == set(memo.ELSEWHERE.values())
    assert all(name in registry for name in memo.ELSEWHERE)


def _documented() -> list[tuple[str, str, str, str]]:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    section = text.split("## What is kept, and under which key", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]  # the header row left out
    cells = [[re.sub(r"`", "", cell).strip() for cell in row.strip("|").split(" | ")] for row in rows]
    return [tuple(row) for row in cells if not set(row[0]) <= {"-"}]


def test_the_architecture_table_lists_exactly_the_registry():
    registry = _registry()
    documented = _documented()
    assert len(documented) == len({row[0] for row in documented}), "a memo named twice in the table"
    assert sorted(documented) == sorted((m.name, m.where, m.scope, m.key) for m in registry.values())


def test_a_memo_needs_a_known_scope_a_clear_unless_on_disk_and_one_place():
    with pytest.raises(ValueError, match="scope"):
        memo.listed("x", "ui/x.py", "forever", "k", clear=lambda: None)
    with pytest.raises(ValueError, match="only a memo on disk"):
        memo.listed("x", "ui/x.py", "process", "k")
    with pytest.raises(ValueError, match="two memos named"):
        memo.listed("each answer", "ui/elsewhere.py", "process", "k", clear=lambda: None)
    assert "x" not in memo.REGISTRY
