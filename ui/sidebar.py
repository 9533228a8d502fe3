"""The shared sidebar: which condition to show (benchmark, setting, metric, instruction, precision, tie policy)
and which systems, every control bound to the URL (``ui/state.py``). A page calls :func:`view` and gets a
:class:`View`; the frame (``ui/navigation.py``) adds the share box and the skipped-files list below it.

The order of the controls, their options and their defaults are written once, in :func:`choose_condition`:
the sidebar runs it with URL-bound widgets, the warm start (``ui/warm_start.py``) with the defaults, so the
warm start prepares exactly the question a first visitor's Leaderboard asks.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from evalcore.store import Condition
from ui import data, state

SETTING_LABELS = {"full": "Full retrieval", "full-pooled": "Full (pooled candidates)", "mcr": "Multiple choice (MCR)"}
INSTRUCTION_CHOICES = {"any": None, "without": False, "with": True}
INSTRUCTION_LABELS = {"any": "as published", "without": "without", "with": "with"}
YES_NO_ANY = {"any": None, "yes": True, "no": False}
# Model-size stops (parameters); the ends mean "no bound".
SIZE_LADDER: dict[str, float | None] = {
    "0": None, "50M": 50e6, "100M": 100e6, "300M": 300e6, "500M": 500e6, "1B": 1e9, "2B": 2e9,
    "5B": 5e9, "10B": 10e9, "30B": 30e9, "100B": 100e9, "no limit": None,
}


@dataclass
class View:
    """What the sidebar selected: the data (None when the folder does not exist), the catalogue, the
    condition (None when there are no results) and the system subset."""

    data_dir: Path
    data: data.Snapshot | None
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
    """The values of ``column`` among the conditions whose other columns equal ``equal`` (None = any). Plain
    numpy over the columns: every rerun asks this ~5 times, and pandas' per-operation overhead made it ~5 ms
    of each run (bench/RESULTS.md § Capacity)."""
    if conditions.empty or column not in conditions:
        return []
    mask = np.ones(len(conditions), dtype=bool)
    for name, value in equal.items():
        if value is not None and name in conditions:
            mask &= conditions[name].to_numpy(dtype=object, na_value=None) == value
    values = conditions[column].to_numpy(dtype=object, na_value=None)[mask]
    return sorted({value for value in values.tolist() if value is not None and value == value}, key=str)


def preferred(options: Sequence[str], *choices: str) -> str | None:
    """The first of ``choices`` that is an option, else the first option."""
    for choice in choices:
        if choice in options:
            return choice
    return options[0] if options else None


# -------------------------------------------------------------------------------------------- condition
@dataclass(frozen=True)
class Control:
    """One sidebar control of the condition: URL key, label, widget kind, option labels and help."""

    key: str
    label: str
    widget: str = "selectbox"
    labels: Mapping[str, str] | None = None
    help: str | None = None


BENCHMARK = Control("bench", "Benchmark", help="Which benchmark's tasks are aggregated.")
SETTING = Control("setting", "Setting", widget="radio", labels=SETTING_LABELS, help=(
    "Full retrieval over the benchmark's corpus (published results); full over the pool of every candidate "
    "answer of a task (our RAR-b runs: not the official corpus); or RAR-b's multiple-choice setting."))
METRIC = Control("metric", "Metric")
INSTRUCTION = Control("instr", "Instruction", widget="radio", labels=INSTRUCTION_LABELS, help=(
    "Queries with or without a task instruction. 'As published' uses each system's with-instruction results "
    "when it has them, else without."))
PRECISION = Control("prec", "Precision", help=(
    "Numeric precision the scores were computed at (bf16+hps = BF16 with high-precision scoring)."))
TIE_POLICY = Control("ties", "Tie policy (oblivious value)", help=(
    "How a tie-oblivious evaluator orders tied documents: docid-desc is trec_eval / pytrec_eval / MTEB / BEIR."))

Choose = Callable[[Control, list[str], "str | None"], str]
"""How a control gets its value: (control, options, default) → the chosen option."""


def choose_condition(facets: dict, choose: Choose) -> Condition | None:
    """The condition, one control after the other (each one's options depend on the choices before it);
    None when there are no results at all."""
    benchmarks = list(facets.get("benchmarks") or [])
    if not benchmarks:
        return None
    conditions = facets["conditions"]
    bench = choose(BENCHMARK, benchmarks, preferred(benchmarks, "rar-b", "RAR-b"))
    settings = options_for(conditions, "setting", benchmark=bench) or ["full"]
    setting = choose(SETTING, settings, preferred(settings, "full"))
    metrics = options_for(conditions, "metric", benchmark=bench, setting=setting) or ["ndcg@10"]
    metric = choose(METRIC, metrics, preferred(metrics, "ndcg@10", "p@1"))
    present = set(options_for(conditions, "instruction", benchmark=bench, setting=setting, metric=metric))
    instructions = ["any"] + [name for name, flag in (("without", False), ("with", True)) if flag in present]
    instruction = INSTRUCTION_CHOICES[choose(INSTRUCTION, instructions, "any")]
    precisions = options_for(conditions, "precision", benchmark=bench, setting=setting, metric=metric,
                             instruction=instruction) or ["fp32"]
    precision = choose(PRECISION, precisions, preferred(precisions, "fp32"))
    policies = options_for(conditions, "tie_policy", benchmark=bench, setting=setting, metric=metric,
                           precision=precision) or ["docid-desc"]
    policy = choose(TIE_POLICY, policies, preferred(policies, "docid-desc"))
    return Condition(benchmark=bench, metric=metric, setting=setting, instruction=instruction,
                     precision=precision, tie_policy=policy)


def by_default(control: Control, options: list[str], default: str | None) -> str:
    """:data:`Choose` for a first visit without URL parameters: every control at its default."""
    return default if default in options else options[0]


def in_sidebar(control: Control, options: list[str], default: str | None) -> str:
    """:data:`Choose` as a URL-bound sidebar widget."""
    labels = control.labels or {}
    return state.select(control.key, control.label, options, default, where=st.sidebar, widget=control.widget,
                        format_func=lambda option: labels.get(option, option), help=control.help)


# -------------------------------------------------------------------------------------------- the sidebar
def view() -> View:
    """Draw the shared sidebar and return the selected :class:`View`."""
    data_dir = data.data_dir_from()
    if not data_dir.is_dir():
        return View(data_dir=data_dir, data=None, facets={})
    snapshot = data.snapshot(data_dir)
    facets = data.facets(snapshot)
    selected = View(data_dir=data_dir, data=snapshot, facets=facets)
    if not facets.get("benchmarks"):
        st.sidebar.info(f"No results found in `{data_dir.name}/`. See the page for how to add some.")
        return selected
    st.sidebar.markdown("**What to evaluate**")
    selected.cond = choose_condition(facets, in_sidebar)
    selected.tasks = list((facets.get("by_benchmark") or {}).get(selected.cond.benchmark, {}).get("tasks") or [])
    selected.systems, selected.filter_summary = _system_filters(snapshot, facets, selected.cond.benchmark)
    return selected


def _system_filters(snapshot: data.Snapshot, facets: dict, bench: str) -> tuple[tuple[str, ...] | None, str]:
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
    chosen = data.systems(snapshot, search=search or None, families=families or None,
                          min_parameters=SIZE_LADDER[lo], max_parameters=SIZE_LADDER[hi],
                          open_weights=YES_NO_ANY[open_w], uses_instructions=YES_NO_ANY[itune], benchmark=bench)
    names = tuple(chosen["system"].tolist()) if len(chosen) else ()
    parts = [p for p in (
        f"name contains “{search}”" if search else "",
        f"family in {', '.join(families)}" if families else "",
        f"size {lo}–{hi}" if (SIZE_LADDER[lo] or SIZE_LADDER[hi]) else "",
        f"open weights: {open_w}" if open_w != "any" else "",
        f"uses instructions: {itune}" if itune != "any" else "",
    ) if p]
    return names, f"Filtered to {len(names)} system(s): " + "; ".join(parts) + "."


def share_box(params: dict, base_url: str | None) -> None:
    """The copy-link affordance: a "Share this view" button opening the URL that reopens this exact view
    (st.code has a copy button). It sits in a popover because the browser draws popover content only when it
    opens: st.code's syntax highlighter is a 1.5 MB script that otherwise loaded with every first page
    (~0.3 s of the first paint on 2 cores, bench/bench_app.py)."""
    box = st.sidebar.popover("Share this view", icon=":material/link:", width="stretch")
    box.code(state.share_url(params, base_url), language=None, wrap_lines=True)
    box.caption("Copy the link (button at the top right of the box): it reopens this page with every "
                "control as it is now.")
