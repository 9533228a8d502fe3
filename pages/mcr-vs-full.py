"""MCR vs full: does a system that picks the right answer among a few candidates also find it in a corpus?"""
from __future__ import annotations

from dataclasses import replace

import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from ui import charts, data, drawing, glossary, hints, notices, sidebar, state, tables

TITLE = "MCR vs full"
NEED = sidebar.Need("full and multiple-choice (MCR) results for the same system", sidebar.rows_with_both_settings)


def render() -> None:
    view = hints.page_top(TITLE, (
        f"RAR-b evaluates each task two ways: by retrieval — {glossary.link('full')} over the benchmark's "
        f"whole corpus or, in our own runs, {glossary.link('full-pooled')} over every candidate answer of the "
        "task pooled — and by "
        f"{glossary.link('mcr', 'multiple-choice retrieval (MCR)')} among each question's own answer options. "
        "Each dot is one system on one task: its retrieval score in the sidebar's setting and metric (x) against "
        "its MCR score in the MCR metric chosen below (y) — usually two different metrics."), need=NEED)
    if view is None:
        return
    conditions = view.conditions()
    mcr_metrics = sidebar.options_for(conditions, "metric", benchmark=view.cond.benchmark, setting="mcr")
    # the full side is the sidebar's setting: the need offers only full settings with MCR twins
    full_setting = view.cond.setting if view.cond.setting != "mcr" else "full-pooled"
    if not mcr_metrics or view.need_unmet:
        missing = "multiple-choice (MCR)" if not mcr_metrics else "full and MCR results for the same system"
        hints.explain_missing(
            f"This data folder has no {missing}.",
            "This view pairs each system's full-retrieval and MCR scores on the same task. Ingest the missing "
            "setting (for MCR, a run over each question's candidates; accuracy is p@1):",
            hints.ingest_hint(view, setting="mcr"))
        return
    full_metric = view.cond.metric
    left, right = st.columns(2)
    mcr_metric = state.select("mcr_metric", "MCR metric", mcr_metrics, "p@1" if "p@1" in mcr_metrics else None,
                              where=left, help="p@1 is RAR-b's MCR accuracy.")
    gap = data.mcr_vs_full(view.data, replace(view.cond, metric=full_metric), systems=view.systems,
                           mcr_metric=mcr_metric, full_setting=full_setting)
    tasks = sorted(gap.per_task["task"].unique().tolist())  # only tasks where some system has both settings
    task = state.select("mcr_task", "Task", ["all"] + tasks, "all", where=right, always=False,
                        format_func=lambda t: "all tasks" if t == "all" else t,
                        help="The tasks on which some system has both full and MCR results here.")
    hints.condition_line(view, skip=("setting", "metric"), note=(
        f" · {sidebar.SETTING_LABELS.get(full_setting, full_setting)}: {full_metric} · MCR: {mcr_metric}"))
    hints.sources_line(view)
    per_task = gap.per_task if task == "all" else gap.per_task[gap.per_task["task"] == task]
    if per_task.empty:
        hints.explain_missing(
            "No system has both full and MCR results under this condition.",
            _advice(view) + " Or ingest the missing setting:",
            hints.ingest_hint(view, setting="mcr"))
        return
    cols = st.columns(3)
    drawing.into(cols[0]).metric("Systems with both", f"{len(gap.per_system)}")
    drawing.into(cols[1]).metric("System × task points", f"{len(per_task)}")
    drawing.into(cols[2]).metric("Tasks", f"{per_task['task'].nunique()}")
    label_a = f"{sidebar.SETTING_LABELS.get(full_setting, full_setting)}: {full_metric}"  # the label may hold ( )
    label_b = f"MCR: {mcr_metric}"
    diagonal = _axes_caption(full_setting, full_metric, mcr_metric)

    def scatter():
        # a symbol as well as a colour per task: more tasks than clearly distinct colours
        fig = px.scatter(per_task, x="a", y="b", color="task", symbol="task", hover_name="system",
                         color_discrete_sequence=charts.PALETTE, labels=dict(a=label_a, b=label_b),
                         hover_data={"gap": ":+.4f"})
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name=diagonal,
                                 line=dict(color="#94a3b8", dash="dash")))
        fig.update_layout(height=520, margin=dict(l=10, r=10, t=20, b=10),
                          xaxis=dict(range=[0, 1], constrain="domain"), yaxis=dict(range=[0, 1], scaleanchor="x"))
        return fig

    # built once per question: building it is most of a rerun's cost
    charts.draw_remembered(None if view.data.overlay else (
        "mcr-vs-full", view.data, view.cond, view.systems, mcr_metric, full_setting, task), scatter)

    drawing.subheader("In G (over the tasks both settings share)")
    _zero_factors(gap, label_a, label_b)
    drawing.dataframe(gap.per_system.sort_values("G_b", ascending=False, kind="stable"), hide_index=True,
                      width="stretch", column_config={
                     "system": "System", "G_a": tables.number(f"G {label_a}"),
                     "G_b": tables.number(f"G {label_b}"),
                     "gap": st.column_config.NumberColumn("MCR − full", format="%+.4f", help=(
                         f"G {label_b} − G {label_a}" + ("" if mcr_metric == full_metric else
                                                         ": two different metrics — a guide, not parity."))),
                     "n_tasks": tables.number("Tasks", 0)})


def _axes_caption(full_setting: str, full_metric: str, mcr_metric: str) -> str:
    """Say what each axis is — setting and metric — and what the dashed y = x line is (the axes plot MCR
    p@1 against full nDCG@10, two different metrics, so the line is a reference, not parity); returns the
    line's legend name."""
    setting = (glossary.link(full_setting, sidebar.SETTING_LABELS.get(full_setting)) if full_setting in glossary.TERMS
               else sidebar.SETTING_LABELS.get(full_setting, full_setting))
    accuracy = " (accuracy)" if mcr_metric == "p@1" else ""
    if mcr_metric == full_metric:
        line, name = "the same metric in both settings: a dot above it scores higher in MCR", "y = x (same metric)"
    else:
        line = f"{mcr_metric} and {full_metric} are different metrics, so it is a guide, not parity"
        name = "y = x (different metrics: a guide, not parity)"
    drawing.caption(f"**x**: {setting}, {full_metric} · **y**: {glossary.link('mcr', 'MCR')}, {mcr_metric}{accuracy}. "
                    f"The dashed line is y = x — {line}.")
    return name


def _advice(view: sidebar.View) -> str:
    """What to try when a task has no pairs — never the choice already made (no 'as
    published' while 'as published' is selected)."""
    tips = []
    if view.cond.instruction is not None:
        tips.append("'as published' instructions")
    tips.append("another precision, or loosen the system filters")
    return "Try " + " or ".join(tips) + " in the sidebar."


def _zero_factors(gap, label_a: str, label_b: str) -> None:
    """G is a geometric mean: one task at 0 makes it 0 whatever the other tasks score. Name those tasks."""
    for side, label in (("a", label_a), ("b", label_b)):
        zeros = gap.per_task[gap.per_task[side] == 0]
        if zeros.empty:
            continue
        listed = "; ".join(f"**{notices.safe_text(system)}** ({', '.join(sorted(rows['task']))})"
                           for system, rows in zeros.groupby("system"))
        drawing.warning(f"G ({notices.safe_text(label)}) is **0** where a task scores 0 — a zero factor of the geometric "
                        f"mean, whatever the other tasks score: {listed}.", icon=":material/exposure_zero:")


render()
