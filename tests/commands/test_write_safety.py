"""Outputs never harm another file, and a write that fails is one line.

- an output that is an input (same path, ``./`` path, symlink, hard link) is refused before any work and the
  input is byte-for-byte intact, in every command that writes a file;
- a symlinked output is written through (the link stays a link); a FIFO or ``/dev/stdout`` is written into,
  never replaced; ``/dev/full`` gives one line "No space left on device" and stays a character device;
- ``import-mteb`` / ``import-r2med`` of a folder without results keep the existing import (``--allow-empty``
  writes the empty one);
- an unwritable folder, a full disk, an existing directory, a path under a file and a 300-character name give
  exit code 2 and one line ``evalcore CMD: error: PATH: cannot write ...: REASON`` in ``evaluate`` / ``ties``
  ``--per-query``, ``simulate --out`` (TREC, JSON lines, CSV, parquet), ``ingest``, ``import-mteb`` and
  ``import-r2med``, and in the out-of-core regroup when TMPDIR cannot hold its copy; nothing is left behind.

Tests run as root here: no test writes to a real device except ``/dev/full`` (whose writes fail by design), and
``/dev/stdout`` only in a child process whose stdout is a pipe or a file of the test's own.
"""
from __future__ import annotations

import contextlib
import io
import os
import resource
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.cli import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "store"
R2MED_TREE: Path
RUN = "q1 Q0 a 1 0.5 s\nq1 Q0 b 2 0.5 s\nq2 Q0 c 1 0.9 s\n"
QRELS = "q1 0 a 1\nq2 0 c 1\n"


def call(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)  # an exception escaping main fails the test: the CLI promised one line
    return code, out.getvalue(), err.getvalue()


def one_error_line(code: int, stderr: str, command: str, path: str | Path | None = None) -> str:
    assert code == 2, stderr
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"evalcore {command}: error: "), stderr
    if path is not None:
        assert lines[0].startswith(f"evalcore {command}: error: {path}"), (stderr, path)
    return lines[0]


def listing(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() and not p.is_symlink() else b"")
            for p in sorted(folder.rglob("*"))}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "run.trec").write_text(RUN)
    (tmp_path / "qrels.txt").write_text(QRELS)
    return tmp_path


def evaluate_argv(files, out, *extra):
    return ["evaluate", "--run", str(files / "run.trec"), "--qrels", str(files / "qrels.txt"), "--per-query", str(out),
            *extra]


def ties_argv(files, out):
    return ["ties", "--run", str(files / "run.trec"), "--per-query", str(out)]


def simulate_argv(files, out):
    return ["simulate", "--run", str(files / "run.trec"), "--to", "bf16", "--out", str(out)]


def ingest_argv(files, data):
    return ["ingest", "--run", str(files / "run.trec"), "--qrels", str(files / "qrels.txt"), "--system", "s",
            "--benchmark", "b", "--task", "t", "--setting", "full", "--instruction", "no", "--precision", "fp32",
            "--data", str(data)]


# -- 7. an output that is an input ---------------------------------------------------------------------
FILE_WRITERS = {"evaluate": evaluate_argv, "ties": ties_argv, "simulate": simulate_argv}


@pytest.mark.parametrize("command", sorted(FILE_WRITERS))
@pytest.mark.parametrize("alias", ["same", "dot", "symlink", "hardlink"])
def test_an_output_that_is_the_run_is_refused_and_the_run_kept(files, command, alias):
    run = files / "run.trec"
    out = {"same": run, "dot": Path(os.path.relpath(run)).parent / "." / run.name, "symlink": files / "link.parquet",
           "hardlink": files / "hard.parquet"}[alias]
    if alias == "symlink":
        out.symlink_to(run.name)
    if alias == "hardlink":
        os.link(run, out)
    before = listing(files)
    code, _, stderr = call(FILE_WRITERS[command](files, out))
    assert "is the input" in one_error_line(code, stderr, command, out)
    assert listing(files) == before and run.read_text() == RUN
    assert not (alias == "symlink" and not out.is_symlink())


def test_an_evaluate_output_that_is_the_qrels_is_refused(files):
    before = listing(files)
    code, _, stderr = call(evaluate_argv(files, files / "qrels.txt"))
    assert "is the input" in one_error_line(code, stderr, "evaluate")
    assert listing(files) == before


# -- 7. symlinks are written through, special files written into ---------------------------------------
@pytest.mark.parametrize("command", sorted(FILE_WRITERS))
@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlinked_output_stays_a_symlink_and_its_target_gets_the_data(files, command, dangling):
    suffix = ".trec" if command == "simulate" else ".parquet"
    target, link = files / "elsewhere" / f"target{suffix}", files / f"link{suffix}"
    target.parent.mkdir()
    if not dangling:
        target.write_text("old content")
    link.symlink_to(target)
    code, _, stderr = call(FILE_WRITERS[command](files, link))
    assert code == 0, stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    if command == "simulate":
        assert target.read_text().startswith("q1 Q0 ")
    else:
        assert pq.read_table(target).num_rows > 0
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]  # no temporary left


def read_fifo(fifo: Path, into: list[bytes]) -> threading.Thread:
    def reader():
        with open(fifo, "rb") as handle:
            into.append(handle.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("command", sorted(FILE_WRITERS))
def test_a_fifo_output_is_written_into_not_replaced(files, command):
    fifo = files / ("out.trec" if command == "simulate" else "out.parquet")
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = read_fifo(fifo, received)
    code, _, stderr = call(FILE_WRITERS[command](files, fifo))
    reader.join(30)
    assert code == 0, stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO, not a regular file renamed over it
    data = received[0]
    if command == "simulate":
        assert data.decode().splitlines()[0].startswith("q1 Q0 ")
    else:
        assert pq.read_table(pa.BufferReader(data)).num_rows > 0
    assert sorted(p.name for p in files.iterdir()) == sorted(["run.trec", "qrels.txt", fifo.name])


def run_child(argv: list[str], stdout, cwd: Path, preexec=None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalcore", *argv], stdout=stdout, stderr=subprocess.PIPE, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, preexec_fn=preexec, timeout=120)


@pytest.mark.parametrize("stdout_kind", ["pipe", "file"])
def test_dev_stdout_is_written_into_whatever_stdout_is(files, stdout_kind):
    """``/dev/stdout`` -> ``/proc/self/fd/1``: the output goes to descriptor 1 (a pipe, or a file the caller
    redirected to, which is appended to, not replaced); /dev/stdout stays the symlink it was."""
    before = os.readlink("/dev/stdout")
    argv = simulate_argv(files, "/dev/stdout")
    if stdout_kind == "pipe":
        result = run_child(argv, subprocess.PIPE, files)
        written = result.stdout
    else:
        redirected = files / "redirected.txt"
        with open(redirected, "wb") as handle:
            handle.write(b"kept\n")
            handle.flush()
            result = run_child(argv, handle, files)
        written = redirected.read_bytes()
        assert written.startswith(b"kept\n")
    assert result.returncode == 0, result.stderr
    assert written.count(b"q1 Q0 ") == 2 and written.count(b"q2 Q0 c 1 ") == 1
    assert b"wrote 3 rows" not in written  # the confirmation went to stderr, not into the run
    assert os.readlink("/dev/stdout") == before


@pytest.mark.parametrize("command", sorted(FILE_WRITERS))
def test_dev_full_is_one_line_and_stays_a_device(files, command):
    code, _, stderr = call(FILE_WRITERS[command](files, "/dev/full"))
    assert "No space left on device" in one_error_line(code, stderr, command, "/dev/full")
    assert stat.S_ISCHR(os.lstat("/dev/full").st_mode)
    assert sorted(p.name for p in files.iterdir()) == ["qrels.txt", "run.trec"]


# -- 7. an empty import does not replace an import -----------------------------------------------------
IMPORTERS = {"import-mteb": ("mteb_task_scores.parquet", "mteb_systems.parquet"),
             "import-r2med": ("r2med_paper_task_scores.parquet", "r2med_paper_systems.parquet")}


@pytest.mark.parametrize("command", sorted(IMPORTERS))
def test_an_import_of_an_empty_folder_keeps_the_existing_import(tmp_path, command):
    out, empty = tmp_path / "published", tmp_path / "empty"
    out.mkdir()
    empty.mkdir()
    for name in IMPORTERS[command]:
        pq.write_table(pa.table({"system": ["kept"]}), out / name)
    before = listing(out)
    code, _, stderr = call([command, str(empty), "--out", str(out)])
    line = one_error_line(code, stderr, command, empty)
    assert "found no" in line and "--allow-empty" in line and "is kept" in line
    assert listing(out) == before
    code, _, stderr = call([command, str(empty), "--out", str(out), "--allow-empty"])
    assert code == 0, stderr
    assert all(pq.read_table(out / name).num_rows == 0 for name in IMPORTERS[command])


def test_an_import_writes_through_a_symlinked_file(tmp_path):
    out, elsewhere = tmp_path / "published", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (elsewhere / "scores.parquet").write_bytes(b"old")
    (out / "mteb_task_scores.parquet").symlink_to(elsewhere / "scores.parquet")
    code, _, stderr = call(["import-mteb", str(FIXTURES / "mteb_layouts"), "--out", str(out)])
    assert code == 0, stderr
    assert (out / "mteb_task_scores.parquet").is_symlink()
    assert pq.read_table(elsewhere / "scores.parquet").num_rows > 0


# -- 8. write failures are one line ----------------------------------------------------------------------
def unwritable_folder(tmp_path: Path) -> Path:
    """A folder this process cannot create files in: as root (permissions do not apply) sysfs, which refuses
    new files to everyone; otherwise a read-only folder of the test's own."""
    if os.geteuid() == 0:
        return Path("/sys")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o500)
    return folder


def output_in(case: str, tmp_path: Path, name: str, folder_writer: str | None = None) -> Path:
    """Where an output goes for each failure: inside an unwritable folder, an existing directory, under a file,
    or with a 300-character name. ``folder_writer``: the output is a folder (``--data``, ``--out``), and for
    "directory" the file the writer puts in it is an existing directory."""
    if case == "unwritable":
        return unwritable_folder(tmp_path) / f"evalcore-test-{os.getpid()}" / name
    if case == "directory":
        if folder_writer in IMPORTERS:
            (tmp_path / name / IMPORTERS[folder_writer][0]).mkdir(parents=True)
        else:
            (tmp_path / name).mkdir(parents=True)
        return tmp_path / name
    if case == "under-a-file":
        return tmp_path / "run.trec" / name
    return tmp_path / ("x" * 300 + name)


REASONS = {"unwritable": ("Permission denied", "Operation not permitted", "Read-only file system"),
           "directory": ("found a directory", "found a file", "Is a directory"),
           "under-a-file": ("Not a directory", "is a file, not a folder"),
           "long-name": ("File name too long",)}
# writer -> (argv for an output path, the output's name: a file name, or None for a folder)
WRITERS = {
    "evaluate": (evaluate_argv, "pq.parquet"),
    "ties": (ties_argv, "ties.parquet"),
    "simulate-trec": (simulate_argv, "sim.trec"),
    "simulate-jsonl": (simulate_argv, "sim.jsonl"),
    "simulate-csv": (simulate_argv, "sim.csv"),
    "simulate-parquet": (simulate_argv, "sim.parquet"),
    "ingest": (ingest_argv, None),
    "import-mteb": (lambda files, out: ["import-mteb", str(FIXTURES / "mteb_layouts"), "--out", str(out)], None),
    "import-r2med": (lambda files, out: ["import-r2med", str(R2MED_TREE), "--out", str(out)], None),
}


@pytest.fixture(scope="module", autouse=True)
def r2med_tree(tmp_path_factory):
    """A one-file R2MED results tree (the paper's layout) for import-r2med."""
    global R2MED_TREE
    R2MED_TREE = tmp_path_factory.mktemp("r2med") / "results"
    retriever = R2MED_TREE / "base retriever" / "bm25"
    retriever.mkdir(parents=True)
    (retriever / "Biology.json").write_text('{"dataset_name": "Biology", "model_name": "bm25", '
                                            '"test": {"ndcg_at_10": 0.25, "recall_at_100": 0.5}}')
    return R2MED_TREE


@pytest.mark.parametrize("case, writer", [(case, writer) for case in sorted(REASONS) for writer in sorted(WRITERS)
                                          # ingest writes a new, uniquely named file: no directory is in its way
                                          if (case, writer) != ("directory", "ingest")])
def test_a_write_that_cannot_happen_is_one_line(files, writer, case):
    build, name = WRITERS[writer]
    out = output_in(case, files, name or "out", folder_writer=writer if name is None else None)
    argv = build(files, out)
    before = listing(files)
    code, _, stderr = call(argv)
    line = one_error_line(code, stderr, command_of(writer))
    assert "cannot write" in line and any(reason in line for reason in REASONS[case]), line
    assert listing(files) == before  # nothing written, no temporary left
    if case == "unwritable" and os.geteuid() == 0:
        assert not (Path("/sys") / f"evalcore-test-{os.getpid()}").exists()


def command_of(writer: str) -> str:
    return writer if writer.startswith("import") else writer.split("-")[0]


def limit_file_size(max_bytes: int):
    """For a child process: a disk that is full after ``max_bytes`` of any file (writes past it fail with
    EFBIG instead of SIGXFSZ killing the process)."""
    def preexec():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, resource.RLIM_INFINITY))
    return preexec


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_full_disk_is_one_line_and_leaves_nothing(files, writer):
    """Every writer on a disk that fills up mid-write (a file-size limit of 300 bytes: each output is larger)."""
    rows = "".join(f"q{i % 7} Q0 doc{i} {i + 1} {1.0 / (i + 1)!r} s\n" for i in range(300))
    (files / "run.trec").write_text(rows)
    out = files / "out"
    out.mkdir()
    build, name = WRITERS[writer]
    argv = build(files, out / (name or "data"))
    result = run_child(argv, subprocess.PIPE, files, preexec=limit_file_size(300))
    stderr = result.stderr.decode()
    line = one_error_line(result.returncode, stderr, command_of(writer))
    assert "cannot write" in line and "File too large" in line, line
    assert [p for p in out.rglob("*") if p.is_file()] == []  # no partial file, no temporary


def test_the_out_of_core_regroup_with_tmpdir_unusable_is_one_line(files, monkeypatch):
    """An ungrouped parquet run above the in-memory limit is copied to TMPDIR: TMPDIR under a file (a real
    error from the OS) and TMPDIR full (the copy's write fails with ENOSPC) are one line naming TMPDIR."""
    import errno

    from evalcore.formats import readers

    run = files / "run.parquet"
    pq.write_table(pa.table({"qid": ["q1", "q2", "q1"], "docid": ["a", "c", "b"], "score": [0.5, 0.9, 0.5]}), run)
    monkeypatch.setattr(readers, "GROUP_IN_MEMORY_MAX_ROWS", 1)
    argv = ["evaluate", "--run", str(run), "--qrels", str(files / "qrels.txt")]
    assert call(argv)[0] == 0  # the regroup itself works

    monkeypatch.setattr(tempfile, "tempdir", str(files / "qrels.txt" / "tmp"))
    code, _, stderr = call(argv)
    line = one_error_line(code, stderr, "evaluate", files / "qrels.txt" / "tmp")
    assert "TMPDIR" in line and "Not a directory" in line

    monkeypatch.setattr(tempfile, "tempdir", str(files))

    class FullDisk(pq.ParquetWriter):
        def write_batch(self, *args, **kwargs):
            raise OSError(errno.ENOSPC, "Error writing bytes to file")

    monkeypatch.setattr(pq, "ParquetWriter", FullDisk)
    code, _, stderr = call(argv)
    line = one_error_line(code, stderr, "evaluate", files)
    assert "TMPDIR" in line and "No space left on device" in line
    assert not any(p.name.startswith("evalcore-regroup-") for p in files.iterdir())
