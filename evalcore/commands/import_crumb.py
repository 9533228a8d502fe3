"""``evalcore import-crumb RUNS --crumb CRUMB_DIR``: a folder of CRUMB runs (one file per task, named
``<task>…``) evaluated by CRUMB's official procedure (:mod:`evalcore.crumb`), tie-aware, and added to the data
folder as one per-query file (``<data>/ingested/``, written atomically with its derived sums, through the
path of ``evalcore ingest``). Every run is read and evaluated before anything is written; a bad file is one
line naming it and its line, and nothing is written."""
from __future__ import annotations

import argparse

YES_NO = {"yes": True, "no": False}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", help="folder of run files named <task>… (CRUMB JSON lines, TREC, parquet, …), "
                                     "or one run file")
    parser.add_argument("--crumb", required=True,
                        help="CRUMB's files: the folder holding <task>/eval/query_labels.jsonl")
    parser.add_argument("--system", default=None,
                        help="system name (default: the runs folder's name, or the folder of the one run file)")
    parser.add_argument("--setting", default="passage", choices=("passage", "full-document"),
                        help="the collection the runs rank (default passage; MaxP applies there for "
                             "clinical_trial, set_operation_entity_retrieval, tip_of_the_tongue)")
    parser.add_argument("--instruction", default="no", choices=tuple(YES_NO),
                        help="did the queries carry CRUMB's instruction (default no)")
    parser.add_argument("--precision", default="fp32", help="precision of the scores (default fp32)")
    parser.add_argument("--split", default="eval", choices=("eval", "val"), help="CRUMB split (default eval)")
    parser.add_argument("--tie-policy", default="official",
                        help="tie policy of the oblivious value: official (default: each metric as crumb_eval's "
                             "ir_measures orders ties, docid-desc except docid-asc for RR@k) or one policy")
    parser.add_argument("--source", default=None, help="source label (default crumb-import)")
    parser.add_argument("--data", default=None, help="data folder (default $TIEBREAK_DATA or data)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from evalcore import crumb
    from evalcore.commands._options import data_precisions, precision_option, tie_policy_option
    from evalcore.commands.ingest import ingest_rows
    from evalcore.errors import InputError

    from evalcore.formats.detection import path_kind

    runs = Path(args.runs).resolve()
    system = args.system if args.system is not None else (runs.parent.name if path_kind(runs) == "file"
                                                          else runs.name)
    if not system.strip():
        raise InputError("--system must not be empty")
    args.precision = precision_option(args.precision, extra=data_precisions(args.data))  # stored canonical
    tie_policy = crumb.OFFICIAL if args.tie_policy.strip().lower() == crumb.OFFICIAL \
        else str(tie_policy_option(args.tie_policy))
    rows = crumb.evaluate_folder(args.runs, args.crumb, system=system, setting=args.setting,
                                 instruction=YES_NO[args.instruction], precision=args.precision, split=args.split,
                                 tie_policy=tie_policy, source=args.source or crumb.SOURCE)
    out = ingest_rows(rows, args.data, name=f"CRUMB runs of {system}")
    means = crumb.task_means(rows)
    headline = means[means["metric"].isin(crumb.HEADLINE_METRICS)]
    print(f"import-crumb: {system} · {args.setting} · instruction {args.instruction}: "
          f"{rows['task'].nunique()} tasks, {rows['qid'].nunique()} queries → {out}")
    print(f"{'task':32} {'metric':11} {'official':>9} {'expected':>9} {'min':>7} {'max':>7}")
    for row in headline.itertuples(index=False):
        print(f"{row.task:32} {row.metric:11} {row.oblivious:9.4f} {row.expected:9.4f} {row.min:7.4f} {row.max:7.4f}")
    return 0
