"""``evalcore leaderboard``: a benchmark leaderboard from the data directory, ranked by the benchmark's own
aggregate over tasks (RAR-b: the geometric mean G; R2MED: the arithmetic mean, its site's "Avg"; another with
``--aggregate``), competition ranks, as an aligned table, CSV, LaTeX (booktabs, best per column bold) or JSON.

Every format carries every system: systems missing a task (or with no usable value for one) are not ranked;
the table lists them after the ranked rows, CSV and LaTeX as rows with an empty rank and ``complete`` false,
JSON under ``incomplete``. Every ranked row carries, through both lenses of :mod:`evalcore.uncertainty` —
``queries_*`` "on these tasks", ``tasks_*`` "on new tasks like these" — its interval (``_lo``/``_hi``), rank
set (``_rank_lo``/``_rank_hi``, of the ``--ranks`` kind), tier and whether it could be #1 (``_first``);
``rank`` is the competition rank of the aggregate's point values. ``--level``, ``--ranks``, ``--lens`` and
``--common-tasks`` are the dashboard's URL keys ``level``, ``ranks``, ``lens``, ``common``. The table says which
aggregate ranks and under which tie policy, how many adjacent pairs differ through each lens (and, when none does,
why), who could be first, and notes the pairs whose order by that tie policy differs from their order by expected
values.

``--candidate RUN`` (:mod:`evalcore.candidate`) evaluates your run of the shipped tasks
(``evalcore tasks export``) tie-aware against the shipped qrels and shows it on the board in memory (the data
directory is not written): its row is marked, with its intervals and rank sets through both lenses.
"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from evalcore.errors import InputError
    from evalcore.store import Leaderboard

INSTRUCTION_CHOICES = {"with": True, "without": False, "any": None}
AGGREGATE_NAMES = {"g": "G", "geometric": "G", "gmean": "G", "mean": "mean", "arithmetic": "mean", "avg": "mean"}
LENS_SUMMARY = [f"{lens}_{column}" for lens in ("queries", "tasks")
                for column in ("lo", "hi", "rank_lo", "rank_hi", "tier", "first")]
SUMMARY = {  # ranking aggregate -> the summary columns shown, in order
    "G": ["rank", "system", "G", *LENS_SUMMARY, "G_min", "G_max", "G_expected", "mean", "n_tasks", "complete"],
    "mean": ["rank", "system", "mean", *LENS_SUMMARY, "mean_min", "mean_max", "mean_expected", "G", "n_tasks",
             "complete"],
}
SCORE_COLUMNS = ("G", "G_min", "G_max", "G_expected", "mean", "mean_min", "mean_max", "mean_expected", "queries_lo",
                 "queries_hi", "tasks_lo", "tasks_hi")
INTEGER_COLUMNS = ("rank", "queries_rank_lo", "queries_rank_hi", "queries_tier", "tasks_rank_lo", "tasks_rank_hi",
                   "tasks_tier")
LATEX_COLUMNS = ("rank", "system", "G", "mean", "queries_lo", "queries_hi", "queries_rank_lo", "queries_rank_hi",
                 "tasks_lo", "tasks_hi", "tasks_rank_lo", "tasks_rank_hi", "n_tasks", "complete")
BENCHMARK_LABELS = {"rar-b": "RAR-b", "r2med": "R2MED", "crumb": "CRUMB"}
SWAPS_LISTED = 5  # pairs named in the note; the rest are counted


def _aggregate_name(text: str) -> str:
    try:
        return AGGREGATE_NAMES[text.strip().lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(f"invalid aggregate {text!r}: expected G or mean") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--benchmark", required=True, help="benchmark name, e.g. rar-b or r2med")
    parser.add_argument("--metric", default=None,
                        help="metric, any case or spelling (default p@1 for --setting mcr, else ndcg@10)")
    parser.add_argument("--setting", default="full",
                        help="full, full-pooled, mcr, ... : any setting the data has (default full)")
    parser.add_argument("--instruction", default="any", choices=tuple(INSTRUCTION_CHOICES),
                        help="with / without instructions, or any: each system's with-instruction rows when it "
                             "has them, else without, else those whose instruction use is unknown (default any)")
    parser.add_argument("--precision", default="fp32", help="default fp32 (published results count as fp32)")
    parser.add_argument("--tie-policy", default=None,
                        help="tie policy of the oblivious value (default docid-desc, or the only policy the "
                             "results were computed with, e.g. input-order for MTEB's published mrr@10)")
    parser.add_argument("--aggregate", default=None, type=_aggregate_name,
                        help="what ranks: G (geometric mean over tasks) or mean (arithmetic mean); default the "
                             "benchmark's own: G for RAR-b, mean for R2MED, G otherwise")
    parser.add_argument("--data", default=None, help="data directory (default $TIEBREAK_DATA or data)")
    parser.add_argument("--level", default=0.95, type=_level,
                        help="confidence level of intervals, rank sets and tests, at least 0.5 and below 1 "
                             "(default 0.95; URL key level)")
    parser.add_argument("--ranks", default="marginal", choices=("marginal", "simultaneous"),
                        help="rank sets that hold for each row on its own (marginal) or for every row at once "
                             "(simultaneous) at the level (default marginal; URL key ranks)")
    parser.add_argument("--lens", default="queries", choices=("queries", "tasks"),
                        help="the lens the table's first columns show: queries = on these tasks, tasks = on new "
                             "tasks like these; every format carries both (default queries; URL key lens)")
    parser.add_argument("--common-tasks", action="store_true",
                        help="rank every system on the tasks all of them have (name some with --system), "
                             "naming the tasks dropped (URL key common)")
    parser.add_argument("--system", action="append", default=None, metavar="NAME",
                        help="only this system (repeatable): the shown systems of a common-task ranking")
    parser.add_argument("--format", default="table", choices=("table", "csv", "latex", "json"))
    from evalcore.commands._candidate import add_candidate_arguments

    add_candidate_arguments(parser, required=False)


def _level(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid level {text!r}: expected a number such as 0.95") from None
    if not 0.5 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"invalid level {value}: expected at least 0.5 and below 1")
    return value


def _latex(frame: "pd.DataFrame", numeric_columns: list[str]) -> str:
    """booktabs tabular; the best (highest) value of each numeric column in bold; empty cells as --."""
    import numpy as np
    import pandas as pd

    from evalcore.cells import latex_cell

    best = {c: np.nanmax(frame[c].to_numpy(dtype=float)) if frame[c].notna().any() else None for c in numeric_columns}
    align = "".join("r" if c in numeric_columns or c in INTEGER_COLUMNS or c == "n_tasks" else "l" for c in frame.columns)
    lines = [f"\\begin{{tabular}}{{{align}}}", "\\toprule",
             " & ".join(latex_cell(c) for c in frame.columns) + " \\\\", "\\midrule"]
    for row in frame.itertuples(index=False, name=None):
        cells = []
        for column, value in zip(frame.columns, row):
            if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
                cells.append("--")
            elif column in numeric_columns:
                text = f"{value:.4f}"
                cells.append(f"\\textbf{{{text}}}" if best[column] is not None and value == best[column] else text)
            elif isinstance(value, (bool, np.bool_)):
                cells.append("yes" if value else "no")
            else:
                cells.append(latex_cell(value))
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines)


def _data_dir(text: str | None):
    """The data directory, or InputError when it is missing, not a folder or unreadable."""
    from evalcore.store.catalogue import checked_data_dir

    return checked_data_dir(text)


def _options(conditions: "pd.DataFrame", column: str, **equal) -> list:
    """Values of ``column`` among the store's conditions matching ``equal`` (None = any)."""
    mask = conditions["benchmark"].notna()
    for name, value in equal.items():
        if value is not None:
            mask &= conditions[name] == value
    return sorted(conditions.loc[mask, column].dropna().unique().tolist(), key=str)


def _resolve_metric(text: str, metrics: list[str]) -> str:
    """The canonical spelling of ``text`` (any case or alias: NDCG@10, ndcg_cut_10), else a metric of the data
    equal to it ignoring case, else ``text`` as given."""
    from evalcore.metrics import canonical_metric

    try:
        canonical = canonical_metric(text)
    except ValueError:
        canonical = text.strip()
    if canonical in metrics:
        return canonical
    same = [m for m in metrics if m.lower() == canonical.lower()]
    return same[0] if same else canonical


def _resolve_tie_policy(conditions: "pd.DataFrame", args, metric: str, instruction) -> tuple[str, str]:
    """(tie policy, why when it was not given): docid-desc, else the only policy these results have."""
    from evalcore.errors import InputError
    from evalcore.store import DEFAULT_TIE_POLICY

    if args.tie_policy is not None:
        return args.tie_policy, ""
    policies = _options(conditions, "tie_policy", benchmark=args.benchmark, setting=args.setting, metric=metric,
                        precision=args.precision, instruction=instruction)
    if not policies or DEFAULT_TIE_POLICY in policies:
        return DEFAULT_TIE_POLICY, ""
    if len(policies) == 1:
        return policies[0], f" (the only tie policy these results were computed with; not {DEFAULT_TIE_POLICY})"
    raise InputError(f"these results were computed under the tie policies {', '.join(policies)}, not "
                     f"{DEFAULT_TIE_POLICY}: choose one with --tie-policy")


def _no_results(store, cond, conditions: "pd.DataFrame") -> "InputError":
    from evalcore.errors import InputError

    benchmarks = sorted(conditions["benchmark"].dropna().unique().tolist())
    if cond.benchmark not in benchmarks:
        return InputError(f"no results for benchmark {cond.benchmark!r} in {store.data_dir} "
                          f"(benchmarks with data: {', '.join(benchmarks) or 'none'})")
    present = []
    for column, value in (("setting", cond.setting), ("metric", cond.metric), ("precision", cond.precision),
                          ("tie_policy", cond.tie_policy)):
        found = _options(conditions, column, benchmark=cond.benchmark)
        if value not in found:
            present.append(f"{column}s with data: {', '.join(map(str, found))}")
    instruction = {True: "with", False: "without", None: "any"}[cond.instruction]
    hint = "; ".join(present) or "try another combination, or --instruction any"
    return InputError(f"no results for {cond.benchmark} with setting {cond.setting}, metric {cond.metric}, "
                      f"precision {cond.precision}, tie policy {cond.tie_policy}, instruction {instruction} "
                      f"in {store.data_dir} ({hint})")


def _no_common_task(store, cond, systems: list[str] | None) -> "InputError":
    """--common-tasks when the shown systems share no task: the real cause, and how to choose systems that do
    (the systems with the most tasks under the condition, as --system options)."""
    import shlex

    from evalcore.errors import InputError

    table = store.task_table(cond, systems)
    table = table[table["value"].notna()]
    if table.empty:
        return _no_results(store, cond, store.facets()["conditions"])
    counts = table.groupby("system")["task"].nunique().sort_values(ascending=False, kind="stable")
    n_tasks = table["task"].nunique()
    widest = counts.index[:3].tolist()
    shown = f"the {len(counts)} shown systems" if systems is None else f"the {len(counts)} systems chosen"
    example = " ".join(f"--system {shlex.quote(name)}" for name in widest)
    return InputError(f"--common-tasks: {shown} share no task of {cond.benchmark} {cond.setting} ({n_tasks} tasks, "
                      f"each missing for at least one system): choose the systems to compare with --system "
                      f"(repeatable), e.g. those with the most tasks: {example} "
                      f"({', '.join(str(int(n)) for n in counts.iloc[:3])} tasks)")


def _notes(board: "Leaderboard", cond, policy_reason: str) -> list[str]:
    """What the table format prints after the table: what ranks, the tie policy, swapped pairs."""
    from evalcore.aggregate import AGGREGATES, official_aggregate

    label = BENCHMARK_LABELS.get(cond.benchmark, cond.benchmark)
    official = official_aggregate(cond.benchmark)
    whose = (f"{label}'s own aggregate" if cond.benchmark in BENCHMARK_LABELS and board.ranked_by == official
             else "the default" if board.ranked_by == official else f"not {label}'s own ({official})")
    other = "mean" if board.ranked_by == "G" else "G"
    lines = [f"ranked by {board.ranked_by} ({AGGREGATES[board.ranked_by]}; {whose}); --aggregate {other} ranks "
             f"by the {AGGREGATES[other]}",
             f"tie policy of the values: {cond.tie_policy}{policy_reason}"]
    lines += separability_lines(board)
    swaps = board.policy_swaps
    if swaps is None:
        lines.append("note: the order by expected values was not compared (too many systems with per-query data)")
    elif len(swaps):
        by = board.ranked_by
        named = "; ".join(
            f"{row.system_1} ahead of {row.system_2} ({by} {row.value_1:.4f} vs {row.value_2:.4f}; "
            f"expected {row.expected_1:.4f} vs {row.expected_2:.4f})"
            for row in swaps.head(SWAPS_LISTED).itertuples(index=False)
        )
        more = f"; and {len(swaps) - SWAPS_LISTED} more" if len(swaps) > SWAPS_LISTED else ""
        lines.append(f"note: the tie policy {cond.tie_policy} decides the order of {len(swaps)} pair(s) that "
                     f"expected values (over all orderings of tied documents) order the other way: {named}{more}")
    return lines


def separability_lines(board: "Leaderboard") -> list[str]:
    """What the table says of the board's uncertainty: through each lens, which adjacent differences are real
    (or why none is), who could be first and the tiers; and what the board stands on (common tasks, unreadable
    files)."""
    lines = []
    if board.common_tasks is not None:
        common = board.common_tasks
        lines.append(f"common-task ranking of {common.n_systems} systems on the {len(common.tasks)} tasks all of "
                     f"them have ({', '.join(common.tasks) or 'none'}); dropped {len(common.dropped)}: "
                     f"{', '.join(common.dropped) or 'none'}")
    if board.lenses and len(board.ranked):
        lines.append(f"uncertainty at {board.level:.0%}, {board.ranks} rank sets (docs/DESIGN.md § Uncertainty): "
                     "queries_* = on these tasks, tasks_* = on new tasks like these")
        for name, lens in board.lenses.items():
            lines.append(lens_line(board, lens))
    if board.declared_tasks is None and len(board.ranked):
        lines.append("tasks: those present in the data (no benchmarks.json in the data folder declares them)")
    if board.tasks_without_results:
        lines.append(f"warning: declared task(s) with no results at all: {', '.join(board.tasks_without_results)}")
    for note in board.notes:
        lines.append(f"note: {note}")
    return lines


def lens_line(board: "Leaderboard", lens) -> str:
    """One lens in one line: N of M adjacent pairs differ (or why none does, or why the lens says nothing), who
    could be #1, how many tiers."""
    if not lens.available:
        return f"{lens.question} ({lens.name}): not available — {lens.reason}"
    ranked = board.ranked
    untested = lens.n_pairs - lens.n_tested
    line = (f"{lens.question} ({lens.name}): {lens.n_differ} of {lens.n_pairs} adjacent pairs differ "
            f"(two-sided, the upper system ahead, Holm-adjusted" + (f"; {untested} pair(s) with a zero-G system not tested" if untested
                                             else "") + ")")
    strongest = lens.strongest
    if strongest is not None:
        line += (f"; none does: the strongest, {strongest['system_1']} over {strongest['system_2']}, has "
                 f"p = {strongest['p_value']:.2g} against Holm's first threshold "
                 f"{1 - board.level:.2g}/{strongest['n_tested']} = {strongest['threshold']:.2g}")
    first = ranked.loc[ranked[f"{lens.name}_first"].astype(bool), "system"].tolist()
    return (line + f"; could be #1 ({len(first)}): {', '.join(first[:8])}{' …' if len(first) > 8 else ''}; "
            f"{int(ranked[f'{lens.name}_tier'].max())} tier(s)")


def _with_interval(board: "Leaderboard", frame: "pd.DataFrame") -> "pd.DataFrame":
    """``frame`` (board rows) with what every export carries (:meth:`Leaderboard.export_frame`), whole-number
    rank columns."""
    frame = board.export_frame(frame)
    complete = frame["complete"].astype(bool)
    for column in INTEGER_COLUMNS:
        frame[column] = frame[column].where(complete).round().astype("Int64")
    return frame


def run(args: argparse.Namespace) -> int:
    import json
    import logging
    import sys

    import numpy as np

    from evalcore.store import Condition, Store
    from evalcore.store.answers import EXPORT_PROVENANCE

    data_dir = _data_dir(args.data)
    logging.getLogger("evalcore.store").addHandler(logging.NullHandler())  # printed below, once, as warnings
    store = Store(data_dir)
    from evalcore.commands._options import known_systems, precision_option

    args.precision = precision_option(args.precision, "--precision",  # FP32 is fp32; an unknown one is refused
                                      lambda: store.facets()["conditions"]["precision"].dropna().unique())
    candidate = None
    if args.candidate is not None:
        from evalcore.commands._candidate import candidate_rows

        rows, candidate = candidate_rows(args, data_dir)
        store = store.with_overlay(rows, name=candidate)
    from evalcore.cells import terminal_cell

    for item in store.skipped:
        print(terminal_cell(f"evalcore leaderboard: warning: skipped {item.path}: {item.reason}"), file=sys.stderr)
    for item in store.warnings:
        print(terminal_cell(f"evalcore leaderboard: warning: {item.path}: {item.message}"), file=sys.stderr)
    conditions = store.facets()["conditions"]
    if args.system and args.benchmark in set(conditions["benchmark"].dropna()):  # an unknown name is refused
        known_systems(args.system, store.systems(benchmark=args.benchmark)["system"],
                      where=f"benchmark {args.benchmark!r} of {data_dir}")
    instruction = INSTRUCTION_CHOICES[args.instruction]
    from evalcore import schema

    metric = _resolve_metric(args.metric or schema.default_metric(args.setting),
                             _options(conditions, "metric", benchmark=args.benchmark))
    tie_policy, policy_reason = _resolve_tie_policy(conditions, args, metric, instruction)
    cond = Condition(benchmark=args.benchmark, metric=metric, setting=args.setting, instruction=instruction,
                     precision=args.precision, tie_policy=tie_policy)
    board = store.leaderboard(cond, systems=args.system, aggregate=args.aggregate, level=args.level,
                              ranks=args.ranks, common_tasks=args.common_tasks)
    if args.common_tasks and board.common_tasks is not None and not board.common_tasks.tasks:
        raise _no_common_task(store, cond, args.system)
    if board.ranked.empty and board.incomplete.empty:
        raise _no_results(store, cond, conditions)
    columns = summary_columns(board.ranked_by, args.lens) + board.tasks
    if candidate is not None:
        return _print_with_candidate(board, cond, policy_reason, candidate, args.format,
                                     absent=_candidate_absent(cond, args))
    numeric = [c for c in columns if c in SCORE_COLUMNS] + board.tasks
    exported = _with_interval(board, board.rows())
    rows = exported[columns]
    if args.format == "json":
        print(json.dumps(json_record(board, cond, digits=6), indent=2))
    elif args.format == "csv":
        from evalcore.csv_export import to_csv_text

        # every row says the level and kind of its rank sets (the URL's keys) and what its data lack
        rows = exported[columns + [c for c in EXPORT_PROVENANCE if c in exported]]
        sys.stdout.write(to_csv_text(rows, float_format="%.6g", lineterminator="\n"))
    elif args.format == "latex":  # a paper's table: rank, score, both lenses' intervals and rank sets
        from evalcore.cells import latex_cell

        narrow = [c for c in columns if c in LATEX_COLUMNS or c in board.tasks]
        print(_latex(rows[narrow], [c for c in numeric if c in narrow]))
        for line in separability_lines(board):
            print("% " + " ".join(latex_cell(line).splitlines()))  # names are data: escaped, one line, never TeX
    else:  # names are data: every cell and line through terminal_cell, so none can drive the terminal
        from evalcore.cells import terminal_cell, terminal_frame

        with np.errstate(invalid="ignore"):
            print(terminal_frame(rows.head(len(board.ranked))).to_string(
                index=False, float_format=lambda v: f"{v:.4f}", na_rep="-"))
        print()
        for line in _notes(board, cond, policy_reason):
            print(terminal_cell(line))
        if board.zero_task_systems:
            print(terminal_cell(f"G = 0 because of a zero task score: {', '.join(board.zero_task_systems)}"))
        if len(board.incomplete):
            print(f"\nnot ranked ({len(board.incomplete)} systems missing tasks):")
            for _, row in board.incomplete.iterrows():
                print(terminal_cell(f"  {row['system']}: {row['reason']}"))
    return 0


def json_record(board: "Leaderboard", cond, digits: int = 6) -> dict:
    """The board as ``--format json`` prints it (and the dashboard's JSON API serves it, ``ui/api.py``): the
    condition, what ranks, the tasks, the ranked rows (the summary columns, then the tasks; NaN as null, floats
    rounded to ``digits`` decimals), the systems not ranked, the uncertainty (level, kind of rank sets, and per
    lens the adjacent pairs' tests and who could be #1), the common tasks and what the board says of its data."""
    import json

    def records(df):
        return json.loads(df.to_json(orient="records", double_precision=digits))

    rows = _with_interval(board, board.rows())[SUMMARY[board.ranked_by] + board.tasks]
    swaps = board.policy_swaps
    return {"condition": dict(cond.__dict__), "ranked_by": board.ranked_by, "tasks": board.tasks,
            "task_names": board.task_names, "ranked": records(rows.head(len(board.ranked))),
            "incomplete": records(board.incomplete),
            "uncertainty": _uncertainty_record(board, records, digits),
            "common_tasks": None if board.common_tasks is None else dict(board.common_tasks.__dict__),
            "tasks_without_results": board.tasks_without_results, "notes": board.notes,
            "zero_task_systems": board.zero_task_systems,
            "policy_swaps": None if swaps is None else records(swaps)}


def summary_columns(ranked_by: str, lens: str = "queries") -> list[str]:
    """The summary columns of a board ranked by ``ranked_by``, the ``lens`` shown first of the two."""
    columns = list(SUMMARY[ranked_by])
    if lens == "tasks":
        queries = [c for c in columns if c.startswith("queries_")]
        tasks = [c for c in columns if c.startswith("tasks_")]
        at = columns.index(queries[0])
        rest = [c for c in columns if c not in queries and c not in tasks]
        columns = rest[:at] + tasks + queries + rest[at:]
    return columns


def _uncertainty_record(board: "Leaderboard", records, digits: int = 6) -> dict | None:
    """The JSON's uncertainty: the level and kind of the rank sets, and per lens what it answers, whether it can
    speak of this board (and why not), how many adjacent pairs differ (each pair's test; the strongest pair when
    none does), who could be #1 and how many tiers."""
    if not board.lenses:
        return None
    ranked = board.ranked
    lenses = {}
    for name, lens in board.lenses.items():
        record = {"question": lens.question, "available": lens.available, "reason": lens.reason or None}
        if lens.available:
            record.update({
                "n_adjacent_differ": lens.n_differ, "n_adjacent": lens.n_pairs, "n_tested": lens.n_tested,
                "test": "two-sided, differs only with the upper system ahead, Holm-adjusted", "adjacent": records(lens.adjacent),
                "strongest_when_none_differ": None if lens.strongest is None else {
                    key: round(value, digits) if isinstance(value, float) else value
                    for key, value in lens.strongest.items()},
                "could_be_first": ranked.loc[ranked[f"{name}_first"].astype(bool), "system"].tolist(),
                "n_tiers": int(ranked[f"{name}_tier"].max()) if len(ranked) else 0})
        lenses[name] = record
    return {"level": board.level, "ranks": board.ranks, "lenses": lenses}


CANDIDATE_MARK = "<<"


def _candidate_columns(board: "Leaderboard") -> list[str]:
    """The columns of a board with a candidate: its aggregate's point, expected value and tie range, both lenses'
    intervals, rank sets and tiers, then the tasks."""
    by = board.ranked_by
    return (["rank", "system", by, f"{by}_expected", f"{by}_min", f"{by}_max", *LENS_SUMMARY, "n_tasks"]
            + board.tasks)


def _candidate_absent(cond, args) -> str:
    """Why the candidate may be missing from this board: the board's metric or instruction is not the run's."""
    from evalcore.candidate import SETTING_METRICS, SETTING_TIE_POLICIES

    metrics = SETTING_METRICS.get(cond.setting, ())
    policies = SETTING_TIE_POLICIES.get(cond.setting, ())
    said = {"yes": True, "no": False}[args.candidate_instruction]
    if cond.metric not in metrics or cond.tie_policy not in policies:
        return (f"not on this board: a {cond.setting} candidate has {', '.join(metrics)} under "
                f"{', '.join(policies)} (use --metric / --tie-policy)")
    if cond.instruction is not None and cond.instruction != said:
        return (f"not on this board: the run is --candidate-instruction {args.candidate_instruction}, the board shows "
                f"--instruction {'with' if cond.instruction else 'without'}")
    return "not ranked (no usable value)"


def _print_with_candidate(board: "Leaderboard", cond, policy_reason: str, name: str, fmt: str,
                          absent: str = "not ranked") -> int:
    """The board with the candidate's row marked (column ``candidate``; in the table ``<<``) and one line about
    where it lands; the candidate not ranked (a task without a usable value) is said too."""
    import json
    import sys

    import numpy as np

    columns = _candidate_columns(board)
    frame = board.rows()[columns]
    for column in INTEGER_COLUMNS:  # whole ranks (NaN where not known)
        frame[column] = frame[column].round().astype("Int64")
    is_candidate = (frame["system"] == name).to_numpy()
    if fmt == "json":
        records = json.loads(frame.assign(candidate=is_candidate).to_json(orient="records", double_precision=15))
        print(json.dumps({"condition": cond.__dict__, "ranked_by": board.ranked_by, "candidate": name,
                          "level": board.level, "ranks": board.ranks, "tasks": board.tasks,
                          "task_names": board.task_names, "rows": records}, indent=2))
        return 0
    if fmt == "csv":
        from evalcore.csv_export import to_csv_text

        sys.stdout.write(to_csv_text(frame.assign(candidate=is_candidate), float_format="%.6g", lineterminator="\n"))
        return 0
    if fmt == "latex":
        print(_latex(frame.assign(candidate=is_candidate), [c for c in columns if c in SCORE_COLUMNS
                                                            or c.endswith(("_lo", "_hi")) and not c.startswith("rank")]
                     + board.tasks))
        return 0
    from evalcore.cells import terminal_cell, terminal_frame

    shown = frame.assign(**{" ": np.where(is_candidate, CANDIDATE_MARK, "")})
    with np.errstate(invalid="ignore"):
        print(terminal_frame(shown).to_string(index=False, float_format=lambda v: f"{v:.4f}", na_rep="-"))
    print()
    by = board.ranked_by
    ranked = board.ranked[board.ranked["system"] == name]
    if len(ranked):
        row = ranked.iloc[0]
        percent = f"{board.level:.0%}"
        print(f"{CANDIDATE_MARK} {name}: rank {int(row['rank'])} of {len(board.ranked)}; {by} {row[by]:.4f}, "
              f"expected {row[f'{by}_expected']:.4f}, tie range [{row[f'{by}_min']:.4f}, {row[f'{by}_max']:.4f}]; "
              f"on these tasks: {percent} [{row['queries_lo']:.4f}, {row['queries_hi']:.4f}], ranks "
              f"{_rank(row['queries_rank_lo'])}-{_rank(row['queries_rank_hi'])} ({board.ranks}), tier "
              f"{_rank(row['queries_tier'])}; on new tasks like these: ranks {_rank(row['tasks_rank_lo'])}-"
              f"{_rank(row['tasks_rank_hi'])}, tier {_rank(row['tasks_tier'])}")
    else:
        reason = board.incomplete.loc[board.incomplete["system"] == name, "reason"]
        print(terminal_cell(f"{CANDIDATE_MARK} {name}: " + (f"not ranked ({reason.iloc[0]})" if len(reason) else absent)))
    for line in _notes(board, cond, policy_reason):
        print(terminal_cell(line))
    print("the candidate is evaluated in memory: nothing was written")
    return 0


def _rank(value) -> str:
    import math

    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else str(int(value))
