"""Leaderboard: systems ranked by the geometric mean G with tie-aware and bootstrap intervals."""
from __future__ import annotations

import streamlit as st

from ui import charts, data, hints, sidebar, state, tables

SORTS = {"g": "G (geometric mean)", "mean": "Arithmetic mean", "borda": "Borda count"}
SORT_COLUMN = {"g": "G", "mean": "mean", "borda": "borda"}
# Charts are drawn only on request, one at a time: each Plotly chart adds ~0.1 s of browser work to every
# rerun (the first one also loads plotly.js), and both sit below the fold (bench/bench_app.py).
CHARTS = {"none": "None", "intervals": "G with its intervals", "size": "Performance vs model size"}
CHART_ROWS = 30
PARETO_LABELS = 8


def render() -> None:
    view = hints.page_top("Leaderboard", (
        "Systems ranked by **G**, the geometric mean of task scores (RAR-b's aggregate). Tied scores make a run's "
        "rank order ambiguous, so each G comes with the range it could take **[G_min, G_max]** over every "
        "ordering of tied documents, and — where per-query results exist — a 95% bootstrap interval and the "
        "ranks it allows."))
    if view is None:
        return
    board = data.leaderboard(view.data, view.cond, systems=view.systems)
    hints.condition_line(view)
    if board.ranked.empty and board.incomplete.empty:
        hints.explain_missing(
            "No results for this combination.",
            "Pick another setting, metric, instruction or precision in the sidebar, or add results for it:",
            hints.ingest_hint(view))
        return

    left, mid, right = st.columns([2, 1, 1])
    sort = state.select("sort", "Order by", list(SORTS), "g", where=left, widget="radio",
                        format_func=SORTS.get, always=False,
                        help="Rank column stays the rank by G; this only changes the order of rows and the chart.")
    show_mean = state.flag("mean", "Show arithmetic mean", False, where=mid)
    show_borda = state.flag("borda", "Show Borda count", False, where=right)

    if board.ranked.empty:
        st.warning("No system has results for every task of this benchmark, so none can be ranked by G.")
    else:
        _headline(board, sort)
        _table(board, sort, show_mean, show_borda, view)
        chart = state.select("chart", "Chart", list(CHARTS), "none", widget="radio", format_func=CHARTS.get,
                             always=False, help="Draws the chosen chart below the table.")
        if chart == "intervals":
            _chart(board, sort)
        elif chart == "size":
            _size_chart(board, view)
    _incomplete(board)


def _headline(board, sort: str) -> None:
    ranked = board.ranked.sort_values(SORT_COLUMN[sort], ascending=False, kind="stable")
    top = ranked.iloc[0]
    cols = st.columns(4)
    cols[0].metric("Systems ranked", f"{len(board.ranked)}")
    cols[1].metric("Top G", f"{top['G']:.4f}", help="G of the first row in the current order.")
    if top[["G_min", "G_max"]].notna().all():
        cols[2].metric("Top G tie range", f"{top['G_min']:.3f} – {top['G_max']:.3f}",
                       help="[G_min, G_max] of the top system: G under the worst and best orderings of ties.")
    else:
        cols[2].metric("Top G tie range", "unknown", help="Published scores carry no min/max.")
    cols[3].metric("Not ranked", f"{len(board.incomplete)}", help="Systems missing a task, listed at the bottom.")
    st.markdown(f"Top system: **{hints.safe_text(top['system'])}**")
    if board.zero_task_systems:
        names = [hints.safe_text(s) for s in board.zero_task_systems]
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        st.warning(f"G is **0** for {shown}: one of their task scores is 0, and a geometric mean with a zero "
                   "factor is zero.")
    if board.bootstrap:
        st.caption(f"Bootstrap: {board.bootstrap:,} resamples of queries per task; rank interval = ranks "
                   "compatible with the 95% intervals. Systems with published scores only have no interval.")
    else:
        st.caption("No per-query results under this condition, so no bootstrap or rank intervals "
                   "(published task scores only).")


def _table(board, sort: str, show_mean: bool, show_borda: bool, view: sidebar.View) -> None:
    columns = ["rank", "system", "G", "G_min", "G_max", "G_expected", "G_lo", "G_hi", "rank_lo", "rank_hi"]
    columns += (["mean"] if show_mean else []) + (["borda"] if show_borda else []) + ["n_tasks"] + board.tasks
    table = board.ranked.sort_values(SORT_COLUMN[sort], ascending=False, kind="stable")[columns]
    table = table.dropna(axis=1, how="all").reset_index(drop=True)
    number = tables.number
    config = {
        "rank": number("Rank", 0, help="Rank by G (ties share the best rank).", width="small"),
        "system": st.column_config.TextColumn("System"),
        "G": number("G", help="Geometric mean over tasks of the oblivious scores."),
        "G_min": number("G min", help="G when every tie is broken against the system."),
        "G_max": number("G max", help="G when every tie is broken in its favour."),
        "G_expected": number("G expected", help="G of the tie-aware expected scores."),
        "G_lo": number("G 95% lo", help="Bootstrap 2.5th percentile."),
        "G_hi": number("G 95% hi", help="Bootstrap 97.5th percentile."),
        "rank_lo": number("Best rank", 0),
        "rank_hi": number("Worst rank", 0),
        "mean": number("Mean", help="Arithmetic mean over tasks."),
        "borda": number("Borda", 1, help="Points for beating other systems task by task (½ per tie)."),
        "n_tasks": number("Tasks", 0, width="small"),
    }
    config.update({task: number(task) for task in board.tasks})
    st.dataframe(tables.heat_styled(table, board.tasks), column_config=config, hide_index=True, width="stretch",
                 height=min(560, 35 * len(table) + 40))
    st.caption("Task columns are shaded from their lowest (white) to highest (teal) value.")
    tables.download_row(table, f"leaderboard_{view.cond.benchmark}_{view.cond.metric}",
                        f"{view.cond.benchmark} leaderboard, {view.cond.metric} ({hints.describe_condition(view)})",
                        bold_max=["G", "G_min", "G_max", "G_expected", "mean", "borda", *board.tasks])


def _chart(board, sort: str) -> None:
    st.subheader("G with its intervals")
    frame = board.ranked.sort_values(SORT_COLUMN[sort], ascending=False, kind="stable")
    if len(frame) > CHART_ROWS:
        st.caption(f"The first {CHART_ROWS} of {len(frame)} systems in the current order; narrow the list with "
                   "the sidebar filters to see others.")
        frame = frame.head(CHART_ROWS)
    charts.draw(charts.interval_figure(frame, "system", "G", [
        ("G_lo", "G_hi", "95% bootstrap interval", "#93c5fd"),
        ("G_min", "G_max", "tie range [G_min, G_max]", "#f97316"),
    ], x_title="G"))


def _size_chart(board, view: sidebar.View) -> None:
    st.subheader("Performance vs model size")
    meta = data.systems(view.data, benchmark=view.cond.benchmark)
    merged = board.ranked[["system", "G"]].merge(meta[["system", "n_parameters"]], on="system", how="left")
    sized = merged.dropna(subset=["n_parameters", "G"])
    sized = sized[sized["n_parameters"] > 0].sort_values("n_parameters")
    unknown = merged.loc[merged["n_parameters"].isna(), "system"].tolist()
    if sized.empty:
        st.info("No ranked system has a known parameter count, so there is nothing to plot. Sizes come from "
                "the `systems` table (`n_parameters`), e.g. via `python -m evalcore import-mteb`.")
        return
    import plotly.graph_objects as go

    front = sized[charts.pareto_front(sized["n_parameters"].tolist(), sized["G"].tolist())]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=sized["n_parameters"], y=sized["G"], mode="markers", name="system",
                             text=sized["system"], marker=dict(size=9, color="#64748b"),
                             hovertemplate="%{text}<br>%{x:.3s} parameters<br>G %{y:.4f}<extra></extra>"))
    labels = [name if i >= len(front) - PARETO_LABELS else "" for i, name in enumerate(front["system"])]
    fig.add_trace(go.Scatter(x=front["n_parameters"], y=front["G"], mode="lines+markers+text", name="Pareto front",
                             text=labels, customdata=front["system"], textposition="top left",
                             line=dict(color="#0d9488", shape="hv"),
                             marker=dict(size=10, color="#0d9488"),
                             hovertemplate="%{customdata}<br>%{x:.3s} parameters<br>G %{y:.4f}<extra></extra>"))
    fig.update_layout(xaxis=dict(type="log", title="parameters (log scale)"), yaxis_title="G", height=420,
                      margin=dict(l=10, r=10, t=40, b=40),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    charts.draw(fig)
    st.caption("Pareto front (smallest to largest): " + ", ".join(hints.safe_text(s) for s in front["system"])
               + ". No smaller system beats them on G.")
    if unknown:
        st.caption(f"Not plotted (size unknown): {', '.join(hints.safe_text(s) for s in unknown)}.")


def _incomplete(board) -> None:
    if board.incomplete.empty:
        return
    st.subheader(f"Not ranked ({len(board.incomplete)})")
    st.markdown("These systems lack a result for at least one task of this benchmark. G over a different set "
                "of tasks is not comparable, so they are listed apart.")
    table = board.incomplete.assign(missing_tasks=board.incomplete["missing_tasks"].map(lambda v: ", ".join(map(str, v))))
    st.dataframe(table, hide_index=True, width="stretch", column_config={
        "system": "System", "n_tasks": tables.number("Tasks with results", 0),
        "missing_tasks": "Missing tasks", "reason": "Reason"})


render()
