"""Faults under a running dashboard (docs/reliability.md § The dashboard): two server processes on one writable
copy of the shipped data and one scratch folder (their HOME and TMPDIR), spoken to by the protocol-level client of bench/ws_session.py
(what a browser tab sends and receives, without a browser).

- A corrupt file and a half-written one dropped into the data folder: every view of both processes is served,
  the sidebar names each file, no traceback in either log; once the half-written file is complete, its system
  is on the board.
- A new results file (renamed into place, as `evalcore ingest` writes): both processes show its system within
  :data:`DELAY_SECONDS`, and no view in between shows an error.
- The disk full, then read-only (HOME and TMPDIR on a small tmpfs: needs root, as CI runs): every board drawn,
  no error, nothing written there (the dashboard keeps no cache on disk); deploy/serve.sh starts on it.

Marked slow (servers; ~1–2 minutes).
"""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from needs import missing

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from ws_session import Session  # noqa: E402

DELAY_SECONDS = 30
"""A new file is on every process's pages within this: the data folder is checked every 2 s
(ui/data.py RESCAN_SECONDS), then reloaded (~1–3 s of CPU on the shipped data); generous for a shared machine."""
BOARD = "bench=rar-b&setting=mcr&metric=p%401&instr=without&prec=fp32"
TRACEBACK = "Traceback (most recent call last)"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scratch_env(folder: Path) -> dict[str, str]:
    """Every place a process might write on its own: home, temp and cache folders."""
    return {"HOME": str(folder), "TMPDIR": str(folder), "XDG_CACHE_HOME": str(folder)}


class Live:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.data = tmp / "data"
        self.scratch = tmp / "scratch"
        self.procs: list[subprocess.Popen] = []
        self.bases: list[str] = []
        self.logs: list[Path] = []
        self.mounted = False

    def start(self, processes: int = 2) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMLIT_", "TIEBREAK_"))}
        env.update(TIEBREAK_DATA=str(self.data), **scratch_env(self.scratch))
        for i in range(processes):
            port = _free_port()
            log = self.tmp / f"app-{i}.log"
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                 "--server.headless", "true", "--server.address", "127.0.0.1"],
                cwd=ROOT, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT))
            self.bases.append(f"http://127.0.0.1:{port}/")
            self.logs.append(log)
        for proc, base, log in zip(self.procs, self.bases, self.logs):
            deadline = time.monotonic() + 120
            while True:
                assert proc.poll() is None, log.read_text()[-2000:]
                try:
                    with urllib.request.urlopen(base + "_stcore/health", timeout=2):
                        break
                except OSError:
                    assert time.monotonic() < deadline, f"{base} did not start"
                    time.sleep(0.2)

    def log_text(self, i: int) -> str:
        return self.logs[i].read_text(errors="replace")

    def close(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.scratch)], check=False)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("faults-live")
    running = Live(tmp)
    shutil.copytree(ROOT / "data", running.data)
    running.scratch.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(running.scratch)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        missing(f"a full or read-only disk is made with a small tmpfs, which needs root: {mounted.stderr}")
    running.mounted = True
    try:
        running.start()
        yield running
    finally:
        running.close()


# ------------------------------------------------------------------------------------------ what a tab shows
def texts(session: Session) -> str:
    found = []
    for node in session.tree.nodes.values():
        body = getattr(node.proto, "body", None)
        if isinstance(body, str):
            found.append(body)
    return "\n".join(found)


def table_cells(session: Session) -> set[str]:
    import pyarrow as pa

    cells: set[str] = set()
    for node in session.tree.nodes.values():
        if node.kind in ("arrow_data_frame", "data_frame", "dataframe", "arrow_table") or hasattr(node.proto, "arrow_data"):
            data = getattr(getattr(node.proto, "arrow_data", None), "data", b"")
            if data:
                table = pa.ipc.open_stream(data).read_all()
                for column in table.columns:
                    cells.update(str(v) for v in column.to_pylist())
    return cells


async def _visit(base: str, query: str = "", every_page: bool = False) -> list[tuple[str, Session]]:
    """Open ``base?query`` as a fresh tab (and with ``every_page`` switch to each page): [(page, session)] with
    the errors a visitor would see raised."""
    session = Session(base, timeout=180)
    result = await session.open(query=query)
    assert not result.errors, result.errors
    shown = [("", session)]
    if every_page:
        for page in [p for p in session.tree.pages if not p["is_default"]]:
            other = Session(base, timeout=180)
            opened = await other.open(path=page["url_pathname"])
            assert not opened.errors, (page["url_pathname"], opened.errors)
            shown.append((page["url_pathname"], other))
    return shown


def visit(base: str, query: str = "", every_page: bool = False) -> list[tuple[str, Session]]:
    async def run():
        shown = await _visit(base, query, every_page)
        for _, session in shown:
            await session.close()
        return shown

    return asyncio.run(run())


def new_system_rows(data: Path, name: str) -> pd.DataFrame:
    """The rows of one shipped system under the board's condition (every task), as system ``name``."""
    frames = []
    for path in sorted((data / "real" / "query_metrics").glob("rar-b_*.parquet")):  # the shipped files only
        rows = pd.read_parquet(path)
        first = rows["system"].iloc[0]
        keep = (rows["system"] == first) & (rows["setting"] == "mcr") & (rows["precision"] == "fp32") \
            & (rows["instruction"] == False) & (rows["metric"] == "p@1")  # noqa: E712
        frames.append(rows[keep])
    rows = pd.concat(frames, ignore_index=True)
    for column in rows.columns:
        if isinstance(rows[column].dtype, pd.CategoricalDtype):
            rows[column] = rows[column].astype(str)
    return rows.assign(system=name)


def parquet_bytes(rows: pd.DataFrame, scratch: Path) -> bytes:
    rows.to_parquet(scratch, index=False)
    data = scratch.read_bytes()
    scratch.unlink()
    return data


def wait_for(check, seconds: float) -> float:
    started = time.monotonic()
    while True:
        if check():
            return time.monotonic() - started
        assert time.monotonic() - started < seconds, f"not within {seconds} s"
        time.sleep(0.5)


def on_board(base: str, name: str) -> bool:
    [(_, session)] = visit(base, BOARD)
    return name in table_cells(session)


# ------------------------------------------------------------------------------------------ the faults
def test_corrupt_and_half_written_files_are_named_and_every_view_served(live):
    complete = parquet_bytes(new_system_rows(live.data, "halfway-model"), live.tmp / "scratch.parquet")
    (live.data / "zz-garbage.parquet").write_bytes(b"PAR1 this is not a parquet file")
    half = live.data / "real" / "query_metrics" / "zz-halfway.parquet"
    half.write_bytes(complete[: len(complete) // 2])
    time.sleep(3)  # past the rescan interval
    for i, base in enumerate(live.bases):
        for page, session in visit(base, every_page=True):
            shown = texts(session)
            assert "zz-garbage.parquet" in shown and "zz-halfway.parquet" in shown, (base, page)
        assert TRACEBACK not in live.log_text(i)
    with open(half, "r+b") as handle:  # the writer finishes the file in place
        handle.seek(len(complete) // 2)
        handle.write(complete[len(complete) // 2:])
    for base in live.bases:
        wait_for(lambda: on_board(base, "halfway-model"), DELAY_SECONDS)
        [(_, session)] = visit(base, BOARD)
        assert "zz-halfway.parquet" not in texts(session) and "zz-garbage.parquet" in texts(session)
    for i in range(len(live.bases)):
        assert TRACEBACK not in live.log_text(i)


def test_a_new_results_file_reaches_every_process_within_the_delay(live):
    rows = new_system_rows(live.data, "arrived-model")
    target = live.data / "real" / "query_metrics" / "zz-arrived.parquet"
    temporary = target.with_name(".zz-arrived.parquet.tmp")
    rows.to_parquet(temporary, index=False)
    for base in live.bases:
        assert not on_board(base, "arrived-model")
    os.replace(temporary, target)
    landed = time.monotonic()
    delays = []
    for base in live.bases:
        wait_for(lambda: on_board(base, "arrived-model"), DELAY_SECONDS)
        delays.append(round(time.monotonic() - landed, 1))
    print(f"new file on the board of each process after {delays} s")
    for i in range(len(live.bases)):
        assert TRACEBACK not in live.log_text(i)


def _fill(folder: Path) -> None:
    with open(folder / "filler", "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass


def test_a_full_then_read_only_disk_costs_nothing(live):
    _fill(live.scratch)
    filled = sorted(p.name for p in live.scratch.iterdir())
    queries = ["bench=r2med", "bench=rar-b&setting=full-pooled"]  # boards not asked for yet
    for i, (base, query) in enumerate(zip(live.bases, queries)):
        if i == 1:  # then read-only
            (live.scratch / "filler").unlink()
            subprocess.run(["mount", "-o", "remount,ro", str(live.scratch)], check=True)
            filled = []
        [(_, session)] = visit(base, query)
        assert table_cells(session), "no board drawn"
        assert TRACEBACK not in live.log_text(i)
        assert sorted(p.name for p in live.scratch.iterdir()) == filled
    port = _free_port()  # deploy/serve.sh with HOME and TMPDIR read-only: it serves
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMLIT_", "TIEBREAK_"))}
    env.update(TIEBREAK_DATA=str(live.data), TIEBREAK_PYTHON=sys.executable, **scratch_env(live.scratch))
    log = live.tmp / "serve.log"
    proc = subprocess.Popen(["sh", str(ROOT / "deploy" / "serve.sh"), str(port)], env=env, cwd=live.tmp,
                            stdout=open(log, "w"), stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: _healthy(f"http://127.0.0.1:{port}/tiebreak/_stcore/health") or proc.poll() is not None, 120)
        assert proc.poll() is None, log.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert sorted(p.name for p in live.scratch.iterdir()) == []


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False
