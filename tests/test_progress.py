"""Progress of long work: a tqdm bar on stderr when it is a terminal, nothing otherwise or with ``--quiet``,
and stdout the same byte for byte either way.

Each command runs in a child process whose stderr is a pseudo-terminal (``pty``, sized like a terminal or
left unsized as some CI runners leave it) and whose stdout is a pipe; ``TIEBREAK_PROGRESS_DELAY=0`` shows the
bar from the start (it waits a second by default, so short work prints nothing extra).
"""
from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest

from evalcore import progress
from needs import require_module

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
CRUMB = ROOT / "tests" / "fixtures" / "crumb"
MTEB = ROOT / "tests" / "fixtures" / "store" / "mteb_layouts"
WINO_RUN = DATA / "runs" / "rar-b_WinoGrande_full_all-MiniLM-L6-v2_fp32.parquet"
WINO_QRELS = DATA / "runs" / "rar-b_WinoGrande_full_qrels.parquet"
BAR = "%|"  # tqdm's bar: "evaluate: 100%|█████| 1.27k/1.27k [00:01<00:00, 1.16kquery/s]"


def _environment() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TQDM_")}
    env.update(TIEBREAK_PROGRESS_DELAY="0", PYTHONPATH=str(ROOT))
    return env


def run_command(argv: list[str], *, terminal: bool, sized: bool = True) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of ``python -m evalcore ARGV``, stderr on a pseudo-terminal or a pipe."""
    return run_python([sys.executable, "-m", "evalcore", *argv], terminal=terminal, sized=sized)


def run_python(command: list[str], *, terminal: bool, sized: bool = True) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of ``command``, its stderr on a pseudo-terminal (read as it comes) or a pipe."""
    if not terminal:
        done = subprocess.run(command, capture_output=True, cwd=ROOT, env=_environment(), timeout=300)
        return done.returncode, done.stdout, done.stderr
    leader, follower = pty.openpty()
    if sized:
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower,
                             cwd=ROOT, env=_environment())
    os.close(follower)
    err = bytearray()

    def drain() -> None:
        while True:
            try:
                block = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not block:
                return
            err.extend(block)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    out = child.stdout.read()
    code = child.wait(timeout=300)
    reader.join(timeout=10)
    os.close(leader)
    return code, out, bytes(err).replace(b"\r\n", b"\n")  # the terminal's line discipline adds the CRs


@pytest.fixture(scope="module")
def commands(tmp_path_factory) -> dict[str, tuple[list[str], str]]:
    """command -> (argv, the bar's label), every command that can run long, on small inputs."""
    work = tmp_path_factory.mktemp("progress")
    (work / "run.trec").write_text("q1 Q0 a 1 0.9 s\nq1 Q0 b 2 0.5 s\nq2 Q0 a 1 0.3 s\n")
    (work / "qrels.txt").write_text("q1 0 a 1\nq2 0 b 1\n")
    real = work / "real"
    shutil.copytree(DATA / "real", real)
    return {
        "evaluate": (["evaluate", "--run", str(WINO_RUN), "--qrels", str(WINO_QRELS)], "evaluate"),
        "ingest": (["ingest", "--run", str(work / "run.trec"), "--qrels", str(work / "qrels.txt"), "--system",
                    "s", "--benchmark", "b", "--task", "t", "--setting", "full", "--instruction", "no",
                    "--precision", "fp32", "--data", str(work / "ingested-{n}")], "evaluate"),
        "import-crumb": (["import-crumb", str(CRUMB / "runs" / "bm25"), "--crumb", str(CRUMB), "--data",
                          str(work / "crumb-{n}")], "import-crumb"),
        "import-mteb": (["import-mteb", str(MTEB), "--out", str(work / "mteb-{n}")], "import-mteb"),
        "derive": (["derive", "--data", str(real), "--check"], "derive"),
        "explain": (["explain", "--run", str(WINO_RUN), "--qrels", str(WINO_QRELS), "--reported", "0.7357"],
                    "evaluate"),
    }


def _same(out: bytes, n: int) -> bytes:
    """``out`` with what differs by design between runs: the output folder's number, an ingested file's id."""
    out = re.sub(rb"(ingested|crumb|mteb)-" + str(n).encode(), rb"\1-N", out)
    return re.sub(rb"_[0-9a-f]{8}\.parquet", b"_ID.parquet", out)


def _numbered(argv: list[str], n: int) -> list[str]:
    return [arg.replace("{n}", str(n)) for arg in argv]


@pytest.mark.parametrize("name", ["evaluate", *(pytest.param(name, marks=pytest.mark.slow) for name in (
    "ingest", "import-crumb", "import-mteb", "derive", "explain"))])
def test_a_terminal_gets_a_bar_a_pipe_and_quiet_get_none_and_stdout_is_the_same(commands, name):
    argv, label = commands[name]
    code, plain_out, plain_err = run_command(_numbered(argv, 1), terminal=False)
    assert code in (0, 1), plain_err
    code_tty, tty_out, tty_err = run_command(_numbered(argv, 2), terminal=True)
    assert code_tty == code, tty_err
    text = tty_err.decode("utf-8", "replace")
    assert f"{label}:" in text and BAR in text and "/s]" in text, text  # label, bar, rate
    assert BAR.encode() not in plain_err and b"\r" not in plain_err
    code_quiet, quiet_out, quiet_err = run_command([*_numbered(argv, 3), "--quiet"], terminal=True)
    assert code_quiet == code and BAR.encode() not in quiet_err, quiet_err
    assert _same(tty_out, 2) == _same(quiet_out, 3) == _same(plain_out, 1)
    assert BAR.encode() not in tty_out and b"\x1b" not in tty_out


def test_an_unsized_terminal_still_gets_the_bar(commands):
    """A pseudo-terminal nobody sized reports 0 × 0: tqdm alone would compute -1 rows and hide the bar."""
    code, _, err = run_command(commands["evaluate"][0], terminal=True, sized=False)
    assert code == 0 and BAR.encode() in err, err


def test_the_bar_shows_an_eta_when_the_total_is_known(commands):
    _, _, err = run_command(commands["evaluate"][0], terminal=True)
    assert b"/1.27k [" in err and b"<" in err  # done/total [elapsed<remaining, rate]


def test_without_configure_nothing_is_shown(monkeypatch, capsys):
    """Library use (and the dashboard's own process) never prints a bar, whatever stderr is."""
    progress.configure()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    with progress.bar("x", 3) as shown:
        shown.update(3)
    assert capsys.readouterr().err == ""
    assert not progress.active()


def test_progress_lines_for_the_dashboard_are_parsed_back():
    stream = io.StringIO()
    progress.configure(lines=stream)
    try:
        with progress.bar("evaluate", total=4, unit="query") as shown:
            shown.update(1)
            shown.update(3)
        list(progress.iterate(["a", "b"], "candidate", unit="task"))
    finally:
        progress.configure()
    parsed = [progress.parse_line(line) for line in stream.getvalue().splitlines()]
    assert all(parsed)
    assert parsed[0] == {"progress": "evaluate", "done": 0, "total": 4, "unit": "query"}
    assert {"progress": "evaluate", "done": 4, "total": 4, "unit": "query"} in parsed  # the last one, always
    assert parsed[-1] == {"progress": "candidate", "done": 2, "total": 2, "unit": "task"}
    assert progress.parse_line("evalcore: warning: something") is None
    assert progress.parse_line('{"progress": broken') is None


@pytest.mark.slow
def test_the_spark_path_turns_sparks_console_progress_on_only_for_a_terminal():
    """Spark draws its own stage bar on stderr ("[Stage 1:====>  (2 + 2) / 8]"): on for a terminal, off otherwise."""
    require_module("pyspark", hint="pip install -r requirements-spark.txt")
    script = ("from evalcore import progress, spark; progress.configure(terminal=True); "
              "s = spark.spark_session('local[1]'); "
              "print(s.sparkContext.getConf().get('spark.ui.showConsoleProgress')); s.stop()")
    for terminal, expected in ((True, b"true"), (False, b"false")):
        code, out, err = run_python([sys.executable, "-c", script], terminal=terminal)
        assert code == 0, err[-2000:]
        assert out.strip().splitlines()[-1] == expected
