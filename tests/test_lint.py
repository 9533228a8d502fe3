"""``ruff check`` (rules in pyproject.toml's ``[tool.ruff]``) finds nothing in the repository, and the rules it
runs do catch an unused import, an undefined name and a mutable default argument."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from needs import require_module

REPO = Path(__file__).resolve().parents[1]
require_module("ruff")


def ruff_check(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_repository_passes_the_linter():
    done = ruff_check(".")
    assert done.returncode == 0, f"ruff check found (fix them, or `ruff check --fix`):\n{done.stdout}{done.stderr}"


def test_the_linter_catches_what_it_is_configured_for(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("import os\n\n\ndef f(items=[]):\n    return undefined_name\n")
    done = ruff_check("--config", str(REPO / "pyproject.toml"), str(planted), cwd=tmp_path)
    assert done.returncode == 1
    assert {line.split()[1] for line in done.stdout.splitlines() if line.startswith("planted.py:")} == \
        {"F401", "F821", "B006"}
