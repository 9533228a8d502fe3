"""``evalcore evaluate``: tie-aware metrics of a run against qrels.

Prints, per metric, the mean oblivious / expected / min / max, range (max - min), bias
(oblivious - expected) and the share of queries with a tie straddling the cutoff. Qrels that hold several tasks
or settings (``task`` / ``setting`` / ``benchmark`` columns, as the shipped ``data/tasks/*/qrels.parquet``) are
evaluated task by task when the run names its tasks too, else refused until ``--task`` / ``--setting`` select one
(:mod:`evalcore.formats.partitions`); the summary then has a row per task and metric.
"""
from __future__ import annotations

import argparse

DEFAULT_METRICS = "ndcg@10,mrr@10,recall@100"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run file: TREC, parquet, CSV/TSV, JSON lines (qid, docid, "
                                                      "score) or nested JSON {qid: {docid: score}} (.gz too)")
    parser.add_argument("--qrels", required=True, help="qrels: TREC, BEIR tsv, R2MED jsonl, parquet/CSV, nested JSON "
                                                        "{qid: {docid: grade}}")
    add_selection_arguments(parser)
    parser.add_argument("--metrics", default=DEFAULT_METRICS, help=f"comma-separated (default {DEFAULT_METRICS})")
    parser.add_argument("--tie-policy", default="docid-desc",
                        help="tie-break of the oblivious value: docid-desc (trec_eval, default), docid-asc, "
                             "input-order, random:SEED")
    parser.add_argument("--maxp", action="store_true", help="docids 'doc:chunk' -> doc scored by its best chunk")
    parser.add_argument("--include-missing", action="store_true",
                        help="count qrels queries missing from the run as zeros (trec_eval -c)")
    parser.add_argument("--per-query", metavar="OUT.parquet",
                        help="write per-query values: parquet, or nested JSON {qid: {metric: {oblivious, expected, "
                             "min, max, ...}}} for a .json name")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.add_argument("--engine", choices=("local", "spark"), default="local",
                        help="spark: --run is a parquet glob evaluated on Apache Spark (pip install -r "
                             "requirements-spark.txt); --per-query is then an output directory")
    parser.add_argument("--master", default="local[2]", help="Spark master for --engine spark (default local[2])")


def add_selection_arguments(parser: argparse.ArgumentParser, task: bool = True) -> None:
    """``--task`` / ``--setting`` / ``--benchmark``: which part of a run or qrels file that holds several to
    evaluate (their ``task`` / ``setting`` / ``benchmark`` columns; files without them are read whole)."""
    if task:
        parser.add_argument("--task", help="evaluate only this task of a run or qrels file with a task column")
    parser.add_argument("--setting", help="only this setting of a file with a setting column (e.g. mcr)")
    parser.add_argument("--benchmark", help="only this benchmark of a file with a benchmark column")


def selection_of(args: argparse.Namespace):
    """The :class:`evalcore.formats.Selection` the command's options name."""
    from evalcore.formats import Selection

    return Selection(benchmark=getattr(args, "benchmark", None), task=getattr(args, "task", None),
                     setting=getattr(args, "setting", None))


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

        if selection_of(args).items():
            raise InputError("--task / --setting / --benchmark select a part of a local run or qrels file; with "
                             "--engine spark give files of one task (a qrels file of several is refused)")

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
        per_query = evaluate_table(run, qrels, metrics, policy, include_missing=args.include_missing, maxp=args.maxp,
                                   select=selection_of(args))
    if per_query.num_rows == 0:
        raise InputError("no query is in both the run and the qrels: check that the qids match", path=args.run)
    if args.per_query:
        write_per_query(per_query, args.per_query, str(policy))
    with summary_stream(args.per_query):
        print_summary(summary_rows(per_query), args.format, header=f"tie policy: {policy}   queries: "
                      f"{per_query.num_rows // len(metrics)}")
    return 0


def write_per_query(per_query, out: str, policy: str) -> None:
    """The per-query values (with their tie policy) written atomically: nested JSON for a ``.json`` name
    (:func:`evalcore.formats.nested.write_per_query_json`), else parquet."""
    from pathlib import Path

    import numpy as np

    from evalcore import arrow_np
    from evalcore.formats import atomic_path, write_parquet_atomic

    tie_policy = arrow_np.strings([policy]).take(arrow_np.indices(np.zeros(per_query.num_rows)))
    table = per_query.append_column("tie_policy", tie_policy)
    name = Path(out).name.lower()
    if name.endswith((".json", ".json.gz")):
        from evalcore.formats.nested import write_per_query_json

        with atomic_path(out, "per-query values") as temporary:
            write_per_query_json(table, temporary, compressed=name.endswith(".gz"))
        return
    write_parquet_atomic(table, out, "per-query values")


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
    from evalcore.errors import printable
    from evalcore.formats import PARTITION_COLUMNS

    columns = [c for c in PARTITION_COLUMNS if rows and c in rows[0]] + SUMMARY_COLUMNS
    cells = [[f"{row[c]:.4f}" if isinstance(row[c], float) else printable(str(row[c])) for c in columns] for row in rows]
    if fmt == "csv":
        import csv
        import sys

        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(cells)
        return
    widths = [max(len(c), *(len(line[i]) for line in cells)) for i, c in enumerate(columns)]
    if header:
        print(header)
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    for line in cells:
        print("  ".join(v.rjust(w) for v, w in zip(line, widths)))
