"""Compare: two to four systems side by side, per task and per query, with a paired significance test."""
from __future__ import annotations

from dataclasses import replace
from itertools import combinations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from evalcore.uncertainty.separability import holm_adjusted
from ui import charts, data, drawing, drilldown, glossary, hints, notices, sidebar, state, tables

TITLE = "Compare"
MAX_SYSTEMS = 4
# soft: a first visit opens where two systems have per-query results; a condition the visitor chose stays
NEED = sidebar.Need("two systems with per-query results", sidebar.rows_with_two_systems_with_query_data, soft=True)
VALUES = {"expected": "expected (tie-aware)", "oblivious": "oblivious (as reported)"}
HOLM_HELP = ("The p-value adjusted for testing several pairs at once (Holm–Bonferroni, "
             "`evalcore.uncertainty.separability.holm_adjusted`): sorted ascending, the i-th smallest of m is multiplied by "
             "m − i + 1, raised to the one before it if lower, and capped at 1.")


def render() -> None:
    view = hints.page_top(TITLE, (
        "Put two to four systems side by side: their score on every task, the individual queries where they "
        "differ (and whether a tie decided it), and a paired randomization test of whether the difference is more "
        "than query-sampling noise."), need=NEED)
    if view is None:
        return
    hints.condition_line(view)
    hints.sources_line(view)
    board = data.leaderboard(view.data, view.cond, systems=view.systems, uncertainty=False)
    candidates = board.ranked["system"].tolist() + board.incomplete["system"].tolist()
    if len(candidates) < 2:
        hints.explain_missing(
            f"{'Only one system has' if candidates else 'No system has'} results under this condition.",
            "Comparing needs at least two. Loosen the sidebar filters or add another system's run:",
            hints.ingest_hint(view))
        return
    meta = data.systems(view.data, benchmark=view.cond.benchmark)
    with_queries = set(meta.loc[meta["has_query_data"], "system"])
    preferred = [s for s in candidates if s in with_queries]
    default = preferred[:2] if len(preferred) >= 2 else candidates[:2]  # show the per-query views when possible
    chosen = state.multiselect("sys", f"Systems (2 to {MAX_SYSTEMS})", candidates, default,
                               max_selections=MAX_SYSTEMS, placeholder="pick systems", always=True, min_kept=2,
                               help="Your choice is kept when you change the condition: systems without results "
                                    "under it are left out until they have some again.")
    if len(chosen) < 2:
        drawing.info(f"Pick at least two systems to compare: {len(chosen) or 'none'} is chosen.")
        return
    g_of = dict(zip(board.ranked["system"], board.ranked["G"]))
    for col, name in zip(st.columns(len(chosen)), chosen):
        drawing.into(col).metric(f"G (oblivious) · {name}", f"{g_of[name]:.4f}" if name in g_of else "not ranked",
                                 help=("G of the oblivious task scores under the sidebar's tie policy, as the Leaderboard ranks; "
                         "the bars and the table below show tie-aware expected values where per-query results "
                         "exist." if name in g_of else "Missing at least one task, see the Leaderboard page."))
    expected = board.ranked.set_index("system")["G_expected"] if "G_expected" in board.ranked else None
    known = [name for name in chosen if expected is not None and name in expected and pd.notna(expected[name])]
    differ = any(f"{expected[name]:.4f}" != f"{g_of[name]:.4f}" for name in known)
    if differ:  # the headline is oblivious, the bars and the table below are expected values: both said here
        drawing.caption("Tie-aware expected G (the bars and the table below): "
                        + "; ".join(f"{notices.safe_text(name)} {expected[name]:.4f}" for name in known) + ".")
    per_task = data.per_task(view.data, chosen, view.cond)
    _per_task(per_task, chosen, key=None if view.data.overlay else ("compare", view.data, view.cond, tuple(chosen)))
    tasks_with_queries = sorted(per_task.loc[per_task["has_query_data"], "task"].unique().tolist())
    st.divider()
    drawing.subheader("Per query")
    if not tasks_with_queries:
        drawing.markdown("These systems have task-level scores only under this condition (published results carry no "
                         "per-query values), so there is no per-query comparison here.")
        _offer_per_query_condition(view)
        return
    left, mid, right = st.columns([2, 2, 1.4])
    task = state.select("task", "Task", tasks_with_queries, tasks_with_queries[0], where=left)
    value = state.select("values", "Compare values", list(VALUES), "expected", where=mid, widget="radio",
                         always=False, format_func=VALUES.get, help=glossary.tip("expected", "oblivious", before=(
                             "Which per-query values the table and the paired test compare (expected by "
                             "default).")))
    diff_only = state.flag("diff_only", "Only differing queries", True, where=right,
                           help="Only the queries where the systems' values differ.")
    rows = data.query_diff(view.data, chosen, view.cond, task, value=value)
    if rows.empty:
        drawing.markdown(f"No query of {notices.safe_text(task)} has per-query results for all of "
                         f"{', '.join(notices.safe_text(s) for s in chosen)}.")
        return
    texts = data.task_texts(view.data, view.cond.benchmark, task)
    table = drilldown.query_table(rows, chosen, texts, value, diff_only, task)
    rank_rows = data.query_diff(view.data, chosen, replace(view.cond, metric=drilldown.RANK_METRIC), task)
    drilldown.query_detail(rows, chosen, texts, view.cond.setting, table["qid"].tolist(), rank_rows=rank_rows)
    _paired_tests(view, chosen, task, value)


def _offer_per_query_condition(view: sidebar.View) -> None:
    """A button to the nearest setting where these systems could be compared per query (no dead end)."""
    coverage = data.coverage(view.data)
    good = sidebar.rows_with_two_systems_with_query_data(coverage)
    good = good[good["benchmark"] == view.cond.benchmark]
    if good.empty:
        return
    setting = sidebar.nearest("setting", view.cond.setting, sorted(good["setting"].unique()))
    st.button(f"Compare per query under {sidebar.SETTING_LABELS.get(setting, setting)}", on_click=state.set_wish,
              args=("setting", setting), icon=":material/swap_horiz:")


def _per_task(per_task, chosen: list[str], key) -> None:
    """Each system's score per task, tie-aware where per-query results exist: the expected value with its tie
    range [min, max] as an error bar; else the published (oblivious) score. The figure is built once per
    ``key`` (the question: data snapshot, condition, systems; None for a session's own upload)."""
    shown = per_task.assign(score=per_task["expected"].where(per_task["has_query_data"], per_task["value"]))
    shown = shown.assign(above=shown["max"] - shown["score"], below=shown["score"] - shown["min"])
    charts.draw_remembered(key, lambda: _per_task_figure(shown, chosen))
    tie_aware = bool(shown["has_query_data"].any())
    drawing.caption(("Bars: the tie-aware **expected** score where per-query results exist, with its tie range "
                "[min, max] (orange); " if tie_aware else "Bars: ")
                    + "the published score where only task-level scores exist (`value` in the hover is the oblivious "
                    "score under the sidebar's tie policy).")
    wide = shown.pivot(index="task", columns="system", values="score").reindex(columns=chosen).reset_index()
    drawing.dataframe(wide, hide_index=True, width="stretch",
                      column_config={"task": "Task", **{s: tables.number(_score_label(s, shown)) for s in chosen}})


def _score_label(system: str, shown) -> str:
    """A per-task column's header says which value it holds: the expected one may differ from the Leaderboard's
    oblivious task score (BM25 on SpartQA, pooled: 0.1150 here, 0.1115 there)."""
    tie_aware = shown.loc[shown["system"] == system, "has_query_data"]
    if tie_aware.all():
        return f"{system} (expected)"
    return f"{system} (published)" if not tie_aware.any() else f"{system} (expected where per-query, else published)"


def _per_task_figure(shown, chosen: list[str]) -> go.Figure:
    """Grouped bars, one colour per system in the order chosen, each with its tie range as an asymmetric error
    bar (absent where only a task-level score exists), written as one figure description."""
    bars = []
    for colour, system in zip(charts.PALETTE * 2, chosen):
        rows = shown[shown["system"] == system]
        bars.append(go.Bar(
            x=rows["task"].tolist(), y=rows["score"].tolist(), name=system, marker=dict(color=colour),
            error_y=dict(type="data", array=rows["above"].tolist(), arrayminus=rows["below"].tolist(),
                         color="#f97316", thickness=2),
            customdata=rows[["value", "min", "max", "source"]].astype(object).to_numpy().tolist(),
            hovertemplate=(f"{system}<br>%{{x}}: score %{{y:.4f}}<br>value %{{customdata[0]:.4f}} · "
                           "[min, max] [%{customdata[1]:.4f}, %{customdata[2]:.4f}]<br>source %{customdata[3]}"
                           "<extra></extra>")))
    return go.Figure(data=bars, layout=dict(
        barmode="group", height=420, margin=dict(l=10, r=10, t=30, b=10), legend_title_text="system",
        xaxis=dict(title=None, categoryorder="array", categoryarray=sorted(shown["task"].unique().tolist())),
        yaxis=dict(title="score")))


def _paired_tests(view: sidebar.View, chosen: list[str], task: str, value: str) -> None:
    drawing.subheader("Paired randomization test")
    drawing.markdown(f"For each pair, on the queries of **{notices.safe_text(task)}** both systems answered: the mean "
                     f"difference of their **{VALUES[value]}** per-query values and a two-sided sign-flip p-value "
                     "(10,000 resamples). A small p-value means the gap is unlikely to be query-sampling noise."
                     + (" Expected values do not depend on how ties were broken, so a tie-prone system is not "
                   "helped or hurt by the tie policy here." if value == "expected" else
                   " Oblivious values carry the tie policy's luck: a tie-prone system's differences are partly "
                   "tie-breaking."))
    results = []
    for a, b in combinations(chosen, 2):
        test = data.paired_test(view.data, a, b, view.cond, task=task, value=value)
        if test is None:
            results.append({"system_a": a, "system_b": b, "mean_diff": None, "p_value": None, "n_queries": 0,
                            "note": "no shared per-query data"})
        else:
            results.append({"system_a": a, "system_b": b, "mean_diff": test.observed_diff,
                            "p_value": test.p_value, "n_queries": test.n_queries, "note": ""})
    tested = sum(row["p_value"] is not None for row in results)
    holm = {}
    if tested > 1:  # several pairs: each p-value adjusted for the others (Holm–Bonferroni)
        adjusted = holm_adjusted([np.nan if row["p_value"] is None else row["p_value"] for row in results])
        for row, p_holm in zip(results, adjusted):
            row["p_holm"] = None if np.isnan(p_holm) else float(p_holm)
        holm = {"p_holm": tables.number("Holm-adjusted p", help=HOLM_HELP)}
    drawing.dataframe(results, hide_index=True, width="stretch", column_order=[
        "system_a", "system_b", "mean_diff", "p_value", *holm, "n_queries", "note"], column_config={
        "system_a": "System A", "system_b": "System B",
        "mean_diff": st.column_config.NumberColumn(f"Mean A − B ({value})", format="%+.4f"),
        "p_value": tables.number("p-value"), **holm, "n_queries": tables.number("Paired queries", 0),
        "note": "Note"})
    if holm:
        drawing.caption(f"Holm-adjusted p: each p corrected for testing {tested} pairs at once (Holm–Bonferroni), so the "
                        "chance that any pair below 0.05 is a false “different” is at most 5%.")


render()
