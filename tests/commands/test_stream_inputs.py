"""Inputs that are streams — ``/dev/stdin``, a FIFO, ``<(command)`` — are read once (the input side of
the special files outputs write into). The readers open an input twice (the format is sniffed from its first
64 KiB, then the file is read): on a stream the second read started 64 KiB in, so a run whose 64 KiB boundary
fell on a line end silently lost its first 1,024 lines and gave other numbers with exit code 0."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.cli import main

ROOT = Path(__file__).resolve().parents[2]


def call(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def run_text(n_queries: int = 40, depth: int = 64) -> bytes:
    """TREC lines of exactly 64 bytes: the sniffed 64 KiB end on a line end (1,024 lines)."""
    lines = []
    for q in range(n_queries):
        for d in range(depth):
            line = f"q{q:04d} Q0 d{d:05d} {d + 1} {1.0 / (d + 1):.6f} t"
            lines.append(line.ljust(63) + "\n")
    data = "".join(lines).encode()
    assert data[65535:65536] == b"\n" and len(data) > 65536
    return data


QRELS = "".join(f"q{q:04d} 0 d{q % 64:05d} 1\n" for q in range(40))


@contextlib.contextmanager
def fifo_with(path: Path, data: bytes):
    """A FIFO that a background thread fills with ``data`` for its first reader, and with nothing for any later
    one (a reader that opens it again sees an empty stream, as a real pipe would)."""
    os.mkfifo(path)
    stop = threading.Event()

    def feed():
        payload = data
        while not stop.is_set():
            try:
                with open(path, "wb") as handle:
                    handle.write(payload)
            except BrokenPipeError:  # the reader closed before reading everything
                pass
            payload = b""

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        stop.set()
        with contextlib.suppress(OSError):  # release the feeder waiting for a next reader
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        thread.join(10)


COMMANDS = {
    "evaluate": lambda run, files: ["evaluate", "--run", str(run), "--qrels", str(files / "qrels.txt"), "--metrics",
                                    "mrr@10,ndcg@10", "--format", "json"],
    "ties": lambda run, files: ["ties", "--run", str(run), "--format", "json", "--k", "5"],
    "simulate": lambda run, files: ["simulate", "--run", str(run), "--to", "bf16", "--out", str(files / "sim.parquet")],
    "ingest": lambda run, files: ["ingest", "--run", str(run), "--qrels", str(files / "qrels.txt"), "--system", "s",
                                  "--benchmark", "b", "--task", "t", "--setting", "full", "--instruction", "no",
                                  "--precision", "fp32", "--data", str(files / "data")],
}


def outcome(command: str, stdout: str, files: Path):
    if command in ("evaluate", "ties"):
        result = json.loads(stdout)
        return [{k: v for k, v in row.items() if k != "run"} for row in result] if isinstance(result, list) \
            else {k: v for k, v in result.items() if k != "run"}
    if command == "simulate":
        return pq.read_table(files / "sim.parquet").to_pylist()
    (written,) = (files / "data" / "ingested").glob("*.parquet")
    rows = pq.read_table(written).drop_columns(["source"]).to_pylist()
    written.unlink()
    return sorted(rows, key=lambda row: (row["qid"], row["metric"]))


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_run_from_a_fifo_gives_what_the_file_gives(tmp_path, command):
    data = run_text()
    (tmp_path / "run.trec").write_bytes(data)
    (tmp_path / "qrels.txt").write_text(QRELS)
    code, stdout, stderr = call(COMMANDS[command](tmp_path / "run.trec", tmp_path))
    assert code == 0, stderr
    expected = outcome(command, stdout, tmp_path)
    with fifo_with(tmp_path / "run.fifo", data) as fifo:
        code, stdout, stderr = call(COMMANDS[command](fifo, tmp_path))
    assert code == 0, stderr
    assert outcome(command, stdout, tmp_path) == expected


def test_qrels_and_a_parquet_run_from_fifos(tmp_path):
    buffer = io.BytesIO()
    pq.write_table(pa.table({"qid": ["q1", "q1"], "docid": ["a", "b"], "score": [0.5, 0.9]}), buffer)
    with fifo_with(tmp_path / "run", buffer.getvalue()) as run, \
            fifo_with(tmp_path / "qrels", b"q1 0 a 1\n") as qrels:
        code, stdout, stderr = call(["evaluate", "--run", str(run), "--qrels", str(qrels), "--metrics", "mrr",
                                     "--format", "json"])
    assert code == 0, stderr
    assert json.loads(stdout)[0]["oblivious"] == 0.5


def test_an_error_in_a_stream_names_the_stream_and_leaves_no_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    with fifo_with(tmp_path / "run.fifo", b"q1 Q0 a 1 0.5 t\nq1 Q0 a 2 0.4 t\n") as fifo:
        code, _, stderr = call(["ties", "--run", str(fifo)])
    assert code == 2 and stderr.startswith(f"evalcore ties: error: {fifo}:2: duplicate document"), stderr
    assert os.listdir(tmp_path / "tmp") == []


def test_dev_stdin_in_a_real_process(tmp_path):
    data = run_text()
    (tmp_path / "run.trec").write_bytes(data)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    from_file = subprocess.run([sys.executable, "-m", "evalcore", "ties", "--run", str(tmp_path / "run.trec"),
                                "--format", "json"], capture_output=True, env=env, timeout=120)
    from_stdin = subprocess.run([sys.executable, "-m", "evalcore", "ties", "--run", "/dev/stdin", "--format", "json"],
                                input=data, capture_output=True, env=env, timeout=120)
    assert from_stdin.returncode == 0, from_stdin.stderr
    expected = {k: v for k, v in json.loads(from_file.stdout).items() if k != "run"}
    assert {k: v for k, v in json.loads(from_stdin.stdout).items() if k != "run"} == expected
    assert expected["n_queries"] == 40


def test_a_fifo_without_writer_is_announced_then_refused_after_the_wait(tmp_path, monkeypatch):
    os.mkfifo(tmp_path / "run.fifo")
    (tmp_path / "qrels.txt").write_text(QRELS)
    monkeypatch.setenv("TIEBREAK_FIFO_WAIT_SECONDS", "2")
    import time

    started = time.monotonic()
    code, stdout, stderr = call(COMMANDS["evaluate"](tmp_path / "run.fifo", tmp_path))
    waited = time.monotonic() - started
    assert code == 2 and stdout == "" and 2 <= waited < 10, (code, waited, stderr)
    announced, refused = stderr.strip().splitlines()
    assert "waiting for a process to write into the FIFO" in announced and str(tmp_path / "run.fifo") in announced
    assert refused.startswith(f"evalcore evaluate: error: {tmp_path / 'run.fifo'}: ") and "in 2 s" in refused


def test_a_writer_that_comes_late_or_is_slow_is_read(tmp_path):
    """A writer that connects after a second, and one that connects at once but writes after a second
    (``<(slow command)``): both read in full, the first byte (read to tell the cases apart) not lost."""
    data = run_text()
    (tmp_path / "run.trec").write_bytes(data)
    (tmp_path / "qrels.txt").write_text(QRELS)
    code, stdout, stderr = call(COMMANDS["evaluate"](tmp_path / "run.trec", tmp_path))
    assert code == 0, stderr
    expected = json.loads(stdout)
    import time

    for late_open in (True, False):
        fifo = tmp_path / f"late-{late_open}.fifo"
        os.mkfifo(fifo)

        def write(path=fifo, late_open=late_open):
            if late_open:
                time.sleep(1.0)
            with open(path, "wb") as handle:  # blocks until the reader opens
                if not late_open:
                    time.sleep(1.0)
                handle.write(data)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        code, stdout, stderr = call(COMMANDS["evaluate"](fifo, tmp_path))
        writer.join(10)
        assert code == 0, stderr
        assert json.loads(stdout) == expected


def candidate_csv(tasks_data: Path) -> bytes:
    from candidate_data import TASKS, mcr_rows

    rows = ["task,qid,docid,score"] + [f"{task},{q},{d},{s!r}" for task in TASKS for q, d, s in mcr_rows(task)]
    return ("\n".join(rows) + "\n").encode()


def test_a_candidate_from_a_fifo_gives_what_the_file_gives(tmp_path):
    """``tasks evaluate --candidate <(command)`` opened the stream twice (sniffed, then read) or, with no writer,
    hung: it is read once, as evaluate's --run is."""
    from candidate_data import write_tasks

    data = write_tasks(tmp_path / "data")
    table = candidate_csv(data)
    (tmp_path / "run.csv").write_bytes(table)
    common = ["tasks", "evaluate", "--benchmark", "rar-b", "--setting", "mcr", "--data", str(data)]
    code, _, stderr = call([*common, "--candidate", str(tmp_path / "run.csv"), "--out", str(tmp_path / "a.parquet")])
    assert code == 0, stderr
    with fifo_with(tmp_path / "run.fifo", table) as fifo:
        code, _, stderr = call([*common, "--candidate", str(fifo), "--out", str(tmp_path / "b.parquet")])
    assert code == 0, stderr
    assert pq.read_table(tmp_path / "a.parquet").equals(pq.read_table(tmp_path / "b.parquet"))
    os.mkfifo(tmp_path / "silent.fifo")
    done = subprocess.run([sys.executable, "-m", "evalcore", *common, "--candidate", str(tmp_path / "silent.fifo"),
                           "--out", str(tmp_path / "c.parquet")], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TIEBREAK_FIFO_WAIT_SECONDS": "1"})
    assert done.returncode == 2 and "a FIFO that no process opened for writing in 1 s" in done.stderr
    assert not (tmp_path / "c.parquet").exists()


def test_a_candidate_folder_the_user_cannot_enter_is_one_line():
    from candidate_data import TASKS, mcr_rows, write_tasks
    from unprivileged import evalcore_as_user, shared_folder

    with shared_folder() as folder:
        data = write_tasks(folder / "data")
        runs = folder / "runs"
        runs.mkdir()
        for task in TASKS:
            (runs / f"{task}.trec").write_text("".join(f"{q} Q0 {d} 1 {s!r} x\n" for q, d, s in mcr_rows(task)))
        assert evalcore_as_user("tasks", "evaluate", "--benchmark", "rar-b", "--setting", "mcr", "--data", data,
                                "--candidate", runs, "--out", folder / "ok.parquet").returncode == 0
        runs.chmod(0o000)
        done = evalcore_as_user("tasks", "evaluate", "--benchmark", "rar-b", "--setting", "mcr", "--data", data,
                                "--candidate", runs, "--out", folder / "rows.parquet")
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.strip() == f"evalcore tasks: error: {runs}: cannot read the folder (Permission denied)"
        assert not (folder / "rows.parquet").exists()
