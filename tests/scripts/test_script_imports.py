"""The scripts in scripts/ import each other in one direction only: no cycle, counting imports inside functions
(make_real_runs.py once imported real_runs_readme.py, which imports make_real_runs.py; the README section is
now written by real_runs_readme.py's own command)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from needs import require_source

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"


def script_imports(folder: Path) -> dict[str, set[str]]:
    """Each script's name -> the other scripts of ``folder`` it imports anywhere in its body."""
    names = {path.stem for path in folder.glob("*.py")}
    graph = {}
    for path in sorted(folder.glob("*.py")):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
        graph[path.stem] = (imported & names) - {path.stem}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle, each once, as the list of its scripts from the alphabetically first one."""
    found = set()

    def walk(path: list[str]) -> None:
        for target in sorted(graph[path[-1]]):
            if target == path[0]:
                found.add(tuple(path))
            elif target not in path and target > path[0]:
                walk([*path, target])

    for start in sorted(graph):
        walk([start])
    return sorted(list(cycle) for cycle in found)


def test_the_cycle_finder_sees_an_import_inside_a_function(tmp_path):
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from c import x\n")
    (tmp_path / "c.py").write_text("import os\n\ndef g():\n    import a\n")
    (tmp_path / "d.py").write_text("import a\nimport c\n")
    assert cycles(script_imports(tmp_path)) == [["a", "b", "c"]]


def test_no_script_import_cycle():
    graph = script_imports(SCRIPTS)
    assert "make_real_runs" in graph["real_runs_readme"]  # the finder reads the real folder
    assert cycles(graph) == []


@pytest.mark.slow
def test_the_readme_command_rewrites_only_its_section(tmp_path, monkeypatch):
    """``python scripts/real_runs_readme.py README`` on the shipped data/real (about 10 s): one section,
    between its markers, with the shipped row count; the text around it untouched."""
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import real_runs_readme as readme

    rarb = require_source("rarb-mcr")
    target = tmp_path / "README.md"
    target.write_text(f"# before\n\n{readme.README_START}\nstale\n{readme.README_END}\n\n## after\n")
    done = subprocess.run([sys.executable, str(SCRIPTS / "real_runs_readme.py"), str(target), "--data", str(rarb)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    text = target.read_text()
    assert text.startswith(f"# before\n\n{readme.README_START}\n## Real runs\n") and text.endswith("\n\n## after\n")
    assert text.count(readme.README_START) == text.count(readme.README_END) == 1 and "stale" not in text
    files = sorted(str(p) for p in (REPO / "data" / "real" / "query_metrics").glob("*.parquet"))
    ((rows,),) = duckdb.sql(f"SELECT count(*) FROM read_parquet({files!r}, union_by_name = true)").fetchall()
    assert f" {rows:,} `query_metrics` rows" in text
