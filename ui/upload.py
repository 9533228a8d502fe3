"""A visitor's own run in the dashboard: the limits of an upload, its evaluation in a child process,
and the session's *candidate* that every view sees as one more system.

**Where the candidate lives.** In the browser session's memory only (``st.session_state``): the uploaded
bytes in Streamlit's upload manager while the file widget holds them, the evaluated per-query rows and a
:meth:`evalcore.store.Store.with_overlay` view over the data folder. Nothing is written to the data folder or
anywhere else; closing the tab or pressing *Remove* forgets it. The frame (``ui/navigation.py``) hands
:func:`session_overlay`, :func:`overlay_store` and :func:`remember` to the data API at the start of every
script run (:func:`ui.data.begin_run`), so a view's questions are answered over the overlay and memoised in the
session (:func:`memo`), never in the process-wide answer cache. What the pages say about the run (the sidebar
box, its line on a board, the limits) is in ``ui/hints.py``.

**Evaluating untrusted bytes.** :func:`evaluate` hands the files to ``ui/upload_worker.py`` in a child
process (niced, memory-capped, one thread, killed past :data:`LIMITS.seconds`), at most
:data:`LIMITS.slots` at once per server process: a sixth visitor browses while five evaluate. A bad upload
comes back as one line naming the file and line, shown as a message.

**Keeping it.** Only when the server was started with ``TIEBREAK_ALLOW_INGEST=1`` (or ``streamlit run app.py
-- --allow-ingest``) does the view offer *Add to the leaderboard*, which goes through ``evalcore ingest``'s
path (atomic write, duplicate check under the folder's lock).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from ui.memo import listed
from ui.upload_eval import SOURCE

LOG = logging.getLogger("tiebreak.app")
APP_ROOT = Path(__file__).resolve().parent.parent
SUFFIX = " (your run)"
"""Appended to the visitor's name to make the candidate's system name: it stands out in every table, list and
chart, and cannot be a shipped system's name."""
NAME_CHARS = 60
UPLOAD_TYPES = ("trec", "run", "txt", "tsv", "csv", "jsonl", "json", "parquet", "gz")
SESSION_KEY = "_tb_candidate"
_OVERLAY_KEY = "_tb_candidate_overlay"
_MEMO_KEY = "_tb_candidate_answers"
MEMO_ENTRIES = 64


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip().replace("_", "")
    return int(text) if text.isascii() and text.isdigit() and int(text) > 0 else default


@dataclass(frozen=True)
class Limits:
    """What one upload may cost, said in the view. ``upload_mb`` is Streamlit's ``server.maxUploadSize`` (the
    project's ``.streamlit/config.toml``; a deployment may lower it) and is enforced per file by Streamlit
    before a byte reaches the page; the others are this module's (environment variables override them)."""

    files: int = _env_int("TIEBREAK_UPLOAD_FILES", 32)
    rows: int = _env_int("TIEBREAK_UPLOAD_ROWS", 3_000_000)
    seconds: int = _env_int("TIEBREAK_UPLOAD_SECONDS", 120)
    slots: int = _env_int("TIEBREAK_UPLOAD_SLOTS", max(1, (os.cpu_count() or 2) // 2))
    queue_seconds: int = _env_int("TIEBREAK_UPLOAD_QUEUE_SECONDS", 90)

    @property
    def upload_mb(self) -> int:
        import streamlit as st

        return int(st.get_option("server.maxUploadSize"))


LIMITS = Limits()
STARTUP_SECONDS = 5
"""Grace on top of :data:`LIMITS.seconds` for the child's start (imports) before it is killed: the engine's own
clock (``TIEBREAK_MAX_CANDIDATE_SECONDS``) stops a slow evaluation from inside with a message first."""
_slots = threading.BoundedSemaphore(LIMITS.slots)
_waiting = 0
_waiting_lock = threading.Lock()


@dataclass(frozen=True)
class Request:
    """What the visitor says about the run: its name and the condition it was scored under."""

    name: str
    benchmark: str
    setting: str
    instruction: bool
    precision: str = "fp32"

    @property
    def system(self) -> str:
        return self.name + SUFFIX


@dataclass(frozen=True)
class Candidate:
    """An evaluated upload held by one browser session."""

    request: Request
    rows: pa.Table = field(repr=False)  # per-query rows, the query_metrics contract
    digest: str
    files: tuple[str, ...]
    run_rows: int
    seconds: float
    """Wall time of :func:`evaluate`: the files' checks, the wait for a slot, the child process (start, read,
    score) and the overlay's check — not the page's ranking of the result (``pages/evaluate.py`` times that)."""
    summary: dict = field(default_factory=dict)
    queued: float = 0.0
    """Of :attr:`seconds`, the wait for a free evaluation slot."""

    @property
    def system(self) -> str:
        return self.request.system

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metrics the run was evaluated with (those of its setting's shipped runs), in the rows' order."""
        return tuple(dict.fromkeys(self.rows.column("metric").to_pylist()))

    @property
    def tie_policies(self) -> tuple[str, ...]:
        """The tie policies of the run's oblivious values."""
        return tuple(dict.fromkeys(self.rows.column("tie_policy").to_pylist()))

    def frame(self):
        return self.rows.to_pandas()

    def parquet_bytes(self) -> bytes:
        import io

        import pyarrow.parquet as pq

        sink = io.BytesIO()
        pq.write_table(self.rows, sink, compression="zstd")
        return sink.getvalue()


class UploadError(Exception):
    """One line for the visitor: what was wrong with the upload (file and line when known)."""


# -------------------------------------------------------------------------------------------- names
def check_name(name: str) -> str:
    """The visitor's name for the run, trimmed; UploadError when it cannot be a system name."""
    name = " ".join((name or "").split())
    if not name:
        raise UploadError("give the run a name (e.g. the model's)")
    if len(name) > NAME_CHARS:
        raise UploadError(f"the name has {len(name)} characters; at most {NAME_CHARS}")
    if not name.isprintable() or any(c in name for c in "`<>\\"):
        raise UploadError("the name may hold letters, digits, spaces and punctuation other than ` < > \\")
    return name


# -------------------------------------------------------------------------------------------- the session
_script_run = threading.local()


def begin_run() -> None:
    """The frame (``ui/navigation.py``) calls this at the start of every script run: this thread now serves a
    browser session, so its uploaded run counts."""
    _script_run.active = True


def _session():
    """``st.session_state`` when called from a script run of a browser session (one the frame began), else None:
    the warm start's thread, or a page run without the frame, has no session and no uploaded run."""
    if not getattr(_script_run, "active", False):
        return None
    import streamlit as st

    return st.session_state


def candidate() -> Candidate | None:
    """The session's evaluated upload, if any."""
    state = _session()
    return None if state is None else state.get(SESSION_KEY)


def session_overlay() -> str:
    """The digest of the session's candidate ('' for none): the frame hands it to :func:`ui.data.begin_run`, and
    :func:`ui.data.snapshot` puts it in the snapshot."""
    held = candidate()
    return held.digest if held is not None else ""


def forget() -> None:
    """Drop the session's candidate, its overlay view and the answers about it."""
    state = _session()
    if state is not None:
        for key in (SESSION_KEY, _OVERLAY_KEY, _MEMO_KEY):
            state.pop(key, None)


def memo() -> OrderedDict:
    """The session's answers over its overlay (at most :data:`MEMO_ENTRIES`, oldest dropped first)."""
    state = _session()
    if state is None:
        return OrderedDict()
    return state.setdefault(_MEMO_KEY, OrderedDict())


def _forget_answers() -> None:
    state = _session()
    if state is not None:
        for key in (_OVERLAY_KEY, _MEMO_KEY):
            state.pop(key, None)


listed("a visitor's uploaded run: its overlay and answers", "ui/upload.py", "session",
       "the snapshot's overlay (a digest of the rows and what the visitor said about them) with the question's "
       "arguments; the Store.with_overlay view is rebuilt when the folder's fingerprint changes; at most 64 "
       "answers, never in the shared answer cache, never on disk; a reload, Remove or a new upload forgets "
       "them", clear=_forget_answers,
       size=lambda: 0 if _session() is None else sum(key in _session() for key in (_OVERLAY_KEY, _MEMO_KEY)))


def remember(key, compute):
    """``compute()`` memoised under ``key`` in the session's :func:`memo`."""
    answers = memo()
    if key in answers:
        answers.move_to_end(key)
        return answers[key]
    value = compute()
    answers[key] = value
    while len(answers) > MEMO_ENTRIES:
        answers.popitem(last=False)
    return value


def overlay_store(base, fingerprint: str, digest: str):
    """The session's overlay view of ``base`` (a :class:`~evalcore.store.Store` whose loaded files have
    ``fingerprint``), rebuilt when the folder changed. When the rebuilt view refuses the rows (someone
    ingested the same system meanwhile) the candidate is dropped and the base store answers."""
    state = _session()
    held = candidate()
    if state is None or held is None or held.digest != digest:
        return base
    kept = state.get(_OVERLAY_KEY)
    if kept is not None and kept[0] == fingerprint and kept[1] == digest:
        return kept[2]
    try:
        view = base.with_overlay(held.rows, name=f"your run {held.request.name!r}")
    except Exception as exc:
        LOG.info("candidate %r dropped: %s", held.system, exc)
        forget()
        return base
    state[_OVERLAY_KEY] = (fingerprint, digest, view)
    state.pop(_MEMO_KEY, None)
    return view


# -------------------------------------------------------------------------------------------- evaluation
def _payload(request: Request, files: list[tuple[str, bytes]]) -> bytes:
    header = {"request": {"benchmark": request.benchmark, "setting": request.setting,
                          "instruction": request.instruction, "precision": request.precision,
                          "system": request.system, "max_rows": LIMITS.rows},
              "files": [[name, len(data)] for name, data in files]}
    return json.dumps(header).encode() + b"\n" + b"".join(data for _, data in files)


def _child_environment(data_dir: Path, scratch: str) -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith("STREAMLIT_")}
    env.update(TIEBREAK_DATA=str(data_dir), PYTHONPATH=str(APP_ROOT), TMPDIR=scratch,
               TIEBREAK_MAX_INPUT_LINES=str(LIMITS.rows + 10_000), TIEBREAK_MAX_INPUT_BYTES=str(256 << 20),
               TIEBREAK_MAX_QUERY_ROWS=str(LIMITS.rows), TIEBREAK_MAX_CANDIDATE_ROWS=str(LIMITS.rows),
               TIEBREAK_MAX_CANDIDATE_BYTES=str(LIMITS.files * (LIMITS.upload_mb << 20)),
               TIEBREAK_MAX_CANDIDATE_SECONDS=str(LIMITS.seconds))
    return env


SCRATCH_PARENTS = ("/dev/shm",)
"""Where the child's private temporary folder (its TMPDIR) goes when it can: memory, not disk. The engine reads
each upload from an anonymous in-memory file (``memfd``) and needs the folder only where that is missing; it is
removed when the child ends, killed or not."""


def _scratch_parent() -> str | None:
    for parent in SCRATCH_PARENTS:
        if os.path.isdir(parent) and os.access(parent, os.W_OK | os.X_OK):
            return parent
    return None


def waiting() -> int:
    """Evaluations waiting for a slot on this server now."""
    return _waiting


def run_child(request: Request, files: list[tuple[str, bytes]], data_dir: Path,
              on_progress: Callable[[tuple[float, str]], None] | None = None) -> tuple[dict, bytes]:
    """Evaluate ``files`` in ``ui/upload_worker.py`` under the limits; (answer header, Arrow IPC body). The
    header's ``queued_seconds`` is how long the call waited for a slot. ``on_progress`` gets the child's
    progress as it comes, as (fraction done, words) (:func:`progress_words`), on the calling thread. UploadError
    for a refusal, a busy server or a time-out."""
    global _waiting
    with _waiting_lock:
        _waiting += 1
    queued = time.perf_counter()
    try:
        got = _slots.acquire(timeout=LIMITS.queue_seconds)
    finally:
        with _waiting_lock:
            _waiting -= 1
    queued = time.perf_counter() - queued
    if not got:
        raise UploadError(f"the server is busy evaluating other runs ({LIMITS.slots} at a time); "
                          "try again in a minute")
    import shutil
    import tempfile

    scratch = tempfile.mkdtemp(prefix="tiebreak-upload-", dir=_scratch_parent())
    try:
        out, err, returncode = _talk(_payload(request, files), data_dir, scratch, on_progress)
        if out is None:
            raise UploadError(f"the evaluation took longer than {LIMITS.seconds} s (the dashboard's limit); "
                              "evaluate it with the CLI (`evalcore leaderboard --candidate RUN`)") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        _slots.release()
    line, _, body = out.partition(b"\n")
    try:
        answer = json.loads(line)
    except ValueError:
        LOG.error("upload worker exited %s without an answer: %s", returncode,
                  err.decode(errors="replace")[-2000:])
        raise UploadError("the evaluation stopped without an answer (the server log has the details)") from None
    if not answer.get("ok"):
        if answer.get("internal"):
            LOG.error("upload worker: %s", answer.get("message"))
        raise UploadError(str(answer.get("message") or "the upload could not be evaluated"))
    answer["queued_seconds"] = queued
    return answer, body


def _talk(payload: bytes, data_dir: Path, scratch: str, on_progress) -> tuple[bytes | None, bytes, int | None]:
    """Run the worker on ``payload``: (stdout, stderr without the progress lines, exit code); stdout None when
    it ran past the time limit (then it is killed). Its stderr is read as it comes, on a thread of its own:
    progress lines go to ``on_progress`` (on this thread, every 0.2 s at most), the rest is kept for the log."""
    from evalcore import progress

    read_end, write_end = os.pipe()
    child = subprocess.Popen([sys.executable, "-m", "ui.upload_worker"], cwd=APP_ROOT,
                             env=_child_environment(data_dir, scratch), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=write_end)
    os.close(write_end)
    kept: list[bytes] = []
    states: dict[str, dict] = {}

    def read_stderr() -> None:
        with os.fdopen(read_end, "rb") as stream:
            for line in stream:
                found = progress.parse_line(line)
                if found is None:
                    kept.append(line)
                    del kept[:-200]  # the end says what went wrong
                else:
                    states[str(found.get("progress"))] = found
    talked: dict = {}

    def talk() -> None:
        try:
            talked["out"], _ = child.communicate(payload, timeout=LIMITS.seconds + STARTUP_SECONDS)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            talked["out"] = None
        except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
            talked["error"] = exc

    reader = threading.Thread(target=read_stderr, name="upload-progress", daemon=True)
    talker = threading.Thread(target=talk, name="upload-worker", daemon=True)
    reader.start()
    talker.start()
    shown, reached = None, 0.0
    while talker.is_alive():
        talker.join(0.2)
        words = progress_words(dict(states))
        if on_progress is not None and words is not None and words != shown:
            shown = words
            reached = max(reached, words[0])  # a task's second tie policy starts its queries again
            on_progress((reached, words[1]))
    reader.join(5)
    if "error" in talked:
        raise talked["error"]
    return talked.get("out"), b"".join(kept), child.returncode


def progress_words(states: dict[str, dict]) -> tuple[float, str] | None:
    """The worker's progress (the last line of each of its bars: ``candidate`` over tasks, ``evaluate`` over
    one task's queries) as (fraction done, words), None before the first line."""
    tasks, queries = states.get("candidate"), states.get("evaluate")
    if tasks is None and queries is None:
        return None
    part = 0.0
    words = []
    if tasks is not None and tasks.get("total"):
        words.append(f"task {min(int(tasks['done']) + 1, int(tasks['total']))} of {int(tasks['total'])}")
    if queries is not None and queries.get("total"):
        part = min(int(queries["done"]) / int(queries["total"]), 1.0)
        words.append(f"{int(queries['done']):,} of {int(queries['total']):,} queries")
    if tasks is not None and tasks.get("total"):
        done = min(int(tasks["done"]) + (part if int(tasks["done"]) < int(tasks["total"]) else 0.0),
                   int(tasks["total"]))
        return done / int(tasks["total"]), "Evaluating: " + " · ".join(words)
    return part, "Evaluating: " + " · ".join(words)


def evaluate(request: Request, files: list[tuple[str, bytes]], data_dir: Path, base,
             on_progress: Callable[[tuple[float, str]], None] | None = None) -> Candidate:
    """Check, evaluate and hold ``files`` as the session's candidate (replacing any earlier one); the overlay
    view over ``base`` (the data folder's store) must accept the rows. UploadError when anything is wrong;
    then the session keeps what it had."""
    started = time.perf_counter()
    if not files:
        raise UploadError("choose at least one run file")
    if len(files) > LIMITS.files:
        raise UploadError(f"{len(files)} files; at most {LIMITS.files} (one per task, or one file with a "
                          "task column)")
    cap = LIMITS.upload_mb << 20
    for name, data in files:
        if len(data) > cap:
            raise UploadError(f"{name}: {len(data):,} bytes; at most {LIMITS.upload_mb} MB per file")
    answer, body = run_child(request, files, data_dir, on_progress)
    rows = pa.ipc.open_stream(body).read_all()
    digest = hashlib.sha256(body + json.dumps(request.__dict__, sort_keys=True).encode()).hexdigest()[:16]
    fingerprint = getattr(base, "loaded_fingerprint", None)
    try:
        view = base.with_overlay(rows, name=f"your run {request.name!r}")
    except Exception as exc:  # an InputError naming the server's folder: say it without the path
        message = str(exc).replace(str(base.data_dir), "the data folder")
        raise UploadError(message) from None
    held = Candidate(request=request, rows=rows, digest=digest, files=tuple(name for name, _ in files),
                     run_rows=int(answer.get("run_rows", 0)), seconds=time.perf_counter() - started,
                     summary={k: v for k, v in answer.items() if k not in ("ok", "rows", "queued_seconds")},
                     queued=float(answer.get("queued_seconds", 0.0)))
    state = _session()
    if state is not None:
        forget()
        state[SESSION_KEY] = held
        if fingerprint is not None:  # the view just checked is the one the views ask (not built again)
            state[_OVERLAY_KEY] = (fingerprint, digest, view)
    LOG.info("candidate %r evaluated: %d files, %d run rows, %d per-query rows in %.1f s", request.system,
             len(files), held.run_rows, rows.num_rows, held.seconds)
    return held


# -------------------------------------------------------------------------------------------- keeping it
def ingest_allowed(argv: list[str] | None = None, environ: dict | None = None) -> bool:
    """True when the operator opted in: ``TIEBREAK_ALLOW_INGEST=1`` or ``--allow-ingest`` after
    ``streamlit run app.py --``."""
    environ = os.environ if environ is None else environ
    if environ.get("TIEBREAK_ALLOW_INGEST", "").strip().lower() in ("1", "yes", "true", "on"):
        return True
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--allow-ingest", action="store_true")
    args, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    return bool(args.allow_ingest)


def file_stem(held: Candidate) -> str:
    """A file name stem for the candidate's downloads: benchmark, setting, precision and a slug of the name."""
    import re

    slug = re.sub(r"[^A-Za-z0-9.+-]+", "_", held.request.name).strip("_")[:40] or "run"
    req = held.request
    return f"{req.benchmark}_{req.setting}_{req.precision}_{slug}"


def ingest(held: Candidate, data_dir: Path) -> str:
    """Write the candidate's rows into ``data_dir`` through ``evalcore ingest``'s path (atomic write and the
    duplicate check under the folder's lock); the written file's name. UploadError when refused (the server
    did not opt in, the rows are there already, the folder is not writable)."""
    if not ingest_allowed():
        raise UploadError("this server does not add uploads to its data folder")
    from evalcore.errors import InputError
    from evalcore.commands.ingest import ingest_rows

    try:
        rows = held.frame().assign(system=held.request.name, source=SOURCE)  # an ordinary system now
        written = ingest_rows(rows, data_dir, name=f"your run {held.request.name!r}")
    except InputError as exc:
        raise UploadError(str(exc).replace(str(data_dir), "the data folder")) from None
    LOG.info("candidate %r ingested into %s", held.system, written)
    return Path(written).name


DEFAULT_METRIC = {"mcr": "p@1", "full-pooled": "ndcg@10"}
"""The metric a view shows the candidate under when it moves the sidebar to the candidate's condition and the
sidebar's own metric is not one the candidate was evaluated with."""
DEFAULT_TIE_POLICY = "docid-desc"


def board_condition(held: Candidate, shown=None):
    """The condition the candidate is ranked under, beside a sidebar showing ``shown`` (a
    :class:`~evalcore.store.Condition`, or None): the run's own benchmark, setting, instruction state and
    precision; the sidebar's metric when the sidebar shows the run's setting and the run was evaluated with it,
    else the setting's :data:`DEFAULT_METRIC` (as the sidebar's own default follows the setting: p@1, the
    accuracy, for MCR); the sidebar's tie policy where the run has it, else :data:`DEFAULT_TIE_POLICY`."""
    from evalcore.store import Condition

    req = held.request
    wanted_metric = getattr(shown, "metric", None) if getattr(shown, "setting", None) == req.setting else None
    wanted_ties = getattr(shown, "tie_policy", None)
    metric = wanted_metric if wanted_metric in held.metrics else DEFAULT_METRIC.get(req.setting, "ndcg@10")
    ties = wanted_ties if wanted_ties in held.tie_policies else DEFAULT_TIE_POLICY
    return Condition(req.benchmark, metric, req.setting, req.instruction, req.precision, ties)


def condition_wishes(held: Candidate, metric: str | None = None, tie_policy: str | None = None) -> dict:
    """The sidebar's URL keys set to the candidate's condition (``ui/state.py`` wishes)."""
    req = held.request
    return {"bench": req.benchmark, "setting": req.setting, "metric": metric or DEFAULT_METRIC.get(req.setting,
                                                                                                   "ndcg@10"),
            "instr": "with" if req.instruction else "without", "prec": req.precision,
            "ties": tie_policy or DEFAULT_TIE_POLICY}


def show_condition(held: Candidate) -> None:
    """Set the sidebar's URL wishes to the candidate's condition (the sidebar box's button)."""
    from ui import state

    for key, value in condition_wishes(held).items():
        state.set_wish(key, value)
