"""The package as a user installs it: a wheel built (not an editable install) from the repository's files holds
every file under evalcore/; installed with its dependencies into a fresh virtual environment that cannot see
the repository (another folder, no PYTHONPATH), its ``evalcore`` command answers ``leaderboard`` and
``evaluate`` on the shipped data exactly as the source tree does, without Streamlit; with the ``app`` extra,
the dashboard's first page renders from that environment.

Slow (about a minute: the wheel build, two installs from pip's cache, a Streamlit run); docs/testing.md.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from evalcore.cli import main

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"
RUN = DATA / "runs" / "rar-b_WinoGrande_full_all-MiniLM-L6-v2_fp32.parquet"
QRELS = DATA / "runs" / "rar-b_WinoGrande_full_qrels.parquet"
# what could let the fresh environment see the repository or the developer's settings
HIDDEN = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "TIEBREAK_DATA", "TIEBREAK_CACHE",
          "TIEBREAK_SOURCES")
TIMEOUT = 600


def repository_files() -> list[str]:
    """The files a commit of this tree would hold: tracked, plus new files that are not ignored."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode()
    return sorted(f for f in listed.split("\0") if f and (REPO / f).is_file())


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in HIDDEN}
    return {**env, "PYTHONNOUSERSITE": "1", **extra}


def run(command: list, cwd: Path, **extra_env: str) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=clean_env(**extra_env), capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert done.returncode == 0, f"{' '.join(map(str, command))}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


def pip_install(python: Path, requirement: str, cwd: Path) -> None:
    """The test environment's pip installing into ``python``'s environment (``--python``: the fresh one needs
    no pip of its own); no byte-compiling (half the time of the install)."""
    run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-compile", requirement], cwd)


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> Path:
    """A folder outside the repository, where the installed command runs."""
    return tmp_path_factory.mktemp("elsewhere")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel pip builds (with build isolation, as for a user) from a copy of the repository's files."""
    source = tmp_path_factory.mktemp("clone")
    for name in repository_files():
        if not name.startswith("data/"):  # the shipped data is not part of the package
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    dist = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", dist, source], source)
    (built,) = dist.glob("*.whl")
    return built


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheel, outside) -> Path:
    """A fresh virtual environment with the wheel and its dependencies; its bin/ folder."""
    root = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", "--without-pip", root], outside)
    pip_install(root / "bin" / "python", str(wheel), outside)
    return root / "bin"


def in_source_tree(argv: list[str]) -> str:
    """What the repository's own evalcore prints for ``argv``."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


def test_the_wheel_holds_every_file_under_evalcore(wheel):
    shipped = set(zipfile.ZipFile(wheel).namelist())
    expected = {name for name in repository_files() if name.startswith("evalcore/")}
    assert expected - shipped == set(), "missing from the wheel (a file other than .py needs [tool.setuptools.package-data])"
    (metadata,) = {name.split("/")[0] for name in shipped - expected}  # nothing else beside the package
    assert metadata.endswith(".dist-info")


def test_the_installed_package_comes_from_the_wheel_and_needs_no_streamlit(venv, outside):
    code = ("import importlib.util, evalcore, evalcore.store, evalcore.commands; "
            "print(evalcore.__file__); print(importlib.util.find_spec('streamlit'))")
    where, streamlit = run([venv / "python", "-c", code], outside).stdout.splitlines()
    assert Path(where).is_relative_to(venv.parent) and not Path(where).is_relative_to(REPO)
    assert streamlit == "None"


@pytest.mark.parametrize("argv", [
    ["leaderboard", "--benchmark", "rar-b", "--format", "csv"],  # published task-level scores
    ["leaderboard", "--benchmark", "rar-b", "--setting", "mcr", "--metric", "p@1", "--format", "csv"],  # per-query
], ids=["published", "per-query"])
def test_installed_leaderboard_answers_from_another_folder(venv, outside, argv):
    argv = [*argv, "--data", str(DATA)]
    printed = run([venv / "evalcore", *argv], outside).stdout
    assert printed == in_source_tree(argv)
    header, *rows = printed.splitlines()
    columns = header.split(",")
    assert columns[:5] == ["rank", "system", "G", "queries_lo", "queries_hi"] and "ARCChallenge" in columns
    assert {"tasks_rank_lo", "tasks_rank_hi", "queries_tier", "level", "ranks"} <= set(columns)
    systems = {row.split(",")[columns.index("system")] for row in rows}
    if "mcr" in argv:  # our own per-query runs
        assert {"tiebreak-run/all-MiniLM-L6-v2", "tiebreak-run/bm25s", "tiebreak-run/constant"} <= systems
    else:  # MTEB's published results
        assert len(systems) > 100 and "GritLM/GritLM-7B" in systems


def test_installed_evaluate_scores_a_shipped_run(venv, outside):
    argv = ["evaluate", "--run", str(RUN), "--qrels", str(QRELS), "--format", "json"]
    printed = run([venv / "evalcore", *argv], outside).stdout
    assert printed == in_source_tree(argv)
    rows = {row["metric"]: row for row in json.loads(printed)}
    assert set(rows) == {"ndcg@10", "mrr@10", "recall@100"}
    queries = pq.read_table(QRELS).column("qid").unique()
    assert rows["ndcg@10"]["n_queries"] == len(queries) == 1267
    assert 0 < rows["ndcg@10"]["expected"] < 1


def test_the_app_extra_renders_the_dashboard(venv, wheel, outside, tmp_path):
    pip_install(venv / "python", f"{wheel}[app]", outside)
    for name in repository_files():  # the dashboard's own files, without evalcore/: that comes from the wheel
        if name == "app.py" or name.startswith(("ui/", "pages/")):
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, tmp_path / name)
    code = ("import json, evalcore; from streamlit.testing.v1 import AppTest; "
            "at = AppTest.from_file('ui/entry/dashboard.py', default_timeout=300).run(); "
            "print(json.dumps({'evalcore': evalcore.__file__, 'exceptions': [e.value for e in at.exception], "
            "'titles': [t.value for t in at.title], "
            "'systems': [str(s) for s in at.dataframe[0].value['system']]}))")
    page = json.loads(run([venv / "python", "-c", code], tmp_path, TIEBREAK_DATA=str(DATA)).stdout.splitlines()[-1])
    assert Path(page["evalcore"]).is_relative_to(venv.parent)
    assert page["exceptions"] == [] and page["titles"] == ["Leaderboard"]
    board = in_source_tree(["leaderboard", "--benchmark", "rar-b", "--format", "csv", "--data", str(DATA)])
    header, top = board.splitlines()[:2]
    first = top.split(",")[header.split(",").index("system")]
    assert page["systems"][0] == first  # the page's top row is the CLI's
