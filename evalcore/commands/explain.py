"""``evalcore explain``: does a reported number match the run, and if not, do ties explain the difference?

Per task and metric: the tie-aware expected value, the tie range [min, max], the value under each named tie
policy and a one-line verdict for each reported number (rules and tolerance: :mod:`evalcore.explain`). Exit
code 0 when every reported number is explained (reproduced, or inside the tie range), 1 when one is not, 2 on
bad input.
"""
from __future__ import annotations

import argparse

from evalcore.commands._options import SEED_HELP, seed_type


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, action="append",
                        help="run file: TREC, parquet, CSV/TSV or jsonl (qid, docid, score); repeat with --qrels "
                             "and --task for several tasks")
    parser.add_argument("--qrels", required=True, action="append",
                        help="qrels: TREC, BEIR tsv, R2MED jsonl, parquet/CSV (one per --run, in order)")
    parser.add_argument("--metric", default="ndcg@10", help="metric(s), comma-separated (default ndcg@10)")
    parser.add_argument("--reported", action="append", default=[], metavar="[TASK/][METRIC=]VALUE",
                        help="a reported number (0.4312, or 43.12 / 43.12%% as a percentage; not 0 or 1: write "
                             "1.0 or 1%%); its tolerance is half a unit in its last written decimal; repeat for "
                             "several")
    parser.add_argument("--system", help="compare with this system's numbers in the data folder (needs --benchmark "
                                         "and --task)")
    parser.add_argument("--task", action="append", default=[],
                        help="the task of each --run, in order (default: 'run' for one run, else each run "
                             "file's name without its suffixes); --system's rows are looked up by it, and a run or "
                             "qrels file with a task column is read for it only")
    parser.add_argument("--benchmark", help="benchmark of --system's rows, e.g. rar-b (also selects it in a file with a "
                                            "benchmark column)")
    parser.add_argument("--setting", default=None,
                        help="setting of --system's rows (default full); also selects that setting of a run or qrels "
                             "file with a setting column")
    parser.add_argument("--instruction", choices=("yes", "no", "any"), default="any",
                        help="instruction state of --system's rows (default any: as published)")
    parser.add_argument("--system-precision", default="fp32",
                        help="precision of --system's rows (default fp32; fp16, bf16, bf16+hps, int8, binary, q4, …)")
    parser.add_argument("--data", default=None, help="data directory (default $TIEBREAK_DATA or data)")
    parser.add_argument("--seed", type=seed_type, default=0,
                        help=f"seed of the random:SEED policy: {SEED_HELP} (default 0)")
    parser.add_argument("--precision", action="store_true",
                        help="also say whether rounding the scores to bf16 / fp16 (with and without HPS) reaches it")
    parser.add_argument("--scoring", choices=("score", "sigmoid"), default="score",
                        help="what the scores are, for --precision (default score: model outputs)")
    parser.add_argument("--format", choices=("table", "json"), default="table")


def run(args: argparse.Namespace) -> int:
    from evalcore import explain
    from evalcore.commands._options import metrics_option
    from evalcore.errors import InputError
    from evalcore.formats import Selection, read_evaluation, readable_input

    metrics = [str(m) for m in metrics_option(args.metric, "--metric")]
    tasks = task_names(args)
    reported = [explain.reported_spec(spec) for spec in args.reported]
    if args.system:
        reported += system_numbers(args, metrics, tasks)
    if not reported:
        raise InputError("nothing to compare with: give --reported VALUE (or --system NAME)")
    if len(tasks) > 1:
        unnamed = [r.text for r in reported if r.task is None]
        if unnamed:
            raise InputError(f"--reported {unnamed[0]}: several runs: say which task (TASK=VALUE; tasks: "
                             f"{', '.join(tasks)})")
    unknown = sorted({r.task for r in reported if r.task is not None} - set(tasks))
    if unknown:
        raise InputError(f"--reported for task {unknown[0]!r}: no --run of that task (tasks: {', '.join(tasks)}; "
                         "name each run's task with --task)")
    verdicts = []
    for run_path, qrels_path, task in zip(args.run, args.qrels, tasks):
        mine = [r for r in reported if r.task in (None, task)]
        if not mine:
            continue
        select = Selection(benchmark=args.benchmark, task=task if args.task else None, setting=args.setting)
        with readable_input(run_path) as run, readable_input(qrels_path) as qrels:  # a pipe is read once
            run_table, qrels_table = read_evaluation(run, qrels, select=select)  # one task, never pooled labels
        verdicts += explain.explain_run(run_table, qrels_table, metrics, mine, task=task, seed=args.seed,
                                        precision=args.precision, scoring=args.scoring)
    print_verdicts(verdicts, args.format)
    return 0 if all(v.explained for v in verdicts) else 1


def task_names(args: argparse.Namespace) -> list[str]:
    """The task of each --run: --task in order, else 'run' for one run, else each file's stem."""
    from pathlib import Path

    from evalcore.errors import InputError

    if len(args.qrels) != len(args.run):
        raise InputError(f"{len(args.run)} --run but {len(args.qrels)} --qrels: give one qrels per run, in order")
    if args.task:
        if len(args.task) != len(args.run):
            raise InputError(f"{len(args.run)} --run but {len(args.task)} --task: give one task per run, in order")
        tasks = list(args.task)
    elif len(args.run) == 1:
        tasks = ["run"]
    else:
        tasks = [Path(path).name.split(".")[0] for path in args.run]
    if len(set(tasks)) != len(tasks):
        raise InputError(f"two runs of one task ({', '.join(tasks)}): name them with --task")
    return tasks


def system_numbers(args: argparse.Namespace, metrics: list[str], tasks: list[str]) -> list:
    """--system's task-level numbers for the runs' tasks under every tie policy its rows carry."""
    import pandas as pd

    from evalcore import explain
    from evalcore.commands._options import known_systems, precision_option
    from evalcore.errors import InputError
    from evalcore.store import Condition, Store

    if not args.benchmark or not args.task and tasks == ["run"]:
        raise InputError("--system needs --benchmark and --task (the task the run is of)")
    from evalcore.store.catalogue import checked_data_dir

    store = Store(checked_data_dir(args.data))
    setting = args.setting or "full"
    known_systems([args.system], store.systems(benchmark=args.benchmark)["system"],
                  where=f"benchmark {args.benchmark!r} of {store.data_dir}")
    precision = precision_option(args.system_precision, "--system-precision",
                                 lambda: store.facets()["conditions"]["precision"].dropna().unique())
    instruction = {"yes": True, "no": False, "any": None}[args.instruction]
    numbers = []
    for metric in metrics:
        frames = []
        for policy in explain.NAMED_POLICIES:
            cond = Condition(args.benchmark, metric, setting, instruction, precision, policy)
            rows = store.task_table(cond, [args.system])
            frames.append(rows[rows["task"].isin(tasks)].assign(tie_policy=policy))
        numbers += explain.reported_from_system(pd.concat(frames, ignore_index=True),
                                                f"{args.system} {precision}", metric)
    if not numbers:
        raise InputError(f"--system {args.system!r}: no {', '.join(metrics)} row for task {', '.join(tasks)} in "
                         f"{args.benchmark} {setting} {precision} (instruction {args.instruction})")
    return numbers


def print_verdicts(verdicts: list, fmt: str) -> None:
    if fmt == "json":
        import json

        print(json.dumps([v.record() for v in verdicts], indent=2))
        return
    from evalcore.cells import terminal_cell

    policies = list(dict.fromkeys(p for v in verdicts for p in v.values.policies))
    header = ["task", "metric", "reported", "±", "by", "expected", "min", "max", *policies, "verdict"]
    cells = []
    for v in verdicts:
        values = v.values
        cells.append([terminal_cell(values.task), values.metric, f"{v.reported.value:.4f}",
                      f"{v.reported.tolerance:.1g}" if v.reported.tolerance else "exact",
                      terminal_cell(v.reported.label), f"{values.expected:.4f}", f"{values.min:.4f}",
                      f"{values.max:.4f}",
                      *(f"{values.policies[p]:.4f}" if p in values.policies else "" for p in policies),
                      {"reproduced": "reproduced", "tie-range": "tie range", "outside": "NOT EXPLAINED"}[v.kind]
                      + (" = E" if v.equals_expected else "")])
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for line in cells:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)))
    print()
    for v in verdicts:
        print(terminal_cell(f"{v.values.task} {v.values.metric} ({v.reported.label}): {v.line}"))
    queries = ", ".join(dict.fromkeys(f"{v.values.task} {v.values.n_queries}" for v in verdicts))
    bases = "; ".join(dict.fromkeys(v.reported.basis for v in verdicts))
    print(terminal_cell(f"tolerance (±): half a unit in the last decimal of each number as written or published "
                        f"({bases}); = E: the number equals the expected value over tie orders; [min, max] is the "
                        f"mean of the per-query ranges over each task's queries ({queries}; queries are "
                        "independent)"))
