"""Instructions: what a task instruction in the query adds (or costs) per system and task."""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from ui import charts, data, drawing, hints, notices, screen, sidebar, tables

TITLE = "Instructions"
NEED = sidebar.Need("results with and without instruction for the same system",
                    sidebar.rows_with_both_instructions, ignores=("instruction",),
                    ignored_text={"instruction": "with and without (compared on this page)"})


def render() -> None:
    view = hints.page_top(TITLE, (
        "RAR-b asks whether retrievers can follow an instruction prefixed to the query. This page shows the gap "
        "**with − without** instruction for each system and task (blue: the instruction helps, red: it hurts) and "
        "the same gap in the benchmark's own aggregate (G for RAR-b, the mean over tasks for R2MED and CRUMB)."),
        need=NEED)
    if view is None:
        return
    hints.condition_line(view, skip=("instruction",), note=" · with and without instruction")
    hints.sources_line(view, skip=("instruction",))
    gap = data.instruction_gap(view.data, view.cond, systems=view.systems)
    if gap.per_task.empty:
        hints.explain_missing(
            "No system has results both with and without instructions under this condition.",
            "The gap needs the same system and task evaluated twice — once with the instruction prefixed to each "
            "query and once without. Ingest both runs:",
            hints.ingest_hint(view, instruction="yes") + "\n" + hints.ingest_hint(view, instruction="no"))
        return
    per_system = gap.per_system.sort_values("gap", ascending=False, kind="stable").reset_index(drop=True)
    agg = gap.aggregate  # G, or mean where the benchmark ranks by the mean
    cols = st.columns(3)
    drawing.into(cols[0]).metric("Systems with both", f"{len(per_system)}")
    best, worst = per_system.iloc[0], per_system.iloc[-1]
    if best["gap"] > 0:
        drawing.into(cols[1]).metric("Helps most", f"{best['gap']:+.4f}", help=f"The largest with − without difference in {agg}.")
        drawing.into(cols[1]).caption(notices.safe_text(best["system"]))
    else:
        drawing.into(cols[1]).metric("Helps most", "none", help=f"No system's {agg} is higher with the instruction.")
    drawing.into(cols[2]).metric("Hurts most", f"{worst['gap']:+.4f}", help=f"The smallest with − without difference in {agg}.")
    drawing.into(cols[2]).caption(notices.safe_text(worst["system"]))

    drawing.subheader("Gap per system and task")
    heat = gap.per_task.pivot(index="system", columns="task", values="gap")
    heat = heat.reindex(per_system["system"].tolist())
    span = charts.symmetric_span(gap.per_task["gap"])
    # each figure is built once per question: building them is most of a rerun's cost
    phone = screen.on_a_phone()  # a phone's 390 px: short names, no numbers in the cells, the colour bar below
    key = None if view.data.overlay else ("instructions", view.data, view.cond, view.systems, phone)

    def heat_figure():  # one figure description (plotly express took ~4x the CPU to build the same)
        names = heat.index.tolist()
        bar = dict(title=dict(text="with − without"))
        if phone:
            bar.update(orientation="h", y=-0.04, yanchor="top", thickness=12,
                       title=dict(text="with − without", side="top"))  # below the cells; the task names go on top
        return go.Figure(go.Heatmap(
            z=heat.to_numpy().tolist(), x=heat.columns.tolist(), y=screen.short_names(names) if phone else names,
            customdata=[[name] * heat.shape[1] for name in names], colorscale="RdBu", zmin=-span, zmax=span,
            texttemplate="" if phone else "%{z:.3f}", colorbar=bar,
            hovertemplate="%{customdata}<br>%{x}: %{z:+.4f}<extra></extra>"), layout=dict(
            height=max(300, 36 * len(heat) + 120) + (120 if phone else 0), margin=dict(l=10, r=10, t=20, b=10),
            yaxis=dict(autorange="reversed", type="category"),
            xaxis=dict(type="category", side="top" if phone else "bottom")))

    charts.draw_remembered(key and (*key, "heat"), heat_figure)

    drawing.subheader(f"Gap in {agg}")
    g_span = charts.symmetric_span(per_system["gap"])

    def bar_figure():
        names = per_system["system"].tolist()
        return go.Figure(go.Bar(
            x=per_system["gap"].tolist(), y=screen.short_names(names) if phone else names, orientation="h",
            customdata=names,
            marker=dict(color=per_system["gap"].tolist(), colorscale="RdBu", cmin=-g_span, cmax=g_span),
            hovertemplate=f"%{{customdata}}<br>{agg} with − {agg} without %{{x:+.4f}}<extra></extra>"), layout=dict(
            height=max(260, 28 * len(per_system) + 80), margin=dict(l=10, r=10, t=20, b=10),
            xaxis=dict(title=dict(text=f"{agg} with − {agg} without")), yaxis=dict(autorange="reversed", type="category")))

    charts.draw_remembered(key and (*key, "bars"), bar_figure)
    drawing.dataframe(per_system, hide_index=True, width="stretch", column_config={
        "system": "System", f"{agg}_a": tables.number(f"{agg} {gap.label_a}"),
        f"{agg}_b": tables.number(f"{agg} {gap.label_b}"),
        "gap": st.column_config.NumberColumn("Gap (with − without)", format="%+.4f"),
        "n_tasks": tables.number("Tasks with both", 0)})


render()
