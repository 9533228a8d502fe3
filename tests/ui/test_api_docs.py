"""docs/api.md's examples, run as they are written against a live ``streamlit run app.py`` on the shipped data
(its address in place of ``localhost:8501``): the shell's curl, Python's ``requests`` and ``pandas``, and
JavaScript's ``fetch`` in Node. Each must finish without an error and print the facts the page says it prints —
the same top systems, ETag revalidation answered 304, the refused keys named — checked against the API's own
JSON. Reproduce: ``python -m pytest tests/ui/test_api_docs.py -q`` (slow marker: a server starts)."""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from test_browser import start_server, stop_server  # noqa: E402

pytestmark = pytest.mark.slow
DOC = ROOT / "docs" / "api.md"
SHOWN_BASE = "http://localhost:8501"
MCR_BF16 = "bench=rar-b&setting=mcr&metric=p%401&instr=without&prec=bf16"


def examples() -> list[tuple[str, str]]:
    """(language, code) of every fenced block under docs/api.md's "## Examples", in order."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Examples\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)


def example(language: str, index: int = 0) -> str:
    found = [code for lang, code in examples() if lang == language]
    assert len(found) > index, f"docs/api.md § Examples has no {language} block number {index + 1}"
    return found[index]


def test_the_examples_cover_curl_requests_pandas_and_fetch():
    blocks = examples()
    assert [lang for lang, _ in blocks] == ["bash", "python", "python", "javascript"]
    assert "curl" in blocks[0][1] and "import requests" in blocks[1][1] and "import pandas" in blocks[2][1]
    assert "fetch(" in blocks[3][1]
    assert all(SHOWN_BASE in code for _, code in blocks), "every example names the server the same way"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMLIT_", "TIEBREAK_API_CORS"))}
    proc, base = start_server(ROOT / "data", tmp_path_factory.mktemp("api-docs") / "streamlit.log", env=env)
    try:
        yield base
    finally:
        stop_server(proc)


def api(base: str, path: str) -> dict:
    with urllib.request.urlopen(f"{base}/api/v1/{path}", timeout=180) as response:
        return json.loads(response.read())


def run(command: list[str], code: str, base: str) -> list[str]:
    venv_bin = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}")  # python3 = this one
    done = subprocess.run([*command, code.replace(SHOWN_BASE, base)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env=env)
    assert done.returncode == 0, f"{command[0]} example failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout.strip().splitlines()


def test_the_curl_example(server):
    lines = run(["bash", "-euo", "pipefail", "-c"], example("bash"), server)
    top = api(server, f"leaderboard?{MCR_BF16}")["ranked"][:3]
    assert ast.literal_eval(lines[0]) == [(r["rank"], r["system"], r["G"]) for r in top]
    assert lines[1] == "304"
    assert sorted(ast.literal_eval(lines[2])) == ["colour", "level"]


def test_the_requests_example(server):
    lines = run([sys.executable, "-c"], example("python", 0), server)
    board = api(server, f"leaderboard?{MCR_BF16}&ranks=simultaneous")
    assert lines[0].split() == [board["ranked"][0]["system"], "simultaneous", "gzip"]
    assert lines[1] == "304"


def test_the_pandas_example(server):
    lines = run([sys.executable, "-c"], example("python", 1), server)
    board = api(server, "leaderboard?bench=rar-b&setting=mcr&metric=p%401&instr=without")
    assert lines[0].split() == ["rank", "system", "G", "queries_lo", "queries_hi"]
    assert [line.split()[1] for line in lines[1:4]] == [r["system"] for r in board["ranked"][:3]]
    flips = api(server, "rank-flips?bench=rar-b&setting=mcr&metric=p%401&instr=without&flip_a=fp32&flip_b=bf16")
    tau, systems = lines[4].split()
    assert float(tau) == round(flips["kendall_tau_b"], 4) and int(systems) == len(flips["ranks"])
    assert lines[5] == f"{len(api(server, 'conditions')['conditions'])} conditions"


def test_the_fetch_example(server):
    node = shutil.which("node")
    if node is None:
        from needs import missing

        missing("the JavaScript example needs Node 18 or later (apt-get install nodejs)")
    lines = run([node, "--input-type=module", "-e"], example("javascript"), server)
    top = api(server, f"leaderboard?{MCR_BF16}")["ranked"][:3]
    assert [line.split() for line in lines[:3]] == [[str(r["rank"]), r["system"], f"{r['G']:.4f}"] for r in top]
    assert lines[3] == "304"
