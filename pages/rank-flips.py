"""Rank flips: which systems swap places when only the scoring precision changes."""
from __future__ import annotations

from dataclasses import replace

import plotly.graph_objects as go
import streamlit as st

from ui import charts, data, hints, sidebar, state, tables

PRESETS = (("fp32", "bf16"), ("bf16", "bf16+hps"), ("fp32", "bf16+hps"))


def render() -> None:
    view = hints.page_top("Rank flips", (
        "Two conditions, same systems, same tasks: if the leaderboard order changes when only the numeric "
        "precision changes, the ranking was decided by rounding and tie-breaking rather than by the models. "
        "Kendall τ summarises agreement (1 = same order); overlapping [G_min, G_max] intervals mark pairs that "
        "ties alone cannot separate."))
    if view is None:
        return
    precisions = sidebar.options_for(view.conditions(), "precision", benchmark=view.cond.benchmark,
                                     setting=view.cond.setting, metric=view.cond.metric)
    hints.condition_line(view, skip=("precision",), note=" (the precision control does not apply here)")
    if len(precisions) < 2:
        hints.explain_missing(
            f"Only one precision ({', '.join(precisions) or 'none'}) has results for this benchmark and metric.",
            "A rank flip compares two precisions. Evaluate the same runs at another precision (e.g. re-score with "
            "`python -m evalcore simulate`) and ingest them:",
            hints.ingest_hint(view, precision="bf16"))
        return
    presets = [p for p in PRESETS if p[0] in precisions and p[1] in precisions]
    if presets:
        cols = st.columns(len(presets) + 1)
        cols[0].markdown("Quick pick:")
        for col, (a, b) in zip(cols[1:], presets):
            col.button(f"{a} → {b}", on_click=_set_pair, args=(a, b), key=f"preset_{a}_{b}", width="stretch")
    left, right = st.columns(2)
    default_a, default_b = presets[0] if presets else (precisions[0], precisions[1])
    prec_a = state.select("flip_a", "Condition A: precision", precisions, default_a, where=left)
    prec_b = state.select("flip_b", "Condition B: precision", precisions, default_b, where=right)
    if prec_a == prec_b:
        st.info("Pick two different precisions to compare.")
        return
    flips = data.rank_flips(view.data, replace(view.cond, precision=prec_a), replace(view.cond, precision=prec_b),
                            systems=view.systems)
    ranks = flips.ranks
    if len(ranks) < 2:
        counts = sidebar.options_for(view.conditions(), "n_systems", benchmark=view.cond.benchmark,
                                     setting=view.cond.setting, metric=view.cond.metric, precision=prec_b)
        hints.explain_missing(
            f"Fewer than two systems have complete results under both {prec_a} and {prec_b} "
            f"({len(ranks)} do, over {len(flips.tasks)} shared task(s)).",
            "Ranks need at least two systems with every shared task under both conditions"
            + (f"; at most {max(counts)} system(s) have any {prec_b} results here" if counts else "")
            + ". Add the missing runs:",
            hints.ingest_hint(view, precision=prec_b))
        return
    cols = st.columns(4)
    cols[0].metric("Systems", f"{len(ranks)}")
    cols[1].metric("Kendall τ-b", f"{flips.kendall_tau_b:.3f}", help="Agreement of the two G orders (1 = identical).")
    cols[2].metric("Flipped pairs", f"{len(flips.flipped_pairs)}")
    cols[3].metric("Overlapping pairs", f"{len(flips.overlapping_pairs)}",
                   help="Pairs whose tie-aware [G_min, G_max] intervals overlap under A or B.")
    charts.draw(_slope_chart(ranks, prec_a, prec_b))
    _pairs(flips, prec_a, prec_b)


def _set_pair(a: str, b: str) -> None:
    st.session_state["flip_a"] = a
    st.session_state["flip_b"] = b


def _slope_chart(ranks, prec_a: str, prec_b: str) -> go.Figure:
    fig = go.Figure()
    colours = {"up": "#0d9488", "down": "#dc2626", "same": "#94a3b8"}
    for row in ranks.itertuples(index=False):
        direction = "same" if row.rank_change == 0 else ("down" if row.rank_change > 0 else "up")
        fig.add_trace(go.Scatter(
            x=[prec_a, prec_b], y=[row.rank_a, row.rank_b], mode="lines+markers+text",
            text=[row.system, row.system], textposition=["middle left", "middle right"],
            line=dict(color=colours[direction], width=3 if direction != "same" else 1.5),
            marker=dict(size=8), showlegend=False, name=row.system, cliponaxis=False,
            hovertemplate=(f"{row.system}<br>{prec_a}: rank {row.rank_a} (G {row.G_a:.4f})<br>"
                           f"{prec_b}: rank {row.rank_b} (G {row.G_b:.4f})<extra></extra>")))
    fig.update_layout(height=max(320, 34 * len(ranks) + 80), margin=dict(l=40, r=40, t=30, b=30),
                      yaxis=dict(autorange="reversed", title="rank by G", dtick=1),
                      xaxis=dict(type="category", title=None, range=[-0.8, 1.8]))
    return fig


def _pairs(flips, prec_a: str, prec_b: str) -> None:
    st.subheader(f"Flipped pairs ({len(flips.flipped_pairs)})")
    if flips.flipped_pairs.empty:
        st.success(f"No pair of systems changes order between {prec_a} and {prec_b}.")
    else:
        st.markdown(f"System 1 is above system 2 under **{prec_a}** and below it under **{prec_b}**.")
        number = tables.number
        st.dataframe(flips.flipped_pairs, hide_index=True, width="stretch", column_config={
            "system_1": "System 1", "system_2": "System 2",
            "G_a_1": number(f"G₁ ({prec_a})"), "G_a_2": number(f"G₂ ({prec_a})"),
            "G_b_1": number(f"G₁ ({prec_b})"), "G_b_2": number(f"G₂ ({prec_b})"),
            "intervals_overlap": st.column_config.CheckboxColumn(
                "Intervals overlap", help="Their [G_min, G_max] intervals overlap: ties alone could explain the flip."),
        })
    st.subheader(f"Pairs ties cannot separate ({len(flips.overlapping_pairs)})")
    if flips.overlapping_pairs.empty:
        st.caption("No two systems have overlapping [G_min, G_max] intervals (published scores carry no interval).")
    else:
        table = flips.overlapping_pairs.assign(
            condition=flips.overlapping_pairs["condition"].map({"a": prec_a, "b": prec_b}))
        st.dataframe(table, hide_index=True, width="stretch", column_config={
            "condition": "Condition", "system_1": "System 1", "system_2": "System 2",
            **{c: tables.number(label) for c, label in (
                ("lo_1", "G min (1)"), ("hi_1", "G max (1)"), ("lo_2", "G min (2)"), ("hi_2", "G max (2)"))}})


render()
