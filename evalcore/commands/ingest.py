"""``evalcore ingest``: evaluate one run against qrels with the tie-aware engine and add its per-query rows
(``query_metrics``) to the data directory as a new parquet file under ``<data>/ingested/`` (written
atomically; existing files are never rewritten). Refuses a (system, condition, task, metric) that the data
directory already holds, so task means never double count: checked before the evaluation (to fail fast) and
again under an exclusive lock of the ``<data>/ingested/`` folder right before the write, so two ingests of
the same results started together cannot both land."""
from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Iterator

YES_NO = {"yes": True, "no": False}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run file (TREC, BEIR tsv/jsonl, parquet, CSV)")
    parser.add_argument("--qrels", required=True, help="qrels file")
    parser.add_argument("--system", required=True, help="system name")
    parser.add_argument("--benchmark", required=True, help="benchmark name, e.g. rar-b")
    parser.add_argument("--task", required=True, help="task name, e.g. ARCChallenge")
    parser.add_argument("--setting", required=True, choices=("full", "mcr"))
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


@contextlib.contextmanager
def ingest_lock(folder: Path) -> Iterator[None]:
    """Exclusive ``flock`` on the ``folder`` directory itself (created as needed) for the block: other ingests
    into the same data dir wait, and no lock file is left in it. Where ``fcntl`` is missing (Windows) the
    block runs unlocked."""
    import os

    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    handle = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # releases the lock


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
    import os
    import uuid

    from evalcore.commands._options import metrics_option, tie_policy_option
    from evalcore.engine import evaluate
    from evalcore.errors import InputError
    from evalcore.importers import write_compact_parquet
    from evalcore.outputs import check_output_folder, writing
    from evalcore.store import Store

    for name in ("system", "benchmark", "task", "precision"):
        if not getattr(args, name).strip():
            raise InputError(f"--{name} must not be empty")
    metrics = [str(m) for m in metrics_option(args.metrics)]
    args.tie_policy = str(tie_policy_option(args.tie_policy))  # stored canonical: DOCID-DESC is docid-desc
    check_output_folder(args.data or os.environ.get("TIEBREAK_DATA") or "data", "data folder")
    store = Store(args.data)
    instruction = YES_NO[args.instruction]
    _refuse_duplicates(store, args, metrics, instruction)
    per_query = evaluate(args.run, args.qrels, metrics=metrics, tie_policy=args.tie_policy,
                         include_missing=args.include_missing)
    if per_query.empty:
        raise InputError("no query is in both the run and the qrels", args.run)
    frame = per_query.assign(
        system=args.system, benchmark=args.benchmark, task=args.task, setting=args.setting,
        instruction=instruction, precision=args.precision, tie_policy=args.tie_policy, source=args.source,
    )[["system", "benchmark", "task", "setting", "instruction", "precision", "qid", "metric", "oblivious",
       "expected", "min", "max", "tie_policy", "n_candidates", "tied_at_cutoff", "source"]]
    name = "_".join(_slug(v) for v in (args.benchmark, args.task, args.system, args.setting, args.precision))
    out = Path(store.data_dir) / "ingested" / f"{name}_{uuid.uuid4().hex[:8]}.parquet"
    with writing(out, "ingested results"), ingest_lock(out.parent):
        store.reload()  # what landed while this run was evaluated
        _refuse_duplicates(store, args, metrics, instruction)
        write_compact_parquet(frame, out)
    print(f"ingest: {per_query['qid'].nunique()} queries × {len(metrics)} metrics → {out}")
    return 0
