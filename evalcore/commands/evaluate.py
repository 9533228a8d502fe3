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


def run(args: argparse.Namespace) -> int:
    from evalcore.engine import evaluate, parse_tie_policy, summarize
    from evalcore.errors import InputError
    from evalcore.metrics import parse_metrics

    try:
        metrics = parse_metrics(args.metrics)
        policy = parse_tie_policy(args.tie_policy)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    per_query = evaluate(args.run, args.qrels, metrics, policy, include_missing=args.include_missing, maxp=args.maxp)
    if per_query.empty:
        raise InputError("no query is in both the run and the qrels: check that the qids match", path=args.run)
    if args.per_query:
        from evalcore.formats import write_parquet_atomic

        per_query = per_query.assign(tie_policy=str(policy))
        write_parquet_atomic(per_query, args.per_query)
    summary = summarize(per_query)
    if args.format == "csv":
        print(summary.to_csv(index=False), end="")
    elif args.format == "json":
        print(summary.to_json(orient="records", indent=2))
    else:
        print(f"tie policy: {policy}   queries: {per_query['qid'].nunique()}")
        print(summary.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0
