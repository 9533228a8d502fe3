"""``evalcore evaluate``: tie-aware metrics of a run against qrels.

Prints, per metric, the mean oblivious / expected / min / max, range (max - min), bias
(oblivious - expected) and the share of queries with a tie straddling the cutoff.
"""
from __future__ import annotations

import argparse

DEFAULT_METRICS = "ndcg@10,mrr@10,recall@100"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run file: TREC, parquet, CSV/TSV or jsonl (qid, docid, score)")
    parser.add_argument("--qrels", required=True, help="qrels: TREC, BEIR tsv, R2MED jsonl, parquet/CSV")
    parser.add_argument("--metrics", default=DEFAULT_METRICS, help=f"comma-separated (default {DEFAULT_METRICS})")
    parser.add_argument("--tie-policy", default="docid-desc",
                        help="tie-break of the oblivious value: docid-desc (trec_eval, default), docid-asc, "
                             "input-order, random:SEED")
    parser.add_argument("--maxp", action="store_true", help="docids 'doc:chunk' -> doc scored by its best chunk")
    parser.add_argument("--include-missing", action="store_true",
                        help="count qrels queries missing from the run as zeros (trec_eval -c)")
    parser.add_argument("--per-query", metavar="OUT.parquet", help="write per-query values (parquet)")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.add_argument("--engine", choices=("local", "spark"), default="local",
                        help="spark: --run is a parquet glob evaluated on Apache Spark (pip install -r "
                             "requirements-spark.txt); --per-query is then an output directory")
    parser.add_argument("--master", default="local[2]", help="Spark master for --engine spark (default local[2])")


def run(args: argparse.Namespace) -> int:
    from evalcore.commands._options import metrics_option, tie_policy_option
    from evalcore.engine import evaluate_table, summary_rows
    from evalcore.errors import InputError
    from evalcore.outputs import check_output

    metrics = metrics_option(args.metrics)
    policy = tie_policy_option(args.tie_policy)
    if args.engine == "local":  # evaluate_spark_paths checks its folder before Spark starts
        check_output(args.per_query, [args.run, args.qrels], "--per-query file")
    if args.engine == "spark":
        from evalcore.spark import evaluate_spark_paths

        summary = evaluate_spark_paths(args.run, args.qrels, metrics, policy, master=args.master,
                                       per_query_out=args.per_query, include_missing=args.include_missing,
                                       maxp=args.maxp)
        if summary.empty:
            raise InputError("no query is in both the run and the qrels: check that the qids match", path=args.run)
        if args.format == "csv":
            print(summary.to_csv(index=False), end="")
        elif args.format == "json":
            print(summary.to_json(orient="records", indent=2))
        else:
            print(f"tie policy: {policy}   queries: {int(summary['n_queries'].max())}   engine: spark ({args.master})")
            print(summary.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        return 0
    from evalcore.formats import readable_input

    with readable_input(args.run) as run, readable_input(args.qrels) as qrels:  # a pipe is read once
        per_query = evaluate_table(run, qrels, metrics, policy, include_missing=args.include_missing, maxp=args.maxp)
    if per_query.num_rows == 0:
        raise InputError("no query is in both the run and the qrels: check that the qids match", path=args.run)
    if args.per_query:
        import numpy as np

        from evalcore.formats import write_parquet_atomic

        from evalcore import arrow_np

        tie_policy = arrow_np.strings([str(policy)]).take(arrow_np.indices(np.zeros(per_query.num_rows)))
        write_parquet_atomic(per_query.append_column("tie_policy", tie_policy), args.per_query, "per-query values")
    with summary_stream(args.per_query):
        print_summary(summary_rows(per_query), args.format, header=f"tie policy: {policy}   queries: "
                      f"{per_query.num_rows // len(metrics)}")
    return 0


def summary_stream(per_query_out: str | None):
    """Where the summary goes: stdout, unless the per-query data went there (then stderr, not into the data)."""
    import contextlib
    import sys

    from evalcore.outputs import is_standard_output

    if is_standard_output(per_query_out):
        return contextlib.redirect_stdout(sys.stderr)
    return contextlib.nullcontext()


def print_summary(rows: list[dict], fmt: str, header: str = "") -> None:
    """Summary rows as an aligned table, CSV or JSON on stdout."""
    from evalcore.engine import SUMMARY_COLUMNS

    if fmt == "json":
        import json

        print(json.dumps(rows, indent=2))
        return
    cells = [[f"{row[c]:.4f}" if isinstance(row[c], float) else str(row[c]) for c in SUMMARY_COLUMNS] for row in rows]
    if fmt == "csv":
        print(",".join(SUMMARY_COLUMNS))
        for line in cells:
            print(",".join(line))
        return
    widths = [max(len(c), *(len(line[i]) for line in cells)) for i, c in enumerate(SUMMARY_COLUMNS)]
    if header:
        print(header)
    print("  ".join(c.rjust(w) for c, w in zip(SUMMARY_COLUMNS, widths)))
    for line in cells:
        print("  ".join(v.rjust(w) for v, w in zip(line, widths)))
