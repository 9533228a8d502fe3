"""What the Leaderboard shows and exports, in which words: its table, the export frames and the per-query
pointer (the notices about the board — policy swaps, precision kinds, … — are :mod:`ui.notices`'s). Pure pandas
over the store's answers — every number is evalcore's (:class:`evalcore.store.Leaderboard`: each lens' intervals,
rank sets, tiers and adjacent tests, :mod:`evalcore.uncertainty`); this module only picks, labels and words
them. The page script (``pages/leaderboard.py``) draws what it returns.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import streamlit as st

from evalcore.aggregate import AGGREGATES, official_aggregate
from evalcore.store import Condition, Leaderboard
from evalcore.store.answers import EXPORT_PROVENANCE
from evalcore.uncertainty.board import QUESTIONS
from evalcore.uncertainty.separability import real_pareto_front
from ui import charts, data, glossary, memo, state, tables
from ui.sidebar import BENCHMARK_LABELS, INSTRUCTION_CHOICES, SETTING_LABELS

ORDERS = {"g": "G (geometric mean)", "mean": "Mean (arithmetic)", "borda": "Borda count (order only)"}
CHARTS = {"intervals": "Top systems with their intervals", "size": "Performance vs model size", "none": "None"}
"""The chart below the Leaderboard (URL key ``chart``): its values and labels."""
"""The Leaderboard's ranking control (URL key ``sort``): G or the mean ranks the board; Borda only orders its
rows (the ranks stay those of the benchmark's own aggregate)."""
AGGREGATE_OF = {"g": "G", "mean": "mean"}
TASK_LEVEL_ONLY = "task-level scores only"
NO_VALUE = "—"
"""What a cell shows where a lens says nothing of a row (a zero task under G, a lens not available)."""
LENSES = {"queries": "On these tasks", "tasks": "On new tasks like these"}
"""The lens control's values (URL key ``lens``): which lens fills the table's range columns."""
RANK_KINDS = {"marginal": "Each row at the level (marginal)", "simultaneous": "All rows at once (simultaneous)"}
"""The rank sets' kind (URL key ``ranks``)."""
LEVELS = ("0.9", "0.95", "0.99")
"""The level control's values (URL key ``level``; the CLI and the API take any level from 0.5 to below 1)."""
DIFFERS_MARK = "▼ differs"
"""The mark of a row whose adjacent pair with the next row differs under the shown lens."""
CHART_ROWS = 15
PHONE_WIDTHS = (36, 64, 150, 60, 96)
"""Pixel widths of the first five columns (#, rank range, system, score, interval) on a phone: together (406 px)
they nearly fit its screen (390 px wide, less the page's margins)."""
SCREEN_WIDTHS = (36, 78, 300, 60, 120)
"""The same on a wider screen: 300 px hold a system name of ~42 characters (most names are 20–40, e.g.
``Alibaba-NLP/gte-Qwen2-7B-instruct``), 120 px an interval's words."""
INTEGER_COLUMNS = ("rank", "n_tasks", "queries_rank_lo", "queries_rank_hi", "queries_tier", "tasks_rank_lo",
                   "tasks_rank_hi", "tasks_tier")


def benchmark_name(benchmark: str) -> str:
    return BENCHMARK_LABELS.get(benchmark, benchmark)


def default_order(benchmark: str) -> str:
    """The ranking control's default: the benchmark's own aggregate (``g`` for RAR-b, ``mean`` for R2MED)."""
    return "mean" if official_aggregate(benchmark) == "mean" else "g"


def ranking_aggregate(order: str, benchmark: str) -> str:
    """The aggregate that ranks under the control's ``order``: "G" / "mean" (Borda orders only: the
    benchmark's own ranks)."""
    return AGGREGATE_OF.get(order, official_aggregate(benchmark))


def aggregate_for(order: str, benchmark: str) -> str | None:
    """The ``aggregate=`` to ask the store: None for the benchmark's own (the question the warm start asked),
    else "G" / "mean"."""
    wanted = ranking_aggregate(order, benchmark)
    return None if wanted == official_aggregate(benchmark) else wanted


def ranking_line(board: Leaderboard, benchmark: str, order: str = "") -> str:
    """Which aggregate ranks, and whether it is the benchmark's own; under the Borda ``order``, that the rows
    are in Borda order while the ranks stay the aggregate's."""
    own = official_aggregate(benchmark)
    name = benchmark_name(benchmark)
    whose = f"{name}'s own aggregate" if board.ranked_by == own else f"not {name}'s own, which is {own}"
    rows = (f" · rows in **Borda count** order (points from each task's ranking, the Borda column); the # "
            f"column and the rank ranges stay {board.ranked_by}'s" if order == "borda" else "")
    why = f" · **#** orders the point values of {board.ranked_by}; the rank ranges say which ranks each row can take"
    declared = "" if board.declared_tasks is not None else " · tasks: those present in the data (no manifest)"
    return (f"Ranked by **{board.ranked_by}** ({AGGREGATES[board.ranked_by]}; {whose}){rows}{why} · tie policy of "
            f"the oblivious values: `{board.tie_policy}`{declared}")


# -------------------------------------------------------------------------------------------- per row
def _known(rows: pd.DataFrame, *columns: str) -> list[bool]:
    known = pd.Series(True, index=rows.index)
    for column in columns:
        known &= rows[column].notna() if column in rows else False
    return known.tolist()


def interval_texts(rows: pd.DataFrame, lens: str) -> pd.Series:
    """Each row's interval through ``lens`` in words (rounded outwards), :data:`NO_VALUE` where there is none."""
    lo_column, hi_column = f"{lens}_lo", f"{lens}_hi"
    known = _known(rows, lo_column, hi_column)
    lo = rows[lo_column].tolist() if lo_column in rows else [None] * len(rows)
    hi = rows[hi_column].tolist() if hi_column in rows else [None] * len(rows)
    return pd.Series([tables.interval_words(a, z) if k else NO_VALUE for k, a, z in zip(known, lo, hi)],
                     index=rows.index, dtype=object)


def ranks_texts(rows: pd.DataFrame, lens: str) -> pd.Series:
    """Each row's rank set through ``lens`` in words: "3–9", "1" when it is a single rank; :data:`NO_VALUE`
    where unknown."""
    lo_column, hi_column = f"{lens}_rank_lo", f"{lens}_rank_hi"
    known = _known(rows, lo_column, hi_column)
    lo = rows[lo_column].tolist() if lo_column in rows else [None] * len(rows)
    hi = rows[hi_column].tolist() if hi_column in rows else [None] * len(rows)
    texts = [NO_VALUE if not k else (f"{int(a)}" if a == z else f"{int(a)}–{int(z)}")
             for k, a, z in zip(known, lo, hi)]
    return pd.Series(texts, index=rows.index, dtype=object)


def differs_marks(board: Leaderboard, rows: pd.DataFrame, lens: str) -> pd.Series:
    """:data:`DIFFERS_MARK` on each row of ``rows`` (in the board's order) whose adjacent pair with the row below
    it differs through ``lens``; "" elsewhere (and everywhere in another order than the board's)."""
    summary = board.lens(lens)
    marks = pd.Series("", index=rows.index, dtype=object)
    if summary is None or summary.adjacent is None or not rows.index.equals(board.ranked.index):
        return marks
    upper = set(summary.adjacent.loc[summary.adjacent["differ"], "system_1"])
    return marks.where(~rows["system"].isin(upper), DIFFERS_MARK)


def coverage_texts(rows: pd.DataFrame, n_board_tasks: int) -> pd.Series:
    """Each row's task coverage, "k of n" (n: the board's tasks)."""
    return rows["n_tasks"].map(lambda k: f"{int(k)} of {n_board_tasks}" if pd.notna(k) else "—").astype(object)


def _yes_no(value) -> str:
    return "unknown" if value is None or value is pd.NA or pd.isna(value) else ("yes" if bool(value) else "no")


def kinds_of(kinds: pd.DataFrame, cond: Condition) -> pd.Series:
    """system → precision kind (inference / storage / native) under ``cond``'s benchmark, setting and
    precision (absent: the files do not say — published scores)."""
    if kinds is None or kinds.empty:
        return pd.Series(dtype=object)
    rows = kinds[(kinds["benchmark"] == cond.benchmark) & (kinds["setting"] == cond.setting)
                 & (kinds["precision"] == cond.precision)]
    return rows.drop_duplicates("system").set_index("system")["precision_kind"]


def _metadata(frame: pd.DataFrame, meta: pd.DataFrame, kinds: pd.Series) -> pd.DataFrame:
    meta = meta.drop_duplicates("system").set_index("system") if meta is not None and len(meta) else pd.DataFrame()
    systems = frame["system"]

    def column(name):
        return systems.map(meta[name]) if name in meta else pd.Series(pd.NA, index=frame.index)

    return pd.DataFrame({
        "precision_kind": systems.map(kinds) if len(kinds) else pd.Series(pd.NA, index=frame.index, dtype=object),
        "n_parameters": pd.to_numeric(column("n_parameters"), errors="coerce"),
        "license": column("license"),
        "open_weights": column("open_weights").map(_yes_no),
        "instructions": column("uses_instructions").map(_yes_no),
        "reference": column("reference"),
        "source": column("source"),
    }, index=frame.index)


def board_systems(shown: tuple[str, ...] | None, pins: list[str], common: bool) -> tuple[str, ...] | None:
    """The systems the board holds: the sidebar's filter; with "Rank on common tasks" and two or more pinned
    rows, the pinned ones (among the filtered), ranked on the tasks all of them have. The page and the JSON API
    (``ui/api_answers.py``) ask it."""
    if not common or len(pins) < 2:
        return shown
    chosen = tuple(s for s in pins if shown is None or s in shown)
    return chosen if len(chosen) >= 2 else shown


def ordered(board: Leaderboard, order: str) -> pd.DataFrame:
    """The ranked rows in the page's order: by rank (ties: the point value), or by Borda points."""
    if order == "borda":
        return board.ranked.sort_values(["borda", "rank"], ascending=[False, True], kind="stable")
    return board.ranked


def table(board: Leaderboard, meta: pd.DataFrame, kinds: pd.Series, order: str, show_other: bool,
          show_borda: bool, lens: str = "queries") -> pd.DataFrame:
    """The table the page shows: # (the point order), the rank range through ``lens``, system, score, its
    interval and tier through ``lens`` and the differing-pair mark first (what a phone shows without scrolling),
    then the other lens' rank range and interval, the tie range and expected value (rows with per-query
    results), metadata and the task columns."""
    agg = board.ranked_by
    other = "mean" if agg == "G" else "G"
    second = "tasks" if lens == "queries" else "queries"
    rows = ordered(board, order)
    shown = pd.DataFrame({
        "rank": rows["rank"].astype("int64"),
        f"{lens}_ranks": ranks_texts(rows, lens),
        "system": rows["system"],
        agg: rows[agg],
        f"{lens}_interval": interval_texts(rows, lens),
        f"{lens}_tier": rows[f"{lens}_tier"].where(rows[f"{lens}_tier"] > 0) if f"{lens}_tier" in rows else np.nan,
        "differs": differs_marks(board, rows, lens),
        f"{second}_ranks": ranks_texts(rows, second),
        f"{second}_interval": interval_texts(rows, second),
    }, index=rows.index)
    if not shown["differs"].astype(bool).any():
        shown = shown.drop(columns="differs")
    numbers = [f"{agg}_min", f"{agg}_max", f"{agg}_expected"]
    numbers += ([other] if show_other else []) + (["borda"] if show_borda else [])
    coverage = pd.DataFrame({"coverage": coverage_texts(rows, len(board.declared_tasks or board.tasks))},
                            index=rows.index)
    shown = pd.concat([shown, rows[numbers], coverage, _metadata(rows, meta, kinds), rows[board.tasks]], axis=1)
    shown = shown.dropna(axis=1, how="all").reset_index(drop=True)
    if f"{lens}_tier" in shown:
        shown[f"{lens}_tier"] = shown[f"{lens}_tier"].astype("Int64")
    if "license" in shown:  # as "Open weights" beside it says: not a grey "None"
        shown["license"] = shown["license"].astype(object).where(shown["license"].notna(), "unknown")
    return shown


def rows_key(systems: Sequence[str]) -> str:
    """A short digest of the rows a table shows, in order: part of its selection widget's key."""
    return hashlib.blake2b("\x1f".join(systems).encode(), digest_size=6).hexdigest()


def ranks_header(name: str, lens: str) -> str:
    """The header of lens ``name``'s rank-range column when the lens control shows ``lens``: "Ranks" for the
    shown lens, "Ranks (on new tasks like these)" for the other."""
    return "Ranks" if name == lens else f"Ranks ({QUESTIONS[name]})"


def column_config(board: Leaderboard, phone: bool = False, lens: str = "queries") -> dict:
    """Labels, formats and glossary tooltips of :func:`table`'s columns; the first five columns' widths are
    :data:`PHONE_WIDTHS` on a phone, else :data:`SCREEN_WIDTHS`."""
    agg = board.ranked_by
    number, tip = tables.number, glossary.tip
    rank_width, range_width, system_width, score_width, interval_width = PHONE_WIDTHS if phone else SCREEN_WIDTHS
    level = f"{board.level:.0%}"
    kind = board.ranks

    def lens_columns(name: str, first: bool) -> dict:
        key = "on-these-tasks" if name == "queries" else "on-new-tasks"
        words = QUESTIONS[name]
        return {
            f"{name}_ranks": st.column_config.TextColumn(
                ranks_header(name, lens), width=range_width if first else None, pinned=first,
                help=tip("rank-range", key, before=f"The ranks this row can take {words}, at {level} ({kind})."
                         + (" The lens control above picks the question." if first else ""))),
            f"{name}_interval": st.column_config.TextColumn(
                f"{level} interval" if first else f"{level} interval ({words})", width=interval_width if first
                else None, help=tip("interval", key, before=f"Where {agg} lies {words}, at {level}.")),
            f"{name}_tier": number("Tier", 0, width="small", help=tip("tier", before=f"Tier {words}.")),
        }

    second = "tasks" if lens == "queries" else "queries"
    other = "mean" if agg == "G" else "G"
    config = {
        "rank": number("#", 0, width=rank_width, pinned=True, help=tip(
            "rank", before=f"The order of {agg}'s point values (competition rank: 1, 2, 2, 4).")),
        "system": st.column_config.TextColumn("System", pinned=True, width=system_width),
        agg: number(agg, width=score_width, help=tip("g" if agg == "G" else "mean", "oblivious")),
        **lens_columns(lens, True),
        "differs": st.column_config.TextColumn("Next", width="small", help=tip(
            "separable", before=f"{DIFFERS_MARK}: this row and the one below differ {QUESTIONS[lens]}.")),
        **lens_columns(second, False),
        f"{agg}_min": number(f"{agg} min", help=tip("tie-range")),
        f"{agg}_max": number(f"{agg} max", help=tip("tie-range")),
        f"{agg}_expected": number(f"{agg} expected", help=tip("expected")),
        # the other aggregate's column ("Show mean" / "Show G"): keyed by it alone, so that it cannot replace the
        # score column's width and tooltip
        other: number("Mean" if other == "mean" else "G", help=tip(other.lower())),
        # half points only where a task has tied scores: "723", not "723.0", when every total is whole
        "borda": number("Borda", 1 if (board.ranked.get("borda", pd.Series(dtype=float)) % 1 != 0).any() else 0,
                        help=tip("borda")),
        "coverage": st.column_config.TextColumn("Tasks", width="small", help="Tasks with a result, of the "
                                                "benchmark's tasks for this setting."),
        "precision_kind": st.column_config.TextColumn("Precision kind", help=tip("precision-kind")),
        "n_parameters": st.column_config.NumberColumn("Parameters", format="compact"),
        "license": st.column_config.TextColumn("Licence"),
        "open_weights": st.column_config.TextColumn("Open weights"),
        "instructions": st.column_config.TextColumn("Uses instructions", help=tip("instruction")),
        "reference": st.column_config.LinkColumn("Model page",
                                                 display_text=r"^https?://(?:www\.)?(?:huggingface\.co/)?(.*?)/?$"),
        "source": st.column_config.TextColumn("Source", help="Where the row's numbers come from; the line under "
                                              "the table names each source's repository, commit and date."),
    }
    config.update({task: number(task) for task in board.tasks})
    return config


# -------------------------------------------------------------------------------------------- exports
def rows_in_order(board: Leaderboard, order: str) -> pd.DataFrame:
    """:meth:`Leaderboard.rows` (ranked systems first, then those not ranked) with the ranked ones in the page's
    order (:func:`ordered`): an export lists the rows as the table above its buttons does."""
    rows = board.rows()  # its first len(board.ranked) rows are board.ranked's, in the same order
    positions = board.ranked.index.get_indexer(ordered(board, order).index)
    return pd.concat([rows.iloc[positions], rows.iloc[len(board.ranked):]], ignore_index=True)


def export_rows(board: Leaderboard, meta: pd.DataFrame, kinds: pd.Series, order: str = "g") -> pd.DataFrame:
    """Every system (ranked ones first, in the page's ``order``, then those not ranked: :func:`rows_in_order`)
    with every number of the board, its metadata and its source: what the CSV holds."""
    agg = board.ranked_by
    rows = board.export_frame(rows_in_order(board, order))  # what every export carries (evalcore's)
    lens_columns = [c for c in rows.columns if c.startswith(("queries_", "tasks_"))]
    first = ["rank", "system", agg, *lens_columns, f"{agg}_min", f"{agg}_max", f"{agg}_expected"]
    last = [c for c in EXPORT_PROVENANCE if c in rows]
    rest = [c for c in rows.columns if c not in first and c not in last and c not in board.tasks]
    frame = pd.concat([rows[first + rest], _metadata(rows, meta, kinds), rows[board.tasks], rows[last]], axis=1)
    return tables.with_integer_columns(frame, INTEGER_COLUMNS)


LATEX_TOPS = (10, 20, 50)
"""The LaTeX download's row choices besides every system: a paper's table holds the top of a board."""


def latex_rows(board: Leaderboard, order: str = "g", top: int | None = None) -> pd.DataFrame:
    """The LaTeX table: #, system, score, both lenses' rank ranges and intervals (under Borda ``order``: the
    Borda points too, rows in that order), tasks, then the task scores (wide tables are scaled to the page:
    :data:`ui.tables.WIDE_LATEX`); every system, the ones not ranked without a rank — or, with ``top``, only the
    ranked systems whose rank (#) is ``top`` or better (more than ``top`` rows when points tie at the cut)."""
    agg = board.ranked_by
    rows = rows_in_order(board, order)
    if top is not None:
        rows = rows[rows["complete"].astype(bool) & (rows["rank"] <= top)].reset_index(drop=True)
    complete = rows["complete"].astype(bool)
    frame = pd.DataFrame({"#": rows["rank"], "System": rows["system"], agg: rows[agg]})
    for lens, words in QUESTIONS.items():
        frame[f"Ranks ({words})"] = ranks_texts(rows, lens).where(complete, "not ranked")
        frame[f"Interval ({words})"] = interval_texts(rows, lens).where(complete, "")
    frame["Tasks"] = rows["n_tasks"]
    if order == "borda":
        frame.insert(2, "Borda", rows["borda"])
    return tables.with_integer_columns(pd.concat([frame, rows[board.tasks]], axis=1), ("#", "Tasks"))


def top_words(board: Leaderboard, top: int) -> str:
    """The LaTeX caption's words for a top-``top`` table: how many rows of how many ranked systems."""
    shown = int((board.ranked["rank"] <= top).sum())
    shared = f" (points tied at the cut: {shown} rows)" if shown > top else ""
    return f"Top {top} of {len(board.ranked)} ranked systems by {board.ranked_by}{shared}."


# -------------------------------------------------------------------------------------------- lines
@dataclass(frozen=True)
class Pointer:
    """Where the per-query results of a benchmark are: a condition that has them (``cond``, with its link (URL
    query) and its words), how many systems have per-query results under it (``n_systems``: the systems the
    link shows with intervals), and whether the shown board is such a condition. Under a system filter
    (:func:`within`): ``filtered``, and ``n_systems`` and the link are the filtered systems' when any of them has
    per-query results (the link keeps the filter), else every system's (``n_filtered`` 0, the link without it)."""

    n_systems: int
    here: bool
    cond: Condition | None = None
    url: str = ""
    words: str = ""
    systems: frozenset = frozenset()  # the linked condition's systems with per-query results
    params: tuple = ()  # the link's URL parameters, (key, value) pairs
    filtered: bool = False
    n_filtered: int = 0


FILTER_KEYS = ("q", "family", "size_min", "size_max", "open", "itune")
"""The URL keys of the sidebar's system filter (ui/sidebar.py ``_system_filters``)."""


def within(pointer: Pointer, systems: tuple[str, ...] | None, params: dict) -> Pointer:
    """``pointer`` for a board filtered to ``systems`` (None: no filter) by the URL ``params``' filter keys: a
    filtered board of 1 system said "8 systems have per-query results" and its link dropped the filter."""
    if systems is None or pointer.cond is None:
        return pointer
    kept = pointer.systems & set(systems)
    if not kept:
        return replace(pointer, filtered=True, n_filtered=0)
    filters = {key: value for key, value in params.items() if key in FILTER_KEYS}
    return replace(pointer, filtered=True, n_filtered=len(kept), n_systems=len(kept),
                   url=state.share_url({**dict(pointer.params), **filters}, None))


SETTING_PREFERENCE = ("full-pooled", "mcr", "full")


def pointer_for(snapshot: data.Snapshot, cond: Condition, board: Leaderboard) -> Pointer:
    """:func:`per_query_pointer` of the snapshot's coverage, remembered per process for the shared data (the
    same for every session until the data change: a new snapshot fingerprint; ~5 ms of pandas per Leaderboard
    rerun otherwise). A session's own uploaded run (``snapshot.overlay``) is not remembered."""
    here = bool(board.ranked["has_query_data"].any()) if len(board.ranked) else False
    if snapshot.overlay:
        return per_query_pointer(data.coverage(snapshot), cond, board)
    return _remembered_pointer(snapshot, cond, here)


@memo.derived("a Leaderboard's per-query pointer", "ui/board.py",
              "the data snapshot, the condition and whether the board has per-query data here; at most 256",
              maxsize=256)
def _remembered_pointer(snapshot: data.Snapshot, cond: Condition, here: bool) -> Pointer:
    return _pointer(data.coverage(snapshot), cond, here)


def per_query_pointer(coverage: pd.DataFrame, cond: Condition, board: Leaderboard) -> Pointer:
    """The condition nearest to ``cond`` with per-query results (same metric if it can, else ndcg@10 / p@1;
    fp32; docid-desc; instructions as published) and how many systems have them under it."""
    here = bool(board.ranked["has_query_data"].any()) if len(board.ranked) else False
    return _pointer(coverage, cond, here)


def _pointer(coverage: pd.DataFrame, cond: Condition, here: bool) -> Pointer:
    if coverage is None or coverage.empty:
        return Pointer(0, here)
    rows = coverage[(coverage["benchmark"] == cond.benchmark) & (coverage["n_query_tasks"] > 0)]
    if rows.empty:
        return Pointer(0, here)
    rank = rows.assign(
        _setting=rows["setting"].map({s: i for i, s in enumerate(SETTING_PREFERENCE)}).fillna(9),
        _metric=rows["metric"].map({cond.metric: 0, "ndcg@10": 1, "p@1": 2}).fillna(3),
        _precision=(rows["precision"] != "fp32").astype(int) + (rows["precision"] != cond.precision).astype(int),
        _ties=(rows["tie_policy"] != "docid-desc").astype(int),
        _systems=-rows.groupby(["setting", "metric", "precision", "tie_policy"])["system"].transform("nunique"),
    ).sort_values(["_setting", "_metric", "_precision", "_ties", "_systems"], kind="stable")
    best = rank.iloc[0]
    linked = rank[(rank["setting"] == best["setting"]) & (rank["metric"] == best["metric"])
                  & (rank["precision"] == best["precision"]) & (rank["tie_policy"] == best["tie_policy"])]
    systems = frozenset(linked["system"])  # what the link shows, not every condition's systems (9 vs 8)
    target = Condition(cond.benchmark, best["metric"], best["setting"], None, best["precision"], best["tie_policy"])
    instr = next(k for k, v in INSTRUCTION_CHOICES.items() if v is None)
    params = {"bench": target.benchmark, "setting": target.setting, "metric": target.metric, "instr": instr,
              "prec": target.precision, "ties": target.tie_policy}
    words = " · ".join([benchmark_name(target.benchmark), SETTING_LABELS.get(target.setting, target.setting),
                        target.metric, target.precision])
    return Pointer(len(systems), here, target, state.share_url(params, None), words, systems,
                   tuple(params.items()))


def lifted_by_ties(board: Leaderboard) -> pd.DataFrame:
    """The systems whose tie range alone can carry them past others: broken in its favour, a system's aggregate
    (``{agg}_max``) beats the point value of a system ranked above it. Columns: system, point, top (the max),
    rank (the point's competition rank), best (1 + the other systems whose point value is above the max), in
    board order. Their rank ranges start that high because of ties, not because they score high."""
    agg = board.ranked_by
    rows = board.ranked
    if rows.empty or f"{agg}_max" not in rows:
        return pd.DataFrame(columns=["system", "point", "top", "rank", "best"])
    points = rows[agg].to_numpy(dtype=float)
    tops = rows[f"{agg}_max"].to_numpy(dtype=float)
    ranks = 1 + (points[None, :] > points[:, None]).sum(axis=1)  # competition rank of each point value
    best = 1 + (points[None, :] > tops[:, None]).sum(axis=1)  # NaN max compares False: best = 1, masked below
    lifted = pd.notna(tops) & (best < ranks)
    return pd.DataFrame({"system": rows["system"].to_numpy()[lifted], "point": points[lifted],
                         "top": tops[lifted], "rank": ranks[lifted], "best": best[lifted]})


# -------------------------------------------------------------------------------------------- uncertainty
def could_be_first(board: Leaderboard, lens: str = "queries") -> list[str]:
    """The systems whose rank range through ``lens`` includes 1, in board order."""
    ranked = board.ranked
    column = f"{lens}_first"
    if ranked.empty or column not in ranked:
        return []
    return ranked.loc[ranked[column].astype(bool), "system"].tolist()


def tier_labels(rows: pd.DataFrame, lens: str = "queries") -> pd.Series | None:
    """"Tier 1", "Tier 2", … per row through ``lens`` (None when no tiers were computed)."""
    column = f"{lens}_tier"
    if column not in rows or not rows[column].gt(0).any():
        return None
    return rows[column].map(lambda t: f"Tier {int(t)}" if t > 0 else "Not tested")


def real_front(board: Leaderboard, sized: pd.DataFrame, lens: str = "queries") -> list[bool]:
    """Which rows of ``sized`` (system, n_parameters; ranked systems) are on the size chart's Pareto front: not
    dominated by a system of no larger size that is surely better through ``lens``
    (:func:`evalcore.uncertainty.separability.real_pareto_front`); by point values when the lens says nothing."""
    summary = board.lens(lens)
    if summary is None or summary.surely_above is None or not len(sized):
        return charts.pareto_front(sized["n_parameters"].tolist(), sized[board.ranked_by].tolist())
    position = pd.Series(range(len(board.ranked)), index=board.ranked["system"].to_numpy())
    rows = position.loc[sized["system"]].to_numpy()
    above = summary.surely_above[np.ix_(rows, rows)]
    return real_pareto_front(sized["n_parameters"].to_numpy(dtype=float), above).tolist()
