"""``evalcore ingest``: evaluate one run against qrels with the tie-aware engine and add its per-query rows
(``query_metrics``) to the data directory as a new parquet file under ``<data>/ingested/`` (written
atomically; existing files are never rewritten) together with its derived sums (``_derived/``, see
:mod:`evalcore.store.derived`). Refuses a (system, condition, task, metric) that the data
directory already holds, so task means never double count: checked before the evaluation (to fail fast) and
again under an exclusive lock of the ``<data>/ingested/`` folder right before the write, so two ingests of
the same results started together cannot both land.

The lock is waited for at most ``TIEBREAK_LOCK_TIMEOUT`` seconds (default 120): an ingest stopped (Ctrl-Z,
SIGSTOP) or hung while holding it would otherwise make every later ingest wait forever. The holder records
its pid, host, start time and command in ``<data>/ingested/.ingest-lock.json`` (hidden: no reader sees it),
and the one-line error of a timed-out ingest names it."""
from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Iterator

YES_NO = {"yes": True, "no": False}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run file (TREC, BEIR tsv/jsonl, parquet, CSV, nested JSON)")
    parser.add_argument("--qrels", required=True, help="qrels file (the same formats)")
    parser.add_argument("--system", required=True, help="system name")
    parser.add_argument("--benchmark", required=True, help="benchmark name, e.g. rar-b")
    parser.add_argument("--task", required=True, help="task name, e.g. ARCChallenge")
    parser.add_argument("--setting", required=True, choices=("full", "mcr", "full-pooled"),
                        help="setting of the run; a qrels (or run) file with task / setting / benchmark columns, "
                             "like the shipped data/tasks/*/qrels.parquet, is read for --task, --setting and "
                             "--benchmark only")
    parser.add_argument("--instruction", required=True, choices=tuple(YES_NO), help="was an instruction used")
    parser.add_argument("--precision", required=True, help="fp32, fp16, bf16, bf16+hps, int8, binary, ...")
    parser.add_argument("--tie-policy", default="docid-desc",
                        help="tie policy of the oblivious value (default docid-desc)")
    parser.add_argument("--metrics", nargs="+", default=["ndcg@10", "mrr@10", "recall@100"],
                        help="metrics (default ndcg@10 mrr@10 recall@100)")
    parser.add_argument("--include-missing", action="store_true",
                        help="score qrels queries absent from the run as 0 (trec_eval -c)")
    parser.add_argument("--source", default="ingested", help="source label (default ingested)")
    parser.add_argument("--data", default=None, help="data directory (default $TIEBREAK_DATA or data)")


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9.+-]+", "_", text).strip("_")[:60] or "x"


LOCK_INFO = ".ingest-lock.json"
LOCK_TIMEOUT_VARIABLE = "TIEBREAK_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 120.0


@contextlib.contextmanager
def ingest_lock(folder: Path, timeout: float | None = None) -> Iterator[None]:
    """Exclusive ``flock`` on the ``folder`` directory itself (created as needed) for the block: other ingests
    into the same data dir wait, at most ``timeout`` seconds (default ``$TIEBREAK_LOCK_TIMEOUT`` or 120), then
    fail with a one-line InputError naming the holder (from :data:`LOCK_INFO`, which the holder writes
    beside the data and removes on release; a killed holder's lock is released by the kernel and its stale
    record is overwritten). Where ``fcntl`` is missing (Windows) the block runs unlocked."""
    import os
    import time

    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    timeout = _lock_timeout() if timeout is None else timeout
    folder.mkdir(parents=True, exist_ok=True)
    handle = os.open(folder, os.O_RDONLY)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise _lock_timed_out(folder, timeout) from None
                time.sleep(0.05)
        record = _write_lock_info(folder)
        try:
            yield
        finally:
            _remove_lock_info(folder, record)
    finally:
        os.close(handle)  # releases the lock


def _lock_timeout() -> float:
    import math
    import os

    from evalcore.errors import InputError

    text = os.environ.get(LOCK_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_LOCK_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise InputError(f"{LOCK_TIMEOUT_VARIABLE} must be a number of seconds >= 0, got {text!r}")
    return value


def _write_lock_info(folder: Path) -> dict:
    """Who holds the lock, written atomically (a reader never sees half a record)."""
    import json
    import os
    import socket
    import sys
    import time

    from evalcore.formats import atomic_path

    record = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(),
              "command": " ".join(["evalcore", *sys.argv[1:]])[:500]}
    with atomic_path(folder / LOCK_INFO, "lock record") as temporary:
        temporary.write_text(json.dumps(record))
    return record


def _remove_lock_info(folder: Path, record: dict) -> None:
    """Remove the lock record if it is still ours (another holder may have replaced a stale one)."""
    import json

    path = folder / LOCK_INFO
    try:
        if json.loads(path.read_text()) == record:
            path.unlink()
    except (OSError, ValueError):
        pass


def _lock_timed_out(folder: Path, timeout: float):
    """The one-line error of an ingest that waited ``timeout`` seconds: who holds the lock and what to do."""
    import json
    import socket
    import time

    from evalcore.errors import InputError

    try:
        record = json.loads((folder / LOCK_INFO).read_text())
        holder = f"pid {int(record['pid'])} on {record['host']}"
        age = f" for {time.time() - float(record['since']):.0f} s"
        command = f" ({record['command']})" if record.get("command") else ""
        if record["host"] == socket.gethostname():
            holder += _process_state(int(record["pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        holder, age, command = "another process (its lock record is missing or unreadable)", "", ""
    return InputError(f"gave up after {timeout:g} s waiting for the ingest lock, held{age} by {holder}{command}: "
                      f"resume or end that process, or wait longer with {LOCK_TIMEOUT_VARIABLE}=SECONDS", folder)


def _process_state(pid: int) -> str:
    """' (stopped)' / ' (not running)' for a process on this host, '' when unknown."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return " (not running)"
    except (OSError, IndexError):
        return ""
    return " (stopped)" if state in ("T", "t") else ""


def _refuse_duplicates(store, args: argparse.Namespace, metrics: list[str], instruction: bool) -> None:
    from evalcore.errors import InputError
    from evalcore.store import Condition

    for metric in metrics:
        cond = Condition(args.benchmark, metric, args.setting, instruction, args.precision, args.tie_policy)
        existing = store.task_table(cond, [args.system])
        existing = existing[(existing["task"] == args.task) & existing["has_query_data"]]
        if len(existing):
            raise InputError(f"{args.system} / {args.task} / {metric} under {cond} is already in {store.data_dir}; "
                             "remove its file first to replace it")


def run(args: argparse.Namespace) -> int:
    from evalcore.commands._options import data_precisions, metrics_option, precision_option, tie_policy_option
    from evalcore.engine import evaluate
    from evalcore.errors import InputError
    from evalcore.outputs import check_output_folder
    from evalcore.schema import QUERY_METRICS
    from evalcore.store import Store, data_dir

    for name in ("system", "benchmark", "task", "precision"):
        if not getattr(args, name).strip():
            raise InputError(f"--{name} must not be empty")
    metrics = [str(m) for m in metrics_option(args.metrics)]
    args.tie_policy = str(tie_policy_option(args.tie_policy))  # stored canonical: DOCID-DESC is docid-desc
    args.precision = precision_option(args.precision, extra=data_precisions(args.data))  # FP32 is fp32
    check_output_folder(data_dir(args.data), "data folder")
    store = Store(args.data)
    instruction = YES_NO[args.instruction]
    _refuse_duplicates(store, args, metrics, instruction)
    from evalcore.formats import Selection, readable_input

    with readable_input(args.run) as run, readable_input(args.qrels) as qrels:  # a pipe is read once
        per_query = evaluate(run, qrels, metrics=metrics, tie_policy=args.tie_policy,
                             include_missing=args.include_missing,
                             select=Selection(benchmark=args.benchmark, task=args.task, setting=args.setting))
    if per_query.empty:
        raise InputError("no query is in both the run and the qrels", args.run)
    frame = per_query.assign(
        system=args.system, benchmark=args.benchmark, task=args.task, setting=args.setting,
        instruction=instruction, precision=args.precision, tie_policy=args.tie_policy, source=args.source,
    )[list(QUERY_METRICS)]
    out = _write_ingested(store, frame, lambda current: _refuse_duplicates(current, args, metrics, instruction))
    print(f"ingest: {per_query['qid'].nunique()} queries × {len(metrics)} metrics → {out}")
    return 0


def ingest_rows(rows, data_dir, name: str = "candidate") -> Path:
    """Add per-query rows already evaluated (a DataFrame with the ``query_metrics`` columns, e.g.
    :func:`evalcore.candidate.evaluate_candidate`'s) to ``<data_dir>/ingested/`` through the path of
    ``evalcore ingest``: checked as a per-query file is, refused (one-line InputError naming ``name``) when they
    repeat a (system, condition, task, metric) the folder holds — before, and again under the ingest lock right
    before the atomic write of the file and its derived sums. Returns the file written."""
    from evalcore.outputs import check_output_folder
    from evalcore.schema import QUERY_METRICS
    from evalcore.store import Store, data_dir as resolve

    folder = resolve(data_dir)
    check_output_folder(folder, "data folder")
    store = Store(folder)
    frame = rows[list(QUERY_METRICS)]
    store.with_overlay(frame, name=name)  # the checks and the repeat check, before any write
    return _write_ingested(store, frame, lambda current: current.with_overlay(frame, name=name))


def _write_ingested(store, frame, refuse) -> Path:
    """Write ``frame`` as a new file of ``<data>/ingested/`` (+ its derived sums) atomically, under the ingest
    lock, after ``refuse(store)`` passed again on the reloaded store (what landed meanwhile)."""
    import uuid

    from evalcore import importers
    from evalcore.outputs import sweep_temporaries, writing
    from evalcore.store import derived

    tasks = frame["task"].unique()
    parts = (frame["benchmark"].iloc[0], tasks[0] if len(tasks) == 1 else f"{len(tasks)}tasks",
             frame["system"].iloc[0], frame["setting"].iloc[0], frame["precision"].iloc[0])
    name = "_".join(_slug(str(v)) for v in parts)
    out = Path(store.data_dir) / "ingested" / f"{name}_{uuid.uuid4().hex[:8]}.parquet"
    with writing(out, "ingested results"), ingest_lock(out.parent):
        store.reload()  # what landed while the rows were evaluated
        refuse(store)
        derived.write_with_sums(out, lambda temporary: importers.write_compact_table(frame, temporary))  # + sums
    sweep_temporaries(out.parent)  # what killed ingests left there earlier
    return out
