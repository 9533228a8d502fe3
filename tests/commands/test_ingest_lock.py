"""The ingest lock: an ingest stopped while holding it made every later ingest wait
forever. Now a waiting ingest gives up after ``TIEBREAK_LOCK_TIMEOUT`` seconds with one line naming the holder
(pid, host, how long, its command, whether it is stopped); a holder killed outright releases the lock and its
stale record does not get in the way."""
from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evalcore.cli import main

ROOT = Path(__file__).resolve().parents[2]
HOLD = """
import os, signal, sys
from pathlib import Path
from evalcore.commands.ingest import ingest_lock
with ingest_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    os.kill(os.getpid(), signal.SIG{how})
"""


def ingest_argv(tmp_path: Path, system: str) -> list[str]:
    (tmp_path / "run.trec").write_text("q1 Q0 a 1 0.5 s\nq1 Q0 b 2 0.4 s\n")
    (tmp_path / "qrels.txt").write_text("q1 0 a 1\n")
    return ["ingest", "--run", str(tmp_path / "run.trec"), "--qrels", str(tmp_path / "qrels.txt"), "--system", system,
            "--benchmark", "b", "--task", "t", "--setting", "full", "--instruction", "no", "--precision", "fp32",
            "--data", str(tmp_path / "data")]


def hold_lock(folder: Path, how: str) -> subprocess.Popen:
    """A process that takes the ingest lock of ``folder`` and then stops (SIGSTOP) or dies (SIGKILL) in it."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD.format(how=how), str(folder)], stdout=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert holder.stdout.readline().strip() == b"locked"
    return holder


def state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def call_with_deadline(argv: list[str], seconds: float) -> tuple[int | None, str]:
    """``main(argv)`` on a thread; (None, "") if it is still running after ``seconds`` (it waits forever)."""
    result: dict = {}

    def target():
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            result["code"] = main(argv)
        result["err"] = err.getvalue()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    return result.get("code"), result.get("err", "")


def test_a_stopped_lock_holder_makes_a_later_ingest_give_up_with_its_name(tmp_path, monkeypatch):
    argv = ingest_argv(tmp_path, "s")
    ingested = tmp_path / "data" / "ingested"
    holder = hold_lock(ingested, "STOP")
    try:
        deadline = time.monotonic() + 10
        while state(holder.pid) not in "Tt" and time.monotonic() < deadline:
            time.sleep(0.01)
        monkeypatch.setenv("TIEBREAK_LOCK_TIMEOUT", "1")
        started = time.monotonic()
        code, stderr = call_with_deadline(argv, 30)
        assert code == 2, "the ingest still waits for the stopped holder"
        assert time.monotonic() - started < 15
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"evalcore ingest: error: {ingested}: gave up after 1 s")
        assert f"pid {holder.pid} on {socket.gethostname()} (stopped)" in lines[0]
        assert "TIEBREAK_LOCK_TIMEOUT" in lines[0] and f"(evalcore {ingested})" in lines[0]  # its command line
        assert list(ingested.glob("*.parquet")) == []
    finally:
        holder.kill()
        holder.wait()
    code, stderr = call_with_deadline(argv, 60)  # the holder is gone: the lock is free again
    assert code == 0, stderr
    assert len(list(ingested.glob("*.parquet"))) == 1
    assert not (ingested / ".ingest-lock.json").exists()  # released with the lock


def test_a_killed_holders_stale_record_does_not_block(tmp_path, monkeypatch):
    ingested = tmp_path / "data" / "ingested"
    holder = hold_lock(ingested, "KILL")
    assert holder.wait(30) == -signal.SIGKILL
    assert (ingested / ".ingest-lock.json").exists()  # the record a killed holder leaves
    monkeypatch.setenv("TIEBREAK_LOCK_TIMEOUT", "5")
    code, stderr = call_with_deadline(ingest_argv(tmp_path, "s"), 60)
    assert code == 0, stderr
    assert not (ingested / ".ingest-lock.json").exists()


@pytest.mark.parametrize("setting", ["soon", "-1", "nan", "inf"])
def test_a_malformed_lock_timeout_is_one_line(tmp_path, monkeypatch, setting):
    monkeypatch.setenv("TIEBREAK_LOCK_TIMEOUT", setting)
    code, stderr = call_with_deadline(ingest_argv(tmp_path, "s"), 60)
    assert code == 2 and "TIEBREAK_LOCK_TIMEOUT must be a number of seconds" in stderr
