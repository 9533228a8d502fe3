"""The shared sidebar: which condition to show (benchmark, setting, metric, instruction, precision, tie policy)
and which systems, every control bound to the URL (``ui/state.py``). A page calls :func:`view` and gets a
:class:`View`; the frame (``ui/navigation.py``) adds the share box and the skipped-files list below it.

The order of the controls, their options and their defaults are written once, in :func:`choose_view_condition`:
the sidebar runs it with URL-bound widgets, the warm start (``ui/warm_start.py``) with the defaults, so the
warm start prepares exactly the question a first visitor's Leaderboard asks.

Controls offer what exists: each one's options are the values with results under the choices before it (the
help names what is not offered and why: "R2MED has no Multiple choice (MCR) setting"), and a control with one
option is shown as text. A view may say what it needs from the condition (a :class:`Need`: per-query rows,
two precisions, both instruction states, both settings): its controls then offer only conditions that have
it, and a visitor's choice it cannot show moves to the nearest one that has it — said in one line
(:func:`ui.hints.moved_line`) and undone on a view that can show it (``ui/state.py`` keeps the visitor's wish).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from evalcore import schema
from evalcore.store import Condition
from ui import data, glossary, memo, notices, state, words

SETTING_LABELS = {"full": "Full retrieval", "full-pooled": "Full (pooled candidates)", "mcr": "Multiple choice (MCR)",
                  "passage": "Passages", "full-document": "Full documents"}
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
    moved: dict = field(default_factory=dict)  # fields a view's need moved: name -> (wanted, shown)
    need_unmet: bool = False  # no condition in the data folder has what the view needs

    @property
    def has_data(self) -> bool:
        return self.cond is not None

    def tasks_with_results(self, *, any_precision: bool = False, query_data: bool = False) -> list[str]:
        """The tasks with results under the condition (``any_precision``: at any precision; ``query_data``: only
        per-query results), within the system filter."""
        from dataclasses import replace

        cond = replace(self.cond, precision=None) if any_precision else self.cond
        table = data.task_table(self.data, cond, systems=self.systems)
        if query_data:
            table = table[table["has_query_data"]]
        return sorted(table["task"].unique().tolist())

    def conditions(self) -> pd.DataFrame:
        """The catalogue of conditions (benchmark × setting × … with counts) from the store."""
        table = self.facets.get("conditions")
        return table if isinstance(table, pd.DataFrame) else pd.DataFrame()


def options_for(conditions: pd.DataFrame, column: str, **equal) -> list:
    """The values of ``column`` among the conditions whose other columns equal ``equal`` (None = any). Plain
    numpy over the columns: every rerun asks this ~5 times, and pandas' per-operation overhead made it ~5 ms
    of each run (bench/HISTORY.md § Capacity)."""
    if conditions.empty or column not in conditions:
        return []
    mask = np.ones(len(conditions), dtype=bool)
    for name, value in equal.items():
        if value is not None and name in conditions:
            mask &= conditions[name].to_numpy(dtype=object, na_value=None) == value
    values = conditions[column].to_numpy(dtype=object, na_value=None)[mask]
    found = {value for value in values.tolist() if value is not None and value == value}
    return sorted(found, key=precision_key if column == "precision" else str)


PRECISION_ORDER = ("fp32", "fp16", "fp16+hps", "bf16", "bf16+hps", "int8", "q4", "binary")
"""How precisions are listed everywhere (options, panels): by the width of what is stored or computed, widest
first (x+hps after x: the same model, scored in fp32)."""


def precision_key(name: str) -> tuple[int, str]:
    """Sort key of a precision: its place in :data:`PRECISION_ORDER`; unknown names after, by name."""
    return (PRECISION_ORDER.index(name) if name in PRECISION_ORDER else len(PRECISION_ORDER), str(name))


# -------------------------------------------------------------------------------------------- condition
@dataclass(frozen=True)
class Control:
    """One sidebar control of the condition: URL key, the condition field it sets, label, widget kind, option
    labels, what an option is called in a sentence ("setting"), and help."""

    key: str
    field: str
    label: str
    widget: str = "selectbox"
    labels: Mapping[str, str] | None = None
    noun: str = ""
    help: str | None = None
    terms: tuple[str, ...] = ()  # glossary entries (ui/glossary.py) the help shows and links to

    def label_of(self, value: str) -> str:
        return (self.labels or {}).get(value, value)

    def help_text(self, extra: str = "") -> str | None:
        """The control's help, ``extra`` (e.g. what it does not offer here) and its glossary entries."""
        before = " ".join(part for part in (self.help, extra) if part)
        return glossary.tip(*self.terms, before=before) if self.terms else (before or None)


BENCHMARK_LABELS = {"rar-b": "RAR-b", "r2med": "R2MED", "crumb": "CRUMB"}
BENCHMARK = Control("bench", "benchmark", "Benchmark", labels=BENCHMARK_LABELS, noun="benchmark",
                    help="Which benchmark's tasks are aggregated.")
SETTING = Control("setting", "setting", "Setting", widget="radio", labels=SETTING_LABELS, noun="setting",
                  help="What each query ranks.", terms=("full", "full-pooled", "mcr", "passage", "full-document"))
METRIC = Control("metric", "metric", "Metric", noun="metric")
INSTRUCTION = Control("instr", "instruction", "Instruction", widget="radio", labels=INSTRUCTION_LABELS,
                      noun="instruction state", help="Queries with or without a task instruction.",
                      terms=("instruction",))
PRECISION = Control("prec", "precision", "Precision", noun="precision", help=(
    "Numeric precision of the scores; in brackets its kind (inference, stored, native)."),
    terms=("precision", "precision-kind", "hps"))
TIE_POLICY = Control("ties", "tie_policy", "Tie policy (oblivious value)", noun="tie policy",
                     help="How the oblivious value orders tied documents.", terms=("tie-policy", "oblivious"))
CONTROLS = (BENCHMARK, SETTING, METRIC, INSTRUCTION, PRECISION, TIE_POLICY)
FIELDS = tuple(c.field for c in CONTROLS)

# What a wanted value falls back to, nearest first, when a view cannot show it (then the first option).
NEAREST = {
    "benchmark": ("rar-b", "RAR-b"),
    "setting": {"full": ("full-pooled", "mcr", "passage"), "full-pooled": ("full", "mcr"), "mcr": ("full-pooled", "full"),
                "passage": ("full-document",), "full-document": ("passage",)},
    "metric": ("ndcg@10", "p@1", "mrr@10"),
    "instruction": ("any", "without", "with"),
    "precision": ("fp32", "q4", "bf16+hps", "fp16", "bf16", "int8", "binary"),
    "tie_policy": ("docid-desc",),
}


def base_default(field: str, chosen: Mapping[str, str]) -> str:
    """A first visit's value of ``field`` (before any view's needs): RAR-b, full retrieval, nDCG@10 (p@1 =
    accuracy for MCR), instructions as published, fp32, docid-desc."""
    if field == "metric":
        return schema.default_metric(chosen.get("setting"))
    return {"benchmark": "rar-b", "setting": "full", "instruction": "any", "precision": "fp32",
            "tie_policy": "docid-desc"}[field]


def nearest(field: str, wanted: str | None, options: Sequence[str]) -> str | None:
    """The option closest to ``wanted``: itself, else the field's fallbacks (:data:`NEAREST`), else the first."""
    if not options:
        return None
    order = NEAREST[field]
    order = order.get(wanted, ()) if isinstance(order, dict) else order
    for choice in (wanted, *order):
        if choice in options:
            return choice
    return options[0]


@dataclass(frozen=True)
class Need:
    """What a view needs from the condition. ``rows(coverage)`` = the conditions that have it (columns
    :data:`FIELDS`, ``instruction`` True / False / NA); ``ignores`` = fields the view does not use (their
    controls are shown as text); ``soft``: only a first visit's default moves to a condition that has it — a
    value the visitor chose stays, and the view explains what it lacks."""

    what: str
    rows: Callable[[pd.DataFrame], pd.DataFrame]
    ignores: tuple[str, ...] = ()
    soft: bool = False
    ignored_text: Mapping[str, str] = field(default_factory=dict)


def _keys(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[list(FIELDS)].drop_duplicates().reset_index(drop=True)


def rows_with_query_data(coverage: pd.DataFrame) -> pd.DataFrame:
    """Conditions where some system has per-query rows."""
    return _keys(coverage[coverage["n_query_tasks"] > 0])


def rows_with_two_systems_with_query_data(coverage: pd.DataFrame) -> pd.DataFrame:
    """Conditions where at least two systems have per-query rows."""
    with_data = coverage[coverage["n_query_tasks"] > 0]
    counts = with_data.groupby(list(FIELDS), dropna=False)["system"].nunique()
    return _keys(counts[counts >= 2].reset_index())


def rows_with_two_precisions(coverage: pd.DataFrame) -> pd.DataFrame:
    """Conditions (every field but precision) where two precisions have at least two systems in common, each
    with its tasks complete: what a rank flip compares. Every precision of such a pair is a row."""
    group = [f for f in FIELDS if f != "precision"]
    full = coverage[coverage["n_tasks"] == coverage.groupby(group + ["precision"], dropna=False)["n_tasks"]
                    .transform("max")]
    found = []
    for key, rows in full.groupby(group, dropna=False):
        systems = {p: set(s) for p, s in rows.groupby("precision")["system"]}
        paired = {p for p in systems for q in systems if p != q and len(systems[p] & systems[q]) >= 2}
        found += [dict(zip(group, key), precision=p) for p in paired]
    return _keys(pd.DataFrame(found, columns=list(FIELDS)))


def rows_with_both_instructions(coverage: pd.DataFrame) -> pd.DataFrame:
    """Conditions (any instruction state) where one system has results with and without instruction."""
    group = [f for f in FIELDS if f != "instruction"] + ["system"]
    known = coverage[coverage["instruction"].notna()]
    states = known.groupby(group)["instruction"].nunique()
    both = states[states == 2].reset_index()[group]
    return _keys(known.merge(both, on=group))


def rows_with_both_settings(coverage: pd.DataFrame) -> pd.DataFrame:
    """Full-side conditions (full or full-pooled) where one system also has MCR results (same benchmark,
    instruction state, precision and tie policy): what MCR vs full pairs."""
    twin = [f for f in FIELDS if f not in ("setting", "metric")] + ["system"]
    mcr = coverage.loc[coverage["setting"] == "mcr", twin].drop_duplicates()
    full = coverage[coverage["setting"] != "mcr"]
    return _keys(full.merge(mcr, on=twin))


@dataclass(frozen=True)
class Offer:
    """What one control offers: ``options``, the first visit's ``default`` among them, ``elsewhere`` (values
    that exist in the data but are not offered here, each with the reason) and ``nearest`` (the option shown
    for a wanted value that is not offered)."""

    options: list[str]
    default: str
    elsewhere: dict[str, str]
    nearest: Callable[[str], str]


class Chooser:
    """How the controls get their values. This base class is a first visit without URL parameters (every
    control at its default, nothing drawn: the warm start asks it); :data:`in_sidebar` draws URL-bound
    widgets."""

    def choose(self, control: Control, offer: Offer, label: Callable[[str], str]) -> str:
        return offer.default

    def wish(self, control: Control) -> str | None:
        """The value the visitor asked for (URL or an earlier choice), None on a first visit."""
        return None

    def fixed(self, control: Control, text: str, values: Sequence[str]) -> None:
        """A control the view does not use, shown as ``text`` (``values``: what its URL value may be)."""


by_default = Chooser()


class InSidebar(Chooser):
    """URL-bound sidebar widgets (``ui/state.py``); a control with one option is shown as text, and the help
    of a control lists what it does not offer here and why."""

    def choose(self, control: Control, offer: Offer, label: Callable[[str], str]) -> str:
        notes = [f"{label(v)}: {why}" for v, why in offer.elsewhere.items()]
        unavailable = ("Not offered here — " + "; ".join(notes[:6]) + (" …" if len(notes) > 6 else "") + "."
                       if notes else "")
        help_text = control.help_text(unavailable)
        value = state.select(control.key, control.label, offer.options, offer.default, where=st.sidebar,
                             widget=control.widget, format_func=label, help=help_text,
                             elsewhere=list(offer.elsewhere), nearest=offer.nearest, single_as_text=True)
        wanted, shown = state.moved().get(control.key, (None, None))
        if wanted in offer.elsewhere and shown == value:  # say it: a metric no longer switched silently
            st.sidebar.caption(notices.not_offered_line(label(wanted), offer.elsewhere[wanted], label(value)))
        return value

    def wish(self, control: Control) -> str | None:
        return state.wish(control.key)

    def fixed(self, control: Control, text: str, values: Sequence[str]) -> None:
        state.keep_url_wish(control.key, values)
        st.sidebar.markdown(f"**{control.label}:** {text}", help=control.help_text())


in_sidebar = InSidebar()


@dataclass
class Chosen:
    """A condition chosen by :func:`choose_view_condition` and the fields a view's need moved: name ->
    (wanted, shown)."""

    cond: Condition | None
    moved: dict[str, tuple[str, str]] = field(default_factory=dict)
    unmet: bool = False  # no condition in the data folder has what the view needs


class _Rows:
    """A conditions table as plain columns — object arrays of the :data:`FIELDS`, None where a value is
    missing — for the many small lookups of one rerun (each control's options depend on the choices before
    it: ~25 lookups per rerun). numpy masks and Python sets instead of pandas indexing: ~10 ms of a rerun
    with pandas, well under 1 ms so."""

    __slots__ = ("columns", "size")

    def __init__(self, columns: Mapping[str, np.ndarray], size: int) -> None:
        self.columns, self.size = columns, size

    @classmethod
    def of(cls, frame: pd.DataFrame) -> "_Rows":
        return cls({name: frame[name].to_numpy(dtype=object, na_value=None) for name in FIELDS if name in frame},
                   len(frame))

    def matching(self, chosen: Mapping[str, str], skip: Sequence[str] = ()) -> "_Rows":
        """The rows under the choices so far (``instruction`` 'any' matches every state, a missing state no
        flag)."""
        mask = np.ones(self.size, dtype=bool)
        for name, value in chosen.items():
            if name in skip or (name == "instruction" and value == "any"):
                continue
            wanted = INSTRUCTION_CHOICES[value] if name == "instruction" else value
            mask &= self.columns[name] == wanted
        return _Rows({name: column[mask] for name, column in self.columns.items()}, int(mask.sum()))

    def values(self, name: str) -> list[str]:
        """The values of one field ('any' first for the instruction, then 'without', 'with' where present)."""
        present = {value for value in self.columns[name].tolist() if value is not None}
        if name == "instruction":
            flags = {bool(value) for value in present}
            return (["any"] if self.size else []) + [label for label, flag in (("without", False), ("with", True))
                                                     if flag in flags]
        return sorted(present, key=precision_key if name == "precision" else str)  # not bf16, binary, fp16, ...


def _why_not(control: Control, value: str, chosen: Mapping[str, str], exists: bool, need: Need | None,
             view_title: str) -> str:
    """Why a value is not offered: 'R2MED has no Multiple choice (MCR) setting', 'no results under RAR-b ·
    Full retrieval', or 'Rank flips needs runs at two precisions'."""
    if exists:
        return f"{view_title} needs {need.what}"
    bench = BENCHMARK_LABELS.get(chosen.get("benchmark"), chosen.get("benchmark"))
    if control is SETTING:
        return f"{bench} has no {control.label_of(value)} {control.noun}"
    where = " · ".join(filter(None, [bench, SETTING_LABELS.get(chosen.get("setting"), chosen.get("setting")),
                                     chosen.get("metric") if control.field not in ("metric",) else None]))
    return f"no results under {where}" if where else "no results"


def choose_view_condition(facets: dict, chooser: Chooser = by_default, need: Need | None = None,
                          coverage: pd.DataFrame | None = None, view_title: str = "This view",
                          labels: Mapping[str, Callable[[str], str]] | None = None,
                          good: pd.DataFrame | None = None) -> Chosen:
    """The condition, one control after the other (each one's options depend on the choices before it).

    Without a ``need`` every control offers what exists under the choices before it. With one, a control
    offers only values under which some condition has what the view needs (``need.rows(coverage)``), and a
    wanted value it cannot offer moves to the nearest one it can (a soft need only moves a first visit's
    defaults). Fields the view ignores are shown as text. ``cond`` is None when there are no results.
    ``good``: ``need.rows(coverage)`` when the caller already has it (:func:`need_rows`), else computed here."""
    conditions = facets.get("conditions")
    if not facets.get("benchmarks") or conditions is None or conditions.empty:
        return Chosen(None)
    if good is None and need is not None and coverage is not None:
        good = need.rows(coverage)
    unmet = good is not None and good.empty
    good = None if (good is None or unmet) else _Rows.of(good)
    conditions = _Rows.of(conditions)
    labels = dict(labels or {})
    chosen: dict[str, str] = {}
    moved: dict[str, tuple[str, str]] = {}
    for control in CONTROLS:
        name = control.field
        exist = conditions.matching(chosen).values(name) or [base_default(name, chosen)]
        base = base_default(name, chosen)
        if need is not None and name in need.ignores:
            chooser.fixed(control, need.ignored_text.get(name, "not used by this view"), conditions.values(name))
            wanted = chooser.wish(control)
            usable = good.matching(chosen, skip=need.ignores).values(name) if good is not None else []
            chosen[name] = wanted if wanted in exist else nearest(name, base, usable or exist)
            continue
        fits = exist
        if good is not None:
            usable = set(good.matching(chosen, skip=need.ignores).values(name))
            fits = [v for v in exist if v in usable] or exist
        offered = exist if (need is None or need.soft) else fits
        elsewhere = {v: _why_not(control, v, chosen, v in exist, need, view_title)
                     for v in conditions.values(name) if v not in offered}
        offer = Offer(offered, nearest(name, base, fits), elsewhere,
                      lambda w, _name=name, _offered=offered: nearest(_name, w, _offered))
        value = chooser.choose(control, offer, labels.get(name, control.label_of))
        wanted = chooser.wish(control)  # after the control: it takes the URL's value as the wish on a first run
        reference = wanted if wanted is not None else base
        if need is not None and value != reference and reference in exist and (
                reference not in offered or (need.soft and wanted is None)):
            moved[name] = (reference, value)
        chosen[name] = value
    cond = Condition(benchmark=chosen["benchmark"], metric=chosen["metric"], setting=chosen["setting"],
                     instruction=INSTRUCTION_CHOICES[chosen["instruction"]], precision=chosen["precision"],
                     tie_policy=chosen["tie_policy"])
    return Chosen(cond, moved, unmet)


def url_values(cond: Condition) -> dict[str, str]:
    """The sidebar's URL keys with the values that show ``cond``: the wishes a button sets before it opens
    another view on the same condition."""
    instruction = next(k for k, v in INSTRUCTION_CHOICES.items() if v is cond.instruction)
    return {"bench": cond.benchmark, "setting": cond.setting, "metric": cond.metric, "instr": instruction,
            "prec": cond.precision, "ties": cond.tie_policy}


def choose_condition(facets: dict, chooser: Chooser = by_default) -> Condition | None:
    """:func:`choose_view_condition` without a view's needs (the Leaderboard; the warm start asks it with
    :data:`by_default`): the condition, or None when there are no results."""
    return choose_view_condition(facets, chooser).cond


# -------------------------------------------------------------------------------------------- labels
KIND_WORDS = {"inference": "inference", "native": "native"}


def kind_text(precision: str, kinds: Sequence[str]) -> str:
    """How a precision's kinds read in a label: 'inference', 'scores stored' (bf16 / fp16 storage),
    'embeddings stored' (int8 / binary), 'native'; several joined by ' / '."""
    words = []
    for kind in ("inference", "storage", "native"):
        if kind in kinds:
            if kind == "storage":
                words.append("embeddings stored" if precision in ("int8", "binary") else "scores stored")
            else:
                words.append(KIND_WORDS[kind])
    return " / ".join(words)


def precision_label(snapshot: data.Snapshot, conditions: pd.DataFrame, chosen: Mapping[str, str],
                    precision: str) -> str:
    """A precision as the control shows it: 'bf16 (inference / scores stored)' from the files' precision kinds
    under the chosen benchmark and setting, 'fp32 (published: precision not recorded)' for published scores only (MTEB and the R2MED paper do not record the inference precision); the URL keeps the
    plain precision. ``conditions`` is the snapshot's conditions table; the label is remembered per snapshot
    (asked for every option on every rerun: ~50 ms of pandas per run otherwise, bench/HISTORY.md § Capacity),
    except for a session's own uploaded run."""
    if not snapshot.overlay:
        return _label_remembered(snapshot, chosen.get("benchmark"), chosen.get("setting"), precision)
    return _precision_label(snapshot, conditions, chosen, precision)


@memo.derived("a precision's label", "ui/sidebar.py",
              "the data snapshot (folder and fingerprint), benchmark, setting and precision; at most 1024",
              maxsize=1024)
def _label_remembered(snapshot: data.Snapshot, benchmark: str | None, setting: str | None, precision: str) -> str:
    return _precision_label(snapshot, data.facets(snapshot)["conditions"],
                            {"benchmark": benchmark, "setting": setting}, precision)


def need_rows(snapshot: data.Snapshot, rows: Callable[[pd.DataFrame], pd.DataFrame]) -> pd.DataFrame:
    """``rows(coverage)`` for the snapshot's coverage (e.g. :func:`rows_with_two_precisions`), remembered per
    snapshot (computed each time for a session's own uploaded run)."""
    if snapshot.overlay:
        return rows(data.coverage(snapshot))
    return _rows_of_snapshot(snapshot, rows)


@memo.derived("a view's needed rows", "ui/sidebar.py",
              "the data snapshot (folder and fingerprint) and the view's rows function (e.g. "
              "rows_with_two_precisions); at most 64", maxsize=64)
def _rows_of_snapshot(snapshot: data.Snapshot, rows: Callable[[pd.DataFrame], pd.DataFrame]) -> pd.DataFrame:
    return rows(data.coverage(snapshot))



def _conditions_at(conditions: pd.DataFrame, benchmark: str | None, setting: str | None,
                   precision: str | None) -> pd.DataFrame:
    return conditions[(conditions["benchmark"] == benchmark) & (conditions["setting"] == setting)
                      & (conditions["precision"] == precision)]


def has_query_data(conditions: pd.DataFrame, cond: Condition) -> bool:
    """Whether any per-query file holds ``cond``'s benchmark, setting and precision (the conditions table's
    ``has_query_data``): only those files can name a precision kind, so a board without them need not ask."""
    if conditions is None or conditions.empty:
        return False
    rows = _conditions_at(conditions, cond.benchmark, cond.setting, cond.precision)
    return bool(rows["has_query_data"].astype(bool).any())


def _precision_label(snapshot: data.Snapshot, conditions: pd.DataFrame, chosen: Mapping[str, str],
                     precision: str) -> str:
    rows = _conditions_at(conditions, chosen.get("benchmark"), chosen.get("setting"), precision)
    if rows.empty:
        return precision
    if not rows["has_query_data"].astype(bool).any():
        return f"{precision} (published: precision not recorded)"
    table = data.precision_kinds(snapshot)
    kinds = table.loc[(table["benchmark"] == chosen.get("benchmark")) & (table["setting"] == chosen.get("setting"))
                      & (table["precision"] == precision), "precision_kind"]
    text = kind_text(precision, sorted(set(kinds)))
    return f"{precision} ({text})" if text else precision


# -------------------------------------------------------------------------------------------- the sidebar
def view(need: Need | None = None, title: str = "This view") -> View:
    """Draw the shared sidebar and return the selected :class:`View` (``need``: what the calling view, titled
    ``title``, needs from the condition; see :class:`Need`)."""
    data_dir = data.data_dir_from()
    if not data_dir.is_dir():
        return View(data_dir=data_dir, data=None, facets={})
    snapshot = data.snapshot(data_dir)
    facets = data.facets(snapshot)
    selected = View(data_dir=data_dir, data=snapshot, facets=facets)
    if not facets.get("benchmarks"):
        st.sidebar.info(notices.NO_RESULTS_IN_SIDEBAR)
        return selected
    st.sidebar.markdown("**What to evaluate**")
    good = need_rows(snapshot, need.rows) if need is not None else None  # remembered per snapshot
    chooser = _Tracking()
    labels = {"precision": lambda p: precision_label(snapshot, facets["conditions"], chooser.chosen, p)}
    chosen = choose_view_condition(facets, chooser, need, None, title, labels, good)
    selected.cond, selected.moved, selected.need_unmet = chosen.cond, chosen.moved, chosen.unmet
    selected.tasks = list((facets.get("by_benchmark") or {}).get(selected.cond.benchmark, {}).get("tasks") or [])
    selected.systems, selected.filter_summary = _system_filters(snapshot, facets, selected.cond.benchmark)
    return selected


class _Tracking(InSidebar):
    """:data:`in_sidebar` that remembers the values chosen so far (the precision labels depend on them)."""

    def __init__(self) -> None:
        self.chosen: dict[str, str] = {}

    def choose(self, control: Control, offer: Offer, label: Callable[[str], str]) -> str:
        self.chosen[control.field] = value = super().choose(control, offer, label)
        return value


def _system_filters(snapshot: data.Snapshot, facets: dict, bench: str) -> tuple[tuple[str, ...] | None, str]:
    # A popover, not an expander: the browser draws a popover's content only when it opens, so the text input,
    # multiselect and radio scripts stay off the first paint (an expander draws its content even collapsed).
    filters = st.sidebar.popover("Filter systems", icon=":material/filter_list:", width="stretch")
    with filters:
        search = state.search("q", "Name contains", placeholder="e.g. e5, bge, 7b")
        families = state.multiselect("family", "Family", list(facets.get("families") or []),
                                     placeholder="any family")
        ladder = list(SIZE_LADDER)
        left, right = st.columns(2)
        lo = state.select("size_min", "Size from", ladder[:-1], "0", where=left, always=False,
                          help="Model size in parameters. Bounding the size hides systems of unknown size.")
        # every control in the popover has its default first: the browser draws a popover's widgets only
        # when it opens, and until then Streamlit re-creates an unseen widget at its first option
        hi = state.select("size_max", "to", ladder[:0:-1], "no limit", where=right, always=False)
        if ladder.index(lo) >= ladder.index(hi):
            filters.warning(notices.size_bounds_ignored(lo, hi))
            lo, hi = "0", "no limit"
        open_w = state.select("open", "Open weights", list(YES_NO_ANY), "any", widget="radio", always=False)
        itune = state.select("itune", "Uses instructions", list(YES_NO_ANY), "any", widget="radio",
                             always=False)
    return filter_systems(snapshot, bench, search=search, families=families, size_min=lo, size_max=hi,
                          open_weights=open_w, uses_instructions=itune)


def filter_systems(snapshot: data.Snapshot, bench: str, *, search: str = "", families: Sequence[str] = (),
                   size_min: str = "0", size_max: str = "no limit", open_weights: str = "any",
                   uses_instructions: str = "any") -> tuple[tuple[str, ...] | None, str]:
    """The systems the filters keep, in the URL's terms (``q``, ``family``, ``size_min`` / ``size_max`` on
    :data:`SIZE_LADDER`, ``open`` and ``itune`` in :data:`YES_NO_ANY`), and the filter in words; (None, "")
    when no filter is set. The sidebar's popover and the JSON API (``ui/api_answers.py``) ask it."""
    lo, hi, open_w, itune = size_min, size_max, open_weights, uses_instructions
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
    return names, f"Filtered to {words.counted(len(names), 'system')}: " + "; ".join(parts) + "."


def share_box(params: dict, base_url: str | None, api_url: str | None = None) -> None:
    """The copy-link affordance: a "Share this view" button opening the URL that reopens this exact view
    (st.code has a copy button), and below it, for a view the JSON API answers, the API URL of the same view
    (``ui/api.py``). It sits in a popover because the browser draws popover content only when it
    opens: st.code's syntax highlighter is a 1.5 MB script that otherwise loaded with every first page
    (~0.3 s of the first paint on 2 cores, bench/bench_app.py)."""
    box = st.sidebar.popover("Share this view", icon=":material/link:", width="stretch")
    box.code(state.share_url(params, base_url), language=None, wrap_lines=True)
    box.caption("Copy the link (button at the top right of the box): it reopens this page with every "
                "control as it is now.")
    if api_url:
        box.code(api_url, language=None, wrap_lines=True)
        box.caption("The same view's numbers as JSON, for scripts (`curl`, `pandas.read_json`): the read-only "
                    "API, guide in docs/api.md.")
