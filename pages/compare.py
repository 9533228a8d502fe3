"""Compare: two to four systems side by side, per task and per query, with a paired significance test."""
from __future__ import annotations

from itertools import combinations

import plotly.express as px
import streamlit as st

from ui import charts, data, hints, sidebar, state, tables

MAX_SYSTEMS = 4


def render() -> None:
    view = hints.page_top("Compare", (
        "Put two to four systems side by side: their score on every task, the individual queries where they "
        "differ (and whether a tie decided it), and a paired randomization test of whether the difference is more "
        "than query-sampling noise."))
    if view is None:
        return
    hints.condition_line(view)
    board = data.leaderboard(view.data, view.cond, systems=view.systems, bootstrap=0)
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
                               max_selections=MAX_SYSTEMS, placeholder="pick systems", always=True)
    if len(chosen) < 2:
        st.info("Pick at least two systems to compare.")
        return
    g_of = dict(zip(board.ranked["system"], board.ranked["G"]))
    for col, name in zip(st.columns(len(chosen)), chosen):
        col.metric(f"G · {name}", f"{g_of[name]:.4f}" if name in g_of else "not ranked",
                   help=None if name in g_of else "Missing at least one task, see the Leaderboard page.")
    per_task = data.per_task(view.data, chosen, view.cond)
    _per_task(per_task, chosen)
    tasks_with_queries = sorted(per_task.loc[per_task["has_query_data"], "task"].unique().tolist())
    st.divider()
    st.subheader("Per query")
    if not tasks_with_queries:
        hints.explain_missing(
            "None of these systems has per-query results under this condition (published task scores only).",
            "Per-query drill-down and the paired test need per-query values. Evaluate the runs and ingest them:",
            hints.ingest_hint(view))
        return
    left, right = st.columns([2, 1])
    task = state.select("task", "Task", tasks_with_queries, tasks_with_queries[0], where=left)
    diff_only = state.flag("diff_only", "Only queries where they differ", True, where=right)
    _drill_down(view, chosen, task, diff_only)
    _paired_tests(view, chosen, task)


def _per_task(per_task, chosen: list[str]) -> None:
    fig = px.bar(per_task, x="task", y="value", color="system", barmode="group",
                 color_discrete_sequence=charts.PALETTE,
                 category_orders={"system": chosen}, labels=dict(value="score", task=""),
                 error_y=None, hover_data={"min": ":.4f", "max": ":.4f", "expected": ":.4f", "source": True})
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=30, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    charts.draw(fig)
    wide = per_task.pivot(index="task", columns="system", values="value").reindex(columns=chosen).reset_index()
    st.dataframe(wide, hide_index=True, width="stretch",
                 column_config={"task": "Task", **{s: tables.number(s) for s in chosen}})


def _drill_down(view: sidebar.View, chosen: list[str], task: str, diff_only: bool) -> None:
    rows = data.query_diff(view.data, chosen, view.cond, task)
    if rows.empty:
        st.info(f"No query of {task} has per-query results for all of {', '.join(chosen)}.")
        return
    values = rows.pivot(index="qid", columns="system", values="oblivious").reindex(columns=chosen)
    tied = rows.pivot(index="qid", columns="system", values="tied_at_cutoff").reindex(columns=chosen)
    per_qid = rows.groupby("qid")[["spread", "differs"]].first()
    table = values.join(tied.add_suffix(" tied"), how="left").join(per_qid).reset_index()
    differing = int(per_qid["differs"].sum())
    st.markdown(f"**{differing} of {len(per_qid)}** queries of {task} score differently across these systems "
                "(oblivious values). A ✓ in a *tied* column means that system had a tie straddling the cutoff on "
                "that query, so its score there depended on tie-breaking.")
    if diff_only:
        table = table[table["differs"]]
    table = table.sort_values("spread", ascending=False, kind="stable").drop(columns="differs")
    config = {"qid": "Query", "spread": tables.number("Spread", help="max − min across the systems")}
    config.update({s: tables.number(s) for s in chosen})
    config.update({f"{s} tied": st.column_config.CheckboxColumn(f"{s} tied") for s in chosen})
    st.dataframe(table, hide_index=True, width="stretch", column_config=config, height=min(420, 36 * len(table) + 40))


def _paired_tests(view: sidebar.View, chosen: list[str], task: str) -> None:
    st.subheader("Paired randomization test")
    st.markdown(f"For each pair, on the queries of **{task}** both systems answered: the mean difference of "
                "their oblivious scores and a two-sided sign-flip p-value (10,000 resamples). A small p-value "
                "means the gap is unlikely to be query-sampling noise.")
    results = []
    for a, b in combinations(chosen, 2):
        test = data.paired_test(view.data, a, b, view.cond, task=task)
        if test is None:
            results.append({"system_a": a, "system_b": b, "mean_diff": None, "p_value": None, "n_queries": 0,
                            "note": "no shared per-query data"})
        else:
            results.append({"system_a": a, "system_b": b, "mean_diff": test.observed_diff,
                            "p_value": test.p_value, "n_queries": test.n_queries, "note": ""})
    st.dataframe(results, hide_index=True, width="stretch", column_config={
        "system_a": "System A", "system_b": "System B",
        "mean_diff": st.column_config.NumberColumn("Mean A − B", format="%+.4f"),
        "p_value": tables.number("p-value"), "n_queries": tables.number("Paired queries", 0), "note": "Note"})


render()
