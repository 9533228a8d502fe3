"""Pieces every page shares: the sidebar (condition + system filters, bound to the URL), page headers,
empty-state explanations, table styling and exports. Presentation only: numbers come from the store."""
from __future__ import annotations

import html
import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from evalcore.csv_export import to_csv_text
from evalcore.store import Condition
from ui import data, state

# Categorical colours (Okabe–Ito-like, readable for colour-blind viewers); Streamlit's default is all blues.
PALETTE = ["#334155", "#e69f00", "#0d9488", "#cc79a7", "#56b4e9", "#d55e00", "#009e73", "#f0e442", "#0072b2"]
SETTING_LABELS = {"full": "Full retrieval", "full-pooled": "Full (pooled candidates)", "mcr": "Multiple choice (MCR)"}
INSTRUCTION_CHOICES = {"any": None, "without": False, "with": True}
INSTRUCTION_LABELS = {"any": "as published", "without": "without", "with": "with"}
YES_NO_ANY = {"any": None, "yes": True, "no": False}
# Model-size slider stops (parameters); the ends mean "no bound".
SIZE_LADDER: dict[str, float | None] = {
    "0": None, "50M": 50e6, "100M": 100e6, "300M": 300e6, "500M": 500e6, "1B": 1e9, "2B": 2e9,
    "5B": 5e9, "10B": 10e9, "30B": 30e9, "100B": 100e9, "no limit": None,
}


@dataclass
class View:
    """What the sidebar selected: the data dir, the catalogue, the condition and the system subset."""

    data_dir: Path
    facets: dict
    cond: Condition | None = None
    systems: tuple[str, ...] | None = None  # None = every system
    filter_summary: str = ""
    tasks: list[str] = field(default_factory=list)

    @property
    def has_data(self) -> bool:
        return self.cond is not None

    def conditions(self) -> pd.DataFrame:
        """The catalogue of conditions (benchmark × setting × … with counts) from the store."""
        table = self.facets.get("conditions")
        return table if isinstance(table, pd.DataFrame) else pd.DataFrame()


def options_for(conditions: pd.DataFrame, column: str, **equal) -> list:
    if conditions.empty or column not in conditions:
        return []
    mask = pd.Series(True, index=conditions.index)
    for name, value in equal.items():
        if value is not None and name in conditions:
            mask &= conditions[name] == value
    return sorted(conditions.loc[mask, column].dropna().unique().tolist(), key=str)


def _preferred(options: Sequence[str], *choices: str) -> str | None:
    for choice in choices:
        if choice in options:
            return choice
    return options[0] if options else None


def sidebar(data_dir: Path) -> View:
    """Draw the shared sidebar and return the selected :class:`View`."""
    facets = data.query(data_dir, "facets")
    view = View(data_dir=data_dir, facets=facets)
    side = st.sidebar
    benchmarks = list(facets.get("benchmarks") or [])
    if not benchmarks:
        side.info(f"No results found in `{data_dir}`. See the page for how to add some.")
        return view
    conditions = view.conditions()
    side.markdown("**What to evaluate**")
    bench = state.select("bench", "Benchmark", benchmarks, _preferred(benchmarks, "rar-b", "RAR-b"), where=side,
                         help="Which benchmark's tasks are aggregated.")
    settings = options_for(conditions, "setting", benchmark=bench) or ["full"]
    setting = state.select("setting", "Setting", settings, _preferred(settings, "full"), where=side,
                           widget="radio", format_func=lambda s: SETTING_LABELS.get(s, s),
                           help="Full retrieval over the benchmark's corpus (published results); full over the pool of every "
                                "candidate answer of a task (our RAR-b runs: not the official corpus); or RAR-b's "
                                "multiple-choice setting.")
    metrics = options_for(conditions, "metric", benchmark=bench, setting=setting) or ["ndcg@10"]
    metric = state.select("metric", "Metric", metrics, _preferred(metrics, "ndcg@10", "p@1"), where=side)
    present = set(options_for(conditions, "instruction", benchmark=bench, setting=setting, metric=metric))
    instr_options = ["any"] + [name for name, flag in (("without", False), ("with", True)) if flag in present]
    instr = state.select("instr", "Instruction", instr_options, "any", where=side, widget="radio",
                         format_func=lambda s: INSTRUCTION_LABELS[s],
                         help="Queries with or without a task instruction. 'As published' uses each "
                              "system's with-instruction results when it has them, else without.")
    instruction = INSTRUCTION_CHOICES[instr]
    precisions = _precision_options(conditions, bench, setting, metric, instruction)
    prec = state.select("prec", "Precision", precisions, _preferred(precisions, "fp32"), where=side,
                        help="Numeric precision the scores were computed at (bf16+hps = BF16 with "
                             "high-precision scoring).")
    policies = _tie_policy_options(conditions, bench, setting, metric, prec)
    policy = state.select("ties", "Tie policy (oblivious value)", policies, _preferred(policies, "docid-desc"),
                          where=side, help="How a tie-oblivious evaluator orders tied documents: "
                                           "docid-desc is trec_eval / pytrec_eval / MTEB / BEIR.")
    view.cond = Condition(benchmark=bench, metric=metric, setting=setting, instruction=instruction,
                          precision=prec, tie_policy=policy)
    view.tasks = list((facets.get("by_benchmark") or {}).get(bench, {}).get("tasks") or [])
    view.systems, view.filter_summary = _system_filters(data_dir, facets, bench)
    return view


def _precision_options(conditions: pd.DataFrame, bench: str, setting: str, metric: str,
                       instruction: bool | None) -> list[str]:
    """What the sidebar's precision control offers."""
    return options_for(conditions, "precision", benchmark=bench, setting=setting, metric=metric,
                       instruction=instruction) or ["fp32"]


def _tie_policy_options(conditions: pd.DataFrame, bench: str, setting: str, metric: str, precision: str) -> list[str]:
    """What the sidebar's tie-policy control offers at ``precision``."""
    return options_for(conditions, "tie_policy", benchmark=bench, setting=setting, metric=metric,
                       precision=precision) or ["docid-desc"]


def neighbour_conditions(view: View) -> list[Condition]:
    """The selected condition at every other precision the sidebar offers, in its order: what the
    precision control leads to (the tie policy keeps its value where offered, else takes its default, as
    the sidebar does). ``ui.prefetch`` computes them while the visitor reads the page."""
    cond, conditions = view.cond, view.conditions()
    if cond is None or conditions.empty:
        return []
    fields = (cond.benchmark, cond.setting, cond.metric)
    found = []
    for precision in _precision_options(conditions, *fields, cond.instruction):
        policies = _tie_policy_options(conditions, *fields, precision)
        policy = cond.tie_policy if cond.tie_policy in policies else _preferred(policies, "docid-desc")
        if precision != cond.precision:
            found.append(replace(cond, precision=precision, tie_policy=policy))
    return found


def _system_filters(data_dir: Path, facets: dict, bench: str) -> tuple[tuple[str, ...] | None, str]:
    # A popover, not an expander: the browser draws a popover's content only when it opens, so the text input,
    # multiselect and radio scripts stay off the first paint (an expander draws its content even collapsed).
    with st.sidebar.popover("Filter systems", icon=":material/filter_list:", width="stretch"):
        search = state.search("q", "Name contains", placeholder="e.g. e5, bge, 7b")
        families = state.multiselect("family", "Family", list(facets.get("families") or []),
                                     placeholder="any family")
        ladder = list(SIZE_LADDER)
        left, right = st.columns(2)
        lo = state.select("size_min", "Size from", ladder[:-1], "0", where=left, always=False,
                          help="Model size in parameters. Bounding the size hides systems of unknown size.")
        hi = state.select("size_max", "to", ladder[1:], "no limit", where=right, always=False)
        if ladder.index(lo) >= ladder.index(hi):
            st.warning(f"Size from {lo} is not below {hi}; ignoring the size bounds.")
            lo, hi = "0", "no limit"
        open_w = state.select("open", "Open weights", list(YES_NO_ANY), "any", widget="radio", always=False)
        itune = state.select("itune", "Uses instructions", list(YES_NO_ANY), "any", widget="radio",
                             always=False)
    active = bool(search or families or SIZE_LADDER[lo] or SIZE_LADDER[hi] or open_w != "any" or itune != "any")
    if not active:
        return None, ""
    chosen = data.query(
        data_dir, "systems", search=search or None, families=tuple(families) or None,
        min_parameters=SIZE_LADDER[lo], max_parameters=SIZE_LADDER[hi],
        open_weights=YES_NO_ANY[open_w], uses_instructions=YES_NO_ANY[itune], benchmark=bench,
    )
    names = tuple(chosen["system"].tolist()) if len(chosen) else ()
    parts = [p for p in (
        f"name contains “{search}”" if search else "",
        f"family in {', '.join(families)}" if families else "",
        f"size {lo}–{hi}" if (SIZE_LADDER[lo] or SIZE_LADDER[hi]) else "",
        f"open weights: {open_w}" if open_w != "any" else "",
        f"uses instructions: {itune}" if itune != "any" else "",
    ) if p]
    return names, f"Filtered to {len(names)} system(s): " + "; ".join(parts) + "."


def share_box(where, params: dict, base_url: str | None) -> None:
    """The copy-link affordance: a "Share this view" button opening the URL that reopens this exact view
    (st.code has a copy button). It sits in a popover because the browser draws popover content only when it
    opens: st.code's syntax highlighter is a 1.5 MB script that otherwise loaded with every first page
    (~0.3 s of the first paint on 2 cores, bench/bench_app.py)."""
    box = where.popover("Share this view", icon=":material/link:", width="stretch")
    box.code(state.share_url(params, base_url), language=None, wrap_lines=True)
    box.caption("Copy the link (button at the top right of the box): it reopens this page with every "
                "control as it is now.")


# -------------------------------------------------------------------------------------------- page text
def intro(title: str, explanation: str) -> None:
    st.title(title)
    st.markdown(explanation)


def describe_condition(view: View, skip: Sequence[str] = ()) -> str:
    """One line naming the selected condition (fields in ``skip`` are left out)."""
    cond = view.cond
    instr = {None: "instructions as published", False: "without instructions", True: "with instructions"}
    parts = {"benchmark": cond.benchmark, "setting": SETTING_LABELS.get(cond.setting, cond.setting),
             "metric": cond.metric, "instruction": instr[cond.instruction], "precision": cond.precision,
             "tie_policy": f"ties: {cond.tie_policy}"}
    return " · ".join(text for name, text in parts.items() if name not in skip)


def ingest_command(benchmark: str = "BENCHMARK", precision: str = "fp32", setting: str = "full",
                   instruction: str = "no", data_dir: Path | None = None) -> str:
    """The ``evalcore ingest`` call that adds one run's per-query results (``instruction``: yes | no)."""
    target = f" --data {data_dir}" if data_dir else ""
    return (f"python -m evalcore ingest --run RUN.trec --qrels QRELS.tsv --system NAME \\\n"
            f"    --benchmark {benchmark} --task TASK --setting {setting} --instruction {instruction} "
            f"--precision {precision}{target}")


def ingest_hint(view: View, **overrides: str) -> str:
    """:func:`ingest_command` for the selected condition and data dir, with some fields overridden."""
    cond = view.cond
    fields = {"benchmark": cond.benchmark, "precision": cond.precision, "setting": cond.setting,
              "instruction": "yes" if cond.instruction else "no", **overrides}
    return ingest_command(**fields, data_dir=view.data_dir)


def explain_no_data(data_dir: Path) -> None:
    st.info(f"There are no results in the data folder `{data_dir}` yet, so there is nothing to rank.")
    st.markdown("Add results and reload this page, for example:")
    st.code(f"python -m evalcore import-mteb ../shared/data/mteb-results/results --out {data_dir}/published"
            "   # published MTEB scores\n"
            + ingest_command("rar-b", data_dir=data_dir) + "   # your own run, per query", language="bash")
    st.caption("Or start the dashboard on another folder: `streamlit run app.py -- --data DIR` "
               "(or set `TIEBREAK_DATA=DIR`).")


def explain_missing(what: str, why: str, command: str | None = None) -> None:
    """An empty state: what is missing, why this view needs it, and the command that adds it."""
    st.info(f"**{what}** {why}")
    if command:
        st.code(command, language="bash")


def filter_note(view: View) -> None:
    if view.filter_summary:
        st.caption(view.filter_summary + " Clear the filters in the sidebar to see every system.")


def no_systems_left(view: View) -> bool:
    """True (and says so) when the sidebar filters exclude every system."""
    if view.systems is not None and len(view.systems) == 0:
        st.warning("No system matches the filters in the sidebar. Loosen them to see results.")
        return True
    return False


def has_results_to_show(view: View) -> bool:
    """False (after explaining why) when the data folder is empty or the sidebar filters exclude every
    system: the guard every view starts with."""
    if not view.has_data:
        explain_no_data(view.data_dir)
        return False
    return not no_systems_left(view)


# -------------------------------------------------------------------------------------------- tables
HEAT_LEVELS = 16
"""Shades per heat-shaded column. Each distinct shade is one CSS rule sent to the browser: continuous shades
made one rule per cell (~2,400 on the default Leaderboard, 150 kB per run and a slower first paint); 17 steps
(0..16) look the same as a continuous scale."""


def heat_levels(block: pd.DataFrame) -> np.ndarray:
    """Each cell's shade step 0..HEAT_LEVELS (rows × columns, float): round(HEAT_LEVELS · (v − min) / (max −
    min)) over its column's finite values; NaN — and a whole column that is constant or empty — gets NaN,
    i.e. no shading."""
    numbers = block.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    numbers = np.where(np.isfinite(numbers), numbers, np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        lo, hi = np.nanmin(numbers, axis=0), np.nanmax(numbers, axis=0)
        span = np.where(hi > lo, hi - lo, np.nan)
        return np.round((numbers - lo) / span * HEAT_LEVELS)


def heat_colour(level: float) -> str:
    """CSS background for a shade step: white (0, the column minimum) to teal (HEAT_LEVELS, its maximum)."""
    if level is None or not math.isfinite(level):
        return ""
    share = min(max(level / HEAT_LEVELS, 0.0), 1.0)
    r, g, b = (int(255 + (c - 255) * share * 0.85) for c in (20, 150, 140))
    return f"background-color: rgb({r},{g},{b})"


# index = level + 1; index 0 (level NaN → -1) is "no shading"
_HEAT_CSS = np.array([""] + [heat_colour(level) for level in range(HEAT_LEVELS + 1)], dtype=object)


def symmetric_span(values: pd.Series) -> float:
    """Half-width of a diverging colour scale centred on 0 that fits every value (1.0 when all are 0/NaN)."""
    largest = pd.to_numeric(values, errors="coerce").abs().max()
    return float(largest) if pd.notna(largest) and largest > 0 else 1.0


def heat_styler(frame: pd.DataFrame, columns: Iterable[str]):
    """A pandas Styler shading each of ``columns`` from its own minimum (white) to maximum (teal).

    Streamlit draws a Styler from its ``_compute()`` / ``_translate()`` output: the CSS of every cell and
    the display text of every cell, which pandas builds cell by cell (~0.05 s for the 100 × 36 Leaderboard
    of the 10M-row bench dir, then Streamlit matches each cell id with a regex) on every rerun. The shading
    is HEAT_LEVELS + 1 CSS rules, so this Styler answers those two calls with the rules, built with numpy,
    and no display text: the dashboard formats numbers with ``column_config``, which Streamlit's grid
    uses instead of a Styler's text, so the text was never shown. The usual ``Styler.apply`` stays
    registered, so a Streamlit that stopped calling ``_translate`` would still get the same shading.
    """
    columns = [c for c in columns if c in frame.columns]

    def shade(block: pd.DataFrame) -> pd.DataFrame:
        levels = np.nan_to_num(heat_levels(block), nan=-1).astype(int)
        return pd.DataFrame(_HEAT_CSS[levels + 1], index=block.index, columns=block.columns)

    styler = frame.style.apply(shade, subset=columns, axis=None) if columns else frame.style
    translated = {"cellstyle": heat_rules(frame, columns), "table_styles": [], "body": []}
    styler._compute = lambda: styler  # type: ignore[method-assign]
    styler._translate = lambda *args, **kwargs: translated  # type: ignore[method-assign]
    return styler


def heat_rules(frame: pd.DataFrame, columns: Sequence[str]) -> list[dict]:
    """The shading of :func:`heat_styler` as pandas' translated ``cellstyle``: one entry per shade in use,
    ``{"props": [(property, value)], "selectors": ["row{i}_col{j}", ...]}`` (positions in ``frame``)."""
    if not columns:
        return []
    positions = frame.columns.get_indexer(columns)
    levels = np.nan_to_num(heat_levels(frame[list(columns)]), nan=-1).astype(int)
    rules = []
    for level in np.unique(levels[levels >= 0]):
        rows, cols = np.nonzero(levels == level)
        prop, value = _HEAT_CSS[level + 1].split(":", 1)
        rules.append({"props": [(prop.strip(), value.strip())],
                      "selectors": [f"row{r}_col{c}" for r, c in zip(rows.tolist(), positions[cols].tolist())]})
    return rules


def latex_table(frame: pd.DataFrame, caption: str, bold_max: Iterable[str] = (), digits: int = 4) -> str:
    """A booktabs LaTeX table of ``frame``; the best value of each ``bold_max`` column is bold."""
    bold_max = [c for c in bold_max if c in frame.columns]
    best = {c: frame[c].max() for c in bold_max}

    def cell(column: str, value) -> str:
        if isinstance(value, float):
            if not math.isfinite(value):
                return "--"
            text = f"{value:.{digits}f}"
            return f"\\textbf{{{text}}}" if column in best and value == best[column] else text
        return _latex_escape(str(value))

    header = " & ".join(_latex_escape(str(c)) for c in frame.columns)
    rows = [" & ".join(cell(c, v) for c, v in zip(frame.columns, row)) + r" \\"
            for row in frame.itertuples(index=False)]
    align = "".join("r" if pd.api.types.is_numeric_dtype(frame[c]) else "l" for c in frame.columns)
    return "\n".join([
        r"\begin{table}[t]", r"\centering", f"\\caption{{{_latex_escape(caption)}}}",
        f"\\begin{{tabular}}{{{align}}}", r"\toprule", header + r" \\", r"\midrule", *rows,
        r"\bottomrule", r"\end{tabular}", r"\end{table}", "",
    ])


def _latex_escape(text: str) -> str:
    for char, escaped in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"),
                          ("#", r"\#"), ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"),
                          ("^", r"\textasciicircum{}")):
        text = text.replace(char, escaped)
    return text


def pareto_front(sizes: Sequence[float], scores: Sequence[float]) -> list[bool]:
    """Which points no other point beats: none is at most as large and scores at least as high (one strictly)."""
    order = sorted(range(len(sizes)), key=lambda i: (sizes[i], -scores[i]))
    on_front = [False] * len(sizes)
    best = -math.inf
    for i in order:
        if scores[i] > best:
            on_front[i] = True
            best = scores[i]
    return on_front


def safe_text(text: str) -> str:
    """Text from data shown inside markdown: HTML-escaped and with markdown control characters neutralised."""
    escaped = html.escape(str(text))
    for char in "*_`[]<>|#":
        escaped = escaped.replace(char, "\\" + char)
    return escaped


# -------------------------------------------------------------------------------------------- charts
def interval_figure(frame: pd.DataFrame, label: str, point: str, intervals: Sequence[tuple[str, str, str, str]],
                    x_title: str, point_name: str = "G"):
    """A forest plot: one row per ``label``, a dot at ``point`` and a segment for each (lo, hi, name, colour).

    Segments are drawn from their two ends, so nothing is computed here beyond laying out coordinates.
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    labels = frame[label].astype(str).tolist()
    for offset, (lo, hi, name, colour) in enumerate(intervals):
        if lo not in frame or hi not in frame or frame[[lo, hi]].isna().all().all():
            continue
        xs, ys = [], []
        for y, a, b in zip(labels, frame[lo], frame[hi]):
            if pd.notna(a) and pd.notna(b):
                xs += [a, b, None]
                ys += [y, y, None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=name,
                                 line=dict(color=colour, width=6 - 2 * offset), opacity=0.55 + 0.2 * offset,
                                 hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=frame[point], y=labels, mode="markers", name=point_name,
                             marker=dict(color="#1f2937", size=8),
                             hovertemplate="%{y}: %{x:.4f}<extra></extra>"))
    fig.update_layout(height=max(260, 24 * len(labels) + 90), margin=dict(l=10, r=10, t=30, b=40),
                      xaxis_title=x_title, yaxis=dict(autorange="reversed", type="category"),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    return fig


def download_row(frame: pd.DataFrame, stem: str, caption: str, bold_max: Iterable[str] = ()) -> None:
    """CSV and LaTeX downloads of exactly the table shown. The files are written when a button is clicked
    (deferred ``data``), not on every run: most runs are never downloaded, and the two files cost ~0.05 s
    per run for a 100-system table."""
    frame = frame.copy()
    bold_max = list(bold_max)
    left, right, _ = st.columns([1.3, 1.3, 3])
    left.download_button("Download CSV", lambda: to_csv_text(frame).encode(), file_name=f"{stem}.csv",
                         mime="text/csv", icon=":material/download:", on_click="ignore")
    right.download_button("Download LaTeX", lambda: latex_table(frame, caption, bold_max).encode(),
                          file_name=f"{stem}.tex", mime="text/x-tex", icon=":material/description:",
                          on_click="ignore")


def current_view() -> View:
    """The view the entry point's sidebar selected for this run."""
    return st.session_state["_view"]
