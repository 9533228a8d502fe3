"""``evalcore ties``: tie statistics of a run — tie groups, largest group, share of the top k in a tie,
queries whose tie straddles the cutoff (the quantities TRM corrects for; arXiv 2508.03306)."""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run file (TREC, BEIR tsv/jsonl, parquet, CSV)")
    parser.add_argument("--k", type=int, default=10, help="cutoff (default 10)")
    parser.add_argument("--per-query", metavar="OUT.parquet", help="also write per-query statistics here")
    parser.add_argument(
        "--format", choices=("table", "csv", "json"), default="table",
        help="how to print the run summary (default: aligned table)",
    )


def run(args: argparse.Namespace) -> int:
    import csv
    import json
    import sys

    from evalcore import formats, precision
    from evalcore.commands.evaluate import summary_stream
    from evalcore.errors import InputError
    from evalcore.outputs import check_output

    if args.k < 1:
        raise InputError(f"--k must be a positive integer, got {args.k}")
    check_output(args.per_query, [args.run], "--per-query file")
    try:
        with formats.readable_input(args.run) as run:  # a pipe is read once, not sniffed and then read
            run_table = formats.read_run(run)
    except OSError as exc:  # missing / unreadable file: bad input, not a crash
        raise InputError(f"cannot read run: {exc.strerror or exc}", args.run) from exc
    per_query = precision.tie_stats(run_table, k=args.k)
    summary = {"run": str(args.run), **precision.summarize_ties(per_query)}
    if args.per_query:
        formats.write_parquet_atomic(per_query, args.per_query, "per-query tie statistics")

    with summary_stream(args.per_query):
        if args.format == "json":
            print(json.dumps(summary, indent=2))
        elif args.format == "csv":
            writer = csv.writer(sys.stdout, lineterminator="\n")
            writer.writerow(summary)
            writer.writerow(summary.values())
        else:
            width = max(len(key) for key in summary)
            for key, value in summary.items():
                print(f"{key:<{width}}  {_format_value(value)}")
    return 0


def _format_value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
