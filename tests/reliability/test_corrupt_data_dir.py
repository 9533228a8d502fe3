"""Corrupt data directory: every kind of bad file next to good ones. The store and the CLI
(``leaderboard --data DIR``) load everything else, and name each skipped file with the reason: in
``Store.skipped`` and as one ``warning: skipped FILE: REASON`` line per file on the CLI's stderr.

Tests run as root, so ``chmod 000`` does not make a file unreadable; unreadability is produced with a
dangling symlink, a zero-byte file, a file that is not parquet at all, a truncated file and damaged pages.
A FIFO named ``*.parquet`` (opening it would block forever) must not hang the load.
"""
from __future__ import annotations

import contextlib
import io
import os
import signal
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.cli import main
from evalcore.store import Condition, Store
from needs import require_module

SYSTEMS = ["alpha", "beta"]
TASKS = ["T1", "T2"]


def query_metrics(system: str, benchmark: str = "bench") -> pd.DataFrame:
    rows = []
    for t, task in enumerate(TASKS):
        for q in range(5):
            value = 0.2 + 0.1 * q + 0.05 * t + (0.1 if system == "alpha" else 0.0)
            rows.append({"system": system, "benchmark": benchmark, "task": task, "setting": "full",
                         "instruction": False, "precision": "fp32", "qid": f"q{q}", "metric": "ndcg@10",
                         "oblivious": value, "expected": value, "min": value - 0.05, "max": value + 0.05,
                         "tie_policy": "docid-desc", "n_candidates": 100, "tied_at_cutoff": q == 0,
                         "source": "test"})
    return pd.DataFrame(rows)


def good_bytes(tmp: Path) -> bytes:
    path = tmp / "scratch.parquet"
    query_metrics("ghost").to_parquet(path)
    data = path.read_bytes()
    path.unlink()
    return data


@pytest.fixture()
def corrupt_dir(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A data dir with two good query_metrics files, good systems, and one bad file of each kind.
    Returns (dir, {bad file name: a word its skip reason must contain})."""
    data = tmp_path / "data"
    (data / "good").mkdir(parents=True)
    for system in SYSTEMS:
        query_metrics(system).to_parquet(data / "good" / f"{system}.parquet")
    pd.DataFrame({"system": SYSTEMS, "display_name": ["Alpha", "Beta"]}).to_parquet(data / "systems.parquet")
    bad = data / "bad"
    bad.mkdir()
    whole = good_bytes(tmp_path)
    (bad / "truncated.parquet").write_bytes(whole[: len(whole) // 2])
    (bad / "empty.parquet").write_bytes(b"")
    (bad / "not_parquet.parquet").write_text("qid docid score\nthis is a CSV, not parquet\n")
    (bad / "magic_only.parquet").write_bytes(b"PAR1" + b"\x00" * 64 + b"PAR1")
    pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), bad / "foreign.parquet")
    pq.write_table(pa.table({"system": [1], "display_name": [2.0]}), bad / "wrong_types.parquet")
    damaged = bytearray(whole)  # footer intact, data pages overwritten
    damaged[8: len(damaged) // 2] = b"\xff" * (len(damaged) // 2 - 8)
    (bad / "damaged_pages.parquet").write_bytes(bytes(damaged))
    (bad / "dangling.parquet").symlink_to(tmp_path / "does-not-exist.parquet")
    os.mkfifo(bad / "fifo.parquet")  # is not a regular file: must be passed over, never opened
    (bad / ".half-written.parquet.abc123.tmp").write_bytes(whole[:100])  # an atomic writer's leftover
    (data / "spark_style.parquet").mkdir()  # a directory named *.parquet holds part files
    query_metrics("gamma").to_parquet(data / "spark_style.parquet" / "part-00000.parquet")
    expected = {"truncated.parquet": "unreadable", "empty.parquet": "unreadable",
                "not_parquet.parquet": "unreadable", "magic_only.parquet": "unreadable",
                "foreign.parquet": "foreign schema", "wrong_types.parquet": "foreign schema",
                "damaged_pages.parquet": "unreadable", "dangling.parquet": "unreadable"}
    return data, expected


@contextlib.contextmanager
def time_limit(seconds: int):
    def on_alarm(signum, frame):
        raise TimeoutError(f"took longer than {seconds}s (a FIFO opened?)")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_store_loads_everything_else_and_names_each_skipped_file(corrupt_dir):
    data, expected = corrupt_dir
    with time_limit(60):
        store = Store(data)
    skipped = {Path(item.path).name: item.reason for item in store.skipped}
    assert set(skipped) == set(expected), skipped
    for name, word in expected.items():
        assert word in skipped[name], (name, skipped[name])
        assert "\n" not in skipped[name]
    table = store.task_table(Condition("bench"))
    assert sorted(table["system"].unique()) == ["alpha", "beta", "gamma"]
    assert len(table) == 3 * len(TASKS)
    assert store.leaderboard(Condition("bench")).ranked["system"].tolist() == ["alpha", "beta", "gamma"]
    assert set(store.systems()["system"]) >= set(SYSTEMS)
    diff = store.query_diff(["alpha", "beta"], Condition("bench"), "T1")
    assert set(diff["system"]) == {"alpha", "beta"}


def test_cli_leaderboard_warns_once_per_skipped_file_on_stderr(corrupt_dir):
    data, expected = corrupt_dir
    out, err = io.StringIO(), io.StringIO()
    with time_limit(60), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["leaderboard", "--benchmark", "bench", "--data", str(data), "--format", "csv"])
    assert code == 0, err.getvalue()
    ranked = pd.read_csv(io.StringIO(out.getvalue()))
    assert ranked["system"].tolist() == ["alpha", "beta", "gamma"]
    warnings = err.getvalue().strip().splitlines()
    assert len(warnings) == len(expected), warnings
    for name, word in expected.items():
        line = next(w for w in warnings if f"/{name}: " in w)
        assert line.startswith("evalcore leaderboard: warning: skipped ") and word in line, line


def test_file_corrupted_after_load_is_skipped_on_reload(corrupt_dir):
    """A file that goes bad while the app runs: is_stale() notices, reload() skips it, the rest stays."""
    data, expected = corrupt_dir
    store = Store(data)
    beta = data / "good" / "beta.parquet"
    beta.write_bytes(beta.read_bytes()[:200])
    assert store.is_stale()
    store.reload()
    assert "beta.parquet" in {Path(item.path).name for item in store.skipped}
    assert sorted(store.task_table(Condition("bench"))["system"].unique()) == ["alpha", "gamma"]


def test_invalid_utf8_in_result_strings_is_skipped(tmp_path):
    """A query_metrics file whose string page holds invalid UTF-8 (footer intact) is skipped, named, and
    never reaches pandas as undecodable text."""
    data = tmp_path / "data"
    data.mkdir()
    query_metrics("alpha").to_parquet(data / "good.parquet")
    path = data / "bad_utf8.parquet"
    query_metrics("zzzzzzzzzz").to_parquet(path, compression=None)
    raw = bytearray(path.read_bytes())
    at = raw.index(b"zzzzzzzzzz")
    raw[at: at + 2] = b"\xff\xfe"
    path.write_bytes(bytes(raw))
    store = Store(data)
    assert store.task_table(Condition("bench"))["system"].unique().tolist() == ["alpha"]
    reasons = {Path(item.path).name: item.reason for item in store.skipped}
    assert "encoding" in reasons["bad_utf8.parquet"], reasons


def test_dashboard_lists_skipped_files_and_draws_the_rest(corrupt_dir, monkeypatch):
    """The app side: the sidebar names every skipped file and why; the leaderboard still draws."""
    AppTest = require_module("streamlit.testing.v1").AppTest

    data, expected = corrupt_dir
    monkeypatch.setenv("TIEBREAK_DATA", str(data))
    from ui.navigation import MAIN_SCRIPT

    app = AppTest.from_file(str(MAIN_SCRIPT), default_timeout=120)
    with time_limit(180):
        app.run()
    assert not app.exception, app.exception
    boxes = [e for e in app.sidebar.expander if "skipped" in e.label]
    assert boxes and boxes[0].label.startswith(f"{len(expected)} data file"), [e.label for e in app.sidebar.expander]
    shown = " ".join(caption.value for caption in boxes[0].caption)
    for name in expected:
        assert name in shown, (name, shown)
    assert "could not be drawn" not in " ".join(e.value for e in app.error)
    assert any("alpha" in str(frame.value.to_dict()) for frame in app.dataframe)


UNREADABLE_DATA_COMMANDS = {
    "leaderboard --data": ("leaderboard", "--benchmark", "bench", "--data", "{data}"),
    "explain --system": ("explain", "--run", "{run}", "--qrels", "{qrels}", "--system", "alpha", "--benchmark", "bench",
                         "--task", "T1", "--data", "{data}"),
    "tasks export": ("tasks", "export", "--benchmark", "rar-b", "--setting", "mcr", "--out", "{out}", "--data",
                     "{data}"),
    "leaderboard --candidate": ("leaderboard", "--benchmark", "rar-b", "--setting", "mcr", "--candidate", "{run}",
                                "--data", "{data}"),
}


@pytest.mark.parametrize("command", sorted(UNREADABLE_DATA_COMMANDS))
@pytest.mark.parametrize("mode", [0o000, 0o600], ids=["no rights", "no right to enter"])
def test_a_data_folder_the_user_cannot_read_is_one_line(command, mode):
    """A data folder its user may not list or enter ended in a PermissionError traceback (from the task manifest's
    ``exists``); now one line naming the folder, exit code 2, nothing written. Run as a user the permission bits
    bind (tests run as root: see tests/unprivileged.py)."""
    from unprivileged import evalcore_as_user, shared_folder

    with shared_folder() as folder:
        data = folder / "data"
        data.mkdir()
        query_metrics("alpha").to_parquet(data / "alpha.parquet")
        (folder / "run.trec").write_text("q0 Q0 d1 1 0.5 x\n")
        (folder / "qrels.txt").write_text("q0 0 d1 1\n")
        data.chmod(mode)
        argv = [a.format(data=data, run=folder / "run.trec", qrels=folder / "qrels.txt", out=folder / "out")
                for a in UNREADABLE_DATA_COMMANDS[command]]
        done = evalcore_as_user(*argv)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert f"{data}: cannot read the data folder (Permission denied)" in done.stderr
        assert not (folder / "out").exists()
