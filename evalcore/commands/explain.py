"""``evalcore explain``: does a reported number match the run, and if not, do ties explain the difference?

Per task and metric: the tie-aware expected value, the tie range [min, max], the value under each named tie
policy and a one-line verdict for each reported number (rules and tolerance: :mod:`evalcore.explain`). Exit
code 0 when every reported number is explained (reproduced, or inside the tie range), 1 when one is not, 2 on
bad input.
"""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run file: TREC, parquet, CSV/TSV or jsonl (qid, docid, score)")
    parser.add_argument("--qrels", required=True, help="qrels: TREC, BEIR tsv, R2MED jsonl, parquet/CSV")
    parser.add_argument("--metric", default="ndcg@10", help="metric(s), comma-separated (default ndcg@10)")
    parser.add_argument("--reported", action="append", default=[], metavar="[TASK/METRIC=]VALUE",
                        help="a reported number (0.4312, or 43.12 as a percentage); its tolerance is half a unit "
                             "in its last decimal; repeat for several")
    parser.add_argument("--system", help="compare with this system's numbers in the data folder (needs --benchmark "
                                         "and --task)")
    parser.add_argument("--task", default="run", help="the run's task name (the system's row to compare with)")
    parser.add_argument("--benchmark", help="benchmark of --system's rows, e.g. rar-b")
    parser.add_argument("--setting", default="full", help="setting of --system's rows (default full)")
    parser.add_argument("--instruction", choices=("yes", "no", "any"), default="any",
                        help="instruction state of --system's rows (default any: as published)")
    parser.add_argument("--system-precision", default="fp32", help="precision of --system's rows (default fp32)")
    parser.add_argument("--data", default=None, help="data directory (default $TIEBREAK_DATA or data)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random:SEED policy (default 0)")
    parser.add_argument("--precision", action="store_true",
                        help="also say whether rounding the scores to bf16 / fp16 (with and without HPS) reaches it")
    parser.add_argument("--scoring", choices=("score", "sigmoid"), default="score",
                        help="what the scores are, for --precision (default score: model outputs)")
    parser.add_argument("--format", choices=("table", "json"), default="table")


def run(args: argparse.Namespace) -> int:
    from evalcore import explain
    from evalcore.commands._options import metrics_option
    from evalcore.errors import InputError

    metrics = [str(m) for m in metrics_option(args.metric, "--metric")]
    reported = [explain.reported_spec(spec) for spec in args.reported]
    if args.system:
        reported += system_numbers(args, metrics)
    if not reported:
        raise InputError("nothing to compare with: give --reported VALUE (or --system NAME)")
    from evalcore.formats import readable_input

    with readable_input(args.run) as run, readable_input(args.qrels) as qrels:  # a pipe is read once
        verdicts = explain.explain_run(run, qrels, metrics, reported, task=args.task, seed=args.seed,
                                       precision=args.precision, scoring=args.scoring)
    print_verdicts(verdicts, args.format)
    return 0 if all(v.explained for v in verdicts) else 1


def system_numbers(args: argparse.Namespace, metrics: list[str]) -> list:
    """--system's task-level numbers for --task under every tie policy its rows carry."""
    import pandas as pd

    from evalcore import explain
    from evalcore.errors import InputError
    from evalcore.store import Condition, Store

    if not args.benchmark or args.task == "run":
        raise InputError("--system needs --benchmark and --task (the task the run is of)")
    store = Store(args.data)
    instruction = {"yes": True, "no": False, "any": None}[args.instruction]
    numbers = []
    for metric in metrics:
        frames = []
        for policy in explain.NAMED_POLICIES:
            cond = Condition(args.benchmark, metric, args.setting, instruction, args.system_precision, policy)
            rows = store.task_table(cond, [args.system])
            frames.append(rows[rows["task"] == args.task].assign(tie_policy=policy))
        rows = pd.concat(frames, ignore_index=True)
        numbers += explain.reported_from_system(rows, args.system, metric)
    if not numbers:
        raise InputError(f"--system {args.system!r}: no {', '.join(metrics)} row for task {args.task!r} in "
                         f"{args.benchmark} {args.setting} {args.system_precision} (instruction {args.instruction})")
    return numbers


def print_verdicts(verdicts: list, fmt: str) -> None:
    if fmt == "json":
        import json

        print(json.dumps([v.record() for v in verdicts], indent=2))
        return
    policies = list(dict.fromkeys(p for v in verdicts for p in v.values.policies))
    header = ["task", "metric", "reported", "by", "expected", "min", "max", *policies, "verdict"]
    cells = []
    for v in verdicts:
        values = v.values
        cells.append([values.task, values.metric, f"{v.reported.value:.4f}", v.reported.label,
                      f"{values.expected:.4f}", f"{values.min:.4f}", f"{values.max:.4f}",
                      *(f"{values.policies[p]:.4f}" if p in values.policies else "" for p in policies),
                      {"reproduced": "reproduced", "tie-range": "tie range", "outside": "NOT EXPLAINED"}[v.kind]])
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for line in cells:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)))
    print()
    for v in verdicts:
        print(f"{v.values.task} {v.values.metric} ({v.reported.label}): {v.line}")
    print(f"tolerance: half a unit in the reported number's last decimal; [min, max] is the mean of the per-query "
          f"ranges over {verdicts[0].values.n_queries} queries (queries are independent)")
