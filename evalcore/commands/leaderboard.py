"""``evalcore leaderboard``: a benchmark leaderboard from the data directory, ranked by the geometric mean
G over tasks (competition ranks), as an aligned table, CSV, LaTeX (booktabs, best per column bold) or JSON.
Systems missing a task are not ranked; they are listed after the table (table format) or under
``incomplete`` (JSON)."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

SUMMARY_COLUMNS = ["rank", "system", "G", "G_min", "G_max", "G_expected", "mean", "n_tasks", "complete"]
SCORE_COLUMNS = ("G", "G_min", "G_max", "G_expected", "mean")
INSTRUCTION_CHOICES = {"with": True, "without": False, "any": None}
LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
    "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--benchmark", required=True, help="benchmark name, e.g. rar-b or r2med")
    parser.add_argument("--metric", default="ndcg@10", help="metric (default ndcg@10)")
    parser.add_argument("--setting", default="full", choices=("full", "mcr"), help="default full")
    parser.add_argument("--instruction", default="any", choices=tuple(INSTRUCTION_CHOICES),
                        help="with / without instructions, or any: each system's with-instruction rows when it "
                             "has them (default any)")
    parser.add_argument("--precision", default="fp32", help="default fp32 (published results count as fp32)")
    parser.add_argument("--tie-policy", default="docid-desc",
                        help="tie policy of the oblivious value (default docid-desc)")
    parser.add_argument("--data", default=None, help="data directory (default $TIEBREAK_DATA or data)")
    parser.add_argument("--format", default="table", choices=("table", "csv", "latex", "json"))


def latex_escape(text: str) -> str:
    """Escape the characters LaTeX treats specially."""
    return "".join(LATEX_SPECIALS.get(ch, ch) for ch in str(text))


def _latex(frame: "pd.DataFrame", numeric_columns: list[str]) -> str:
    """booktabs tabular; the best (highest) value of each numeric column in bold."""
    import numpy as np

    best = {c: np.nanmax(frame[c].to_numpy(dtype=float)) if frame[c].notna().any() else None for c in numeric_columns}
    align = "".join("r" if c in numeric_columns or c in ("rank", "n_tasks") else "l" for c in frame.columns)
    lines = [f"\\begin{{tabular}}{{{align}}}", "\\toprule",
             " & ".join(latex_escape(c) for c in frame.columns) + " \\\\", "\\midrule"]
    for _, row in frame.iterrows():
        cells = []
        for column in frame.columns:
            value = row[column]
            if column in numeric_columns:
                if value is None or (isinstance(value, float) and np.isnan(value)):
                    cells.append("--")
                    continue
                text = f"{value:.4f}"
                cells.append(f"\\textbf{{{text}}}" if best[column] is not None and value == best[column] else text)
            elif isinstance(value, (bool, np.bool_)):
                cells.append("yes" if value else "no")
            else:
                cells.append(latex_escape(value))
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    import numpy as np

    from evalcore.errors import InputError
    from evalcore.store import Condition, Store

    store = Store(args.data)
    for item in store.skipped:
        print(f"evalcore leaderboard: warning: skipped {item.path}: {item.reason}", file=sys.stderr)
    cond = Condition(benchmark=args.benchmark, metric=args.metric, setting=args.setting,
                     instruction=INSTRUCTION_CHOICES[args.instruction], precision=args.precision,
                     tie_policy=args.tie_policy)
    board = store.leaderboard(cond, bootstrap=0)
    if board.ranked.empty and board.incomplete.empty:
        facets = store.facets()
        known = ", ".join(facets["benchmarks"]) or "none"
        raise InputError(f"no results for {cond} in {store.data_dir} (benchmarks with data: {known})")
    frame = board.ranked[SUMMARY_COLUMNS + board.tasks]
    numeric = list(SCORE_COLUMNS) + board.tasks
    if args.format == "json":
        def records(df):
            return json.loads(df.to_json(orient="records", double_precision=6))
        print(json.dumps({"condition": cond.__dict__, "tasks": board.tasks, "ranked": records(frame),
                          "incomplete": records(board.incomplete),
                          "zero_task_systems": board.zero_task_systems}, indent=2))
    elif args.format == "csv":
        from evalcore.csv_export import to_csv_text

        sys.stdout.write(to_csv_text(frame, float_format="%.6g", lineterminator="\n"))
    elif args.format == "latex":
        print(_latex(frame, numeric))
    else:
        with np.errstate(invalid="ignore"):
            print(frame.to_string(index=False, float_format=lambda v: f"{v:.4f}", na_rep="-"))
        if board.zero_task_systems:
            print(f"\nG = 0 because of a zero task score: {', '.join(board.zero_task_systems)}")
        if len(board.incomplete):
            print(f"\nnot ranked ({len(board.incomplete)} systems missing tasks):")
            for _, row in board.incomplete.iterrows():
                print(f"  {row['system']}: {row['reason']}")
    return 0
