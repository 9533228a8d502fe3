"""``evalcore tasks``: the shipped tasks as inputs for your own model, and your run evaluated against them
(:mod:`evalcore.candidate`).

- ``evalcore tasks export --benchmark rar-b --setting mcr|full-pooled --out DIR`` writes, per task,
  ``DIR/<task>/queries.jsonl`` (qid, text, instruction), ``DIR/<task>/candidates.jsonl`` (MCR: qid, docid,
  text; full-pooled: docid, text — the pool every query ranks) and ``DIR/<task>/qrels.json`` (the task's
  judgements, ``{qid: {docid: grade}}``), with the ids of the shipped results, and ``DIR/README.txt`` (the
  commands that score a run with the board's metrics). It never overwrites a file.
- ``evalcore tasks evaluate --benchmark rar-b --setting mcr --candidate RUN --out ROWS.parquet`` evaluates the run
  tie-aware against the shipped qrels and writes its per-query rows (the ``query_metrics`` schema: a file
  ``evalcore ingest``-like tools and the store read). ``evalcore leaderboard --candidate RUN`` shows the same rows
  on the board without writing anything.
"""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from evalcore.schema import TASK_SETTINGS as SETTINGS  # not evalcore.candidate: it imports pandas
    from evalcore.commands._candidate import add_candidate_arguments

    actions = parser.add_subparsers(dest="tasks_action", metavar="ACTION")
    actions.required = True
    export = actions.add_parser("export", help="write each task's queries, candidates and qrels",
                                description="write each task's queries.jsonl, candidates.jsonl and qrels.json (and "
                                            "a README.txt) into a new folder")
    evaluate = actions.add_parser("evaluate", help="evaluate your run against the shipped qrels (per-query rows)",
                                  description="evaluate your run tie-aware against the shipped qrels and write its "
                                              "per-query rows (parquet)")
    for action in (export, evaluate):
        action.add_argument("--benchmark", required=True, help="benchmark with shipped tasks, e.g. rar-b")
        action.add_argument("--setting", required=True, choices=SETTINGS)
        action.add_argument("--data", default=None, help="data directory (default $TIEBREAK_DATA or data)")
    export.add_argument("--out", required=True, help="folder to write into (files there are never overwritten)")
    add_candidate_arguments(evaluate, required=True)
    evaluate.add_argument("--precision", default="fp32", help="precision label of your run (default fp32)")
    evaluate.add_argument("--out", required=True, metavar="ROWS.parquet", help="per-query rows (parquet)")


def run(args: argparse.Namespace) -> int:
    from evalcore.store.catalogue import checked_data_dir

    folder = checked_data_dir(args.data)
    if args.tasks_action == "export":
        from evalcore.candidate import export_tasks

        written = export_tasks(folder, args.benchmark, args.setting, args.out)
        tasks = {path.parent.name for path in written if path.name == "queries.jsonl"}
        print(f"tasks export: {len(tasks)} tasks of {args.benchmark} {args.setting} (queries, candidates, qrels) → "
              f"{args.out}")
        return 0
    from evalcore.commands._candidate import candidate_rows
    from evalcore.commands._options import precision_option
    from evalcore.formats import write_parquet_atomic
    from evalcore.outputs import check_output

    check_output(args.out, [args.candidate], "--out file")
    args.precision = precision_option(args.precision)  # the label the rows carry, canonical
    rows, name = candidate_rows(args, folder)
    write_parquet_atomic(rows, args.out, "per-query rows")
    print(f"tasks evaluate: {name}: {rows['qid'].nunique()} qids × {rows['task'].nunique()} tasks, "
          f"{len(rows):,} rows → {args.out}")
    return 0
