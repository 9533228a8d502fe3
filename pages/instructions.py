"""Instructions: what a task instruction in the query adds (or costs) per system and task."""
from __future__ import annotations

import plotly.express as px
import streamlit as st

from ui import charts, data, hints, tables


def render() -> None:
    view = hints.page_top("Instructions", (
        "RAR-b asks whether retrievers can follow an instruction prefixed to the query. This page shows the gap "
        "**with − without** instruction for each system and task (blue: the instruction helps, red: it hurts) and "
        "the same gap in G."))
    if view is None:
        return
    hints.condition_line(view, skip=("instruction",), note=" (the instruction control does not apply here)")
    gap = data.instruction_gap(view.data, view.cond, systems=view.systems)
    if gap.per_task.empty:
        hints.explain_missing(
            "No system has results both with and without instructions under this condition.",
            "The gap needs the same system and task evaluated twice — once with the instruction prefixed to each "
            "query and once without. Ingest both runs:",
            hints.ingest_hint(view, instruction="yes") + "\n" + hints.ingest_hint(view, instruction="no"))
        return
    per_system = gap.per_system.sort_values("gap", ascending=False, kind="stable").reset_index(drop=True)
    cols = st.columns(3)
    cols[0].metric("Systems with both", f"{len(per_system)}")
    best = per_system.iloc[0]
    cols[1].metric("Largest gap in G", f"{best['gap']:+.4f}", help="The largest with − without difference in G.")
    cols[2].metric("… for", str(best["system"]))

    st.subheader("Gap per system and task")
    heat = gap.per_task.pivot(index="system", columns="task", values="gap")
    heat = heat.reindex(per_system["system"].tolist())
    span = charts.symmetric_span(gap.per_task["gap"])
    fig = px.imshow(heat, color_continuous_scale="RdBu", zmin=-span, zmax=span, aspect="auto",
                    labels=dict(color="with − without"), text_auto=".3f")
    fig.update_layout(height=max(300, 36 * len(heat) + 120), margin=dict(l=10, r=10, t=20, b=10),
                      xaxis_title=None, yaxis_title=None)
    charts.draw(fig)

    st.subheader("Gap in G")
    bars = px.bar(per_system, x="gap", y="system", orientation="h", color="gap", color_continuous_scale="RdBu",
                  range_color=(-span, span), labels=dict(gap="G with − G without", system=""))
    bars.update_layout(height=max(260, 28 * len(per_system) + 80), margin=dict(l=10, r=10, t=20, b=10),
                       yaxis=dict(autorange="reversed"), coloraxis_showscale=False)
    charts.draw(bars)
    st.dataframe(per_system, hide_index=True, width="stretch", column_config={
        "system": "System", "G_a": tables.number(f"G {gap.label_a}"), "G_b": tables.number(f"G {gap.label_b}"),
        "gap": st.column_config.NumberColumn("Gap (with − without)", format="%+.4f"),
        "n_tasks": tables.number("Tasks with both", 0)})


render()
