"""MCR vs full: does a system that picks the right answer among a few candidates also find it in a corpus?"""
from __future__ import annotations

from dataclasses import replace

import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from ui import charts, data, hints, sidebar, state, tables


def render() -> None:
    view = hints.page_top("MCR vs full", (
        "RAR-b evaluates each task two ways: **full retrieval** over the whole corpus and **multiple-choice "
        "retrieval (MCR)** among a handful of candidates. Each dot is one system on one task; dots above the "
        "diagonal do better at choosing than at finding."))
    if view is None:
        return
    conditions = view.conditions()
    mcr_metrics = sidebar.options_for(conditions, "metric", benchmark=view.cond.benchmark, setting="mcr")
    settings = sidebar.options_for(conditions, "setting", benchmark=view.cond.benchmark)
    # the full side: the sidebar's full setting, else our pooled-candidate runs (which have MCR twins)
    full_setting = view.cond.setting if view.cond.setting != "mcr" else (
        "full-pooled" if "full-pooled" in settings else "full")
    full_metrics = sidebar.options_for(conditions, "metric", benchmark=view.cond.benchmark, setting=full_setting)
    if not mcr_metrics or not full_metrics:
        missing = "multiple-choice (MCR)" if not mcr_metrics else "full-retrieval"
        hints.explain_missing(
            f"{view.cond.benchmark} has no {missing} results.",
            "This view pairs each system's full-retrieval and MCR scores on the same task. Ingest the missing "
            "setting (for MCR, a run over each question's candidates; accuracy is p@1):",
            hints.ingest_hint(view, setting="mcr" if not mcr_metrics else "full"))
        return
    full_metric = view.cond.metric if view.cond.metric in full_metrics else full_metrics[0]
    left, right = st.columns(2)
    mcr_metric = state.select("mcr_metric", "MCR metric", mcr_metrics, "p@1" if "p@1" in mcr_metrics else None,
                              where=left, help="p@1 is RAR-b's MCR accuracy.")
    task = state.select("mcr_task", "Task", ["all"] + view.tasks, "all", where=right, always=False,
                        format_func=lambda t: "all tasks" if t == "all" else t)
    hints.condition_line(view, skip=("setting", "metric"), note=(
        f" · {sidebar.SETTING_LABELS.get(full_setting, full_setting)}: {full_metric} · MCR: {mcr_metric}"))
    gap = data.mcr_vs_full(view.data, replace(view.cond, metric=full_metric), systems=view.systems,
                           mcr_metric=mcr_metric, full_setting=full_setting)
    per_task = gap.per_task if task == "all" else gap.per_task[gap.per_task["task"] == task]
    if per_task.empty:
        hints.explain_missing(
            "No system has both full and MCR results under this condition" + ("" if task == "all" else f" on {task}") + ".",
            "Try 'as published' instructions or another precision, or ingest the missing setting:",
            hints.ingest_hint(view, setting="mcr"))
        return
    cols = st.columns(3)
    cols[0].metric("Systems with both", f"{len(gap.per_system)}")
    cols[1].metric("System × task points", f"{len(per_task)}")
    cols[2].metric("Tasks", f"{per_task['task'].nunique()}")
    fig = px.scatter(per_task, x="a", y="b", color="task", hover_name="system", color_discrete_sequence=charts.PALETTE,
                     labels=dict(a=gap.label_a, b=gap.label_b), hover_data={"gap": ":+.4f"})
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="MCR = full",
                             line=dict(color="#94a3b8", dash="dash")))
    fig.update_layout(height=520, margin=dict(l=10, r=10, t=20, b=10),
                      xaxis=dict(range=[0, 1], constrain="domain"), yaxis=dict(range=[0, 1], scaleanchor="x"))
    charts.draw(fig)

    st.subheader("In G (over the tasks both settings share)")
    st.dataframe(gap.per_system.sort_values("G_b", ascending=False, kind="stable"), hide_index=True,
                 width="stretch", column_config={
                     "system": "System", "G_a": tables.number(f"G {gap.label_a}"),
                     "G_b": tables.number(f"G {gap.label_b}"),
                     "gap": st.column_config.NumberColumn("MCR − full", format="%+.4f"),
                     "n_tasks": tables.number("Tasks", 0)})


render()
