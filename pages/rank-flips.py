"""Rank flips: which systems swap places when only the scoring precision changes, ranked as the Leaderboard
ranks (the benchmark's own aggregate: G for RAR-b, the mean for R2MED and CRUMB) or by one task's score."""
from __future__ import annotations

from dataclasses import replace

import plotly.graph_objects as go
import streamlit as st

from ui import charts, coverage_gaps, data, drawing, glossary, hints, rank_flips, sidebar, state, tables, words

TITLE = "Rank flips"
KIND_DASH = {"inference": "solid", "storage": "dash", "native": "dot"}
KIND_WORDS = {"inference": "run at", "storage": "stored at", "native": "as produced,"}


def render() -> None:
    view = hints.page_top(TITLE, (
        "Two conditions, same systems, same tasks: if the leaderboard order changes when only the numeric "
        "precision changes, the ranking was decided by rounding and tie-breaking rather than by the models. "
        "Systems are ranked as on the Leaderboard, by the benchmark's own aggregate over the tasks both "
        "precisions share (G for RAR-b, the mean for R2MED and CRUMB), or by one task's score. "
        "Kendall τ summarises agreement (1 = same order); overlapping tie ranges [min, max] of the ranked score "
        "mark pairs that ties alone cannot separate."), need=rank_flips.NEED)
    if view is None:
        return
    precisions, left_out = rank_flips.paired_precisions(view)
    hints.condition_line(view, skip=("precision",), note=" · the two precisions below")
    hints.sources_line(view, skip=("precision",))
    if len(precisions) < 2:
        hints.explain_missing(
            f"Only one precision ({', '.join(precisions) or 'none'}) has results in this data folder.",
            "A rank flip compares two precisions. Evaluate the same runs at another precision (e.g. re-score with "
            "`python -m evalcore simulate`) and ingest them:",
            hints.ingest_hint(view, precision="bf16"))
        return
    label = lambda p: sidebar.precision_label(view.data, view.conditions(), {  # noqa: E731
        "benchmark": view.cond.benchmark, "setting": view.cond.setting}, p)
    presets = rank_flips.presets(precisions)
    if presets:
        cols = st.columns(len(presets) + 1)
        drawing.into(cols[0]).markdown("Quick pick:")
        for col, (a, b) in zip(cols[1:], presets):
            col.button(f"{a} → {b}", on_click=_set_pair, args=(a, b), key=f"preset_{a}_{b}", width="stretch")
    left, mid, right = st.columns([1, 1, 1])
    default_a, default_b = rank_flips.default_pair(precisions)
    offered = ("Not offered: " + ", ".join(left_out) + " (no two systems have it and another precision "
               "here).") if left_out else None
    prec_a = state.select("flip_a", "Condition A: precision", precisions, default_a, where=left, format_func=label,
                          help=offered, elsewhere=left_out)
    prec_b = state.select("flip_b", "Condition B: precision", precisions, default_b, where=mid, format_func=label,
                          help=offered, elsewhere=left_out)
    agg = rank_flips.aggregate(view)  # G, or mean where the benchmark ranks by the mean
    scope = state.select("flip_task", "Ranked by", rank_flips.scopes(view, prec_a, prec_b), agg, where=right,
                         always=False, format_func=lambda t: f"{agg} over the shared tasks" if t == agg else f"{t} alone",
                         help=glossary.tip("aggregate", before=(
                             f"{agg} over every task both precisions share (this benchmark's own aggregate, as on the "
                             "Leaderboard), or one task's score alone (the tasks where at least two systems have "
                             "results under both precisions).")))
    if prec_a == prec_b:
        drawing.info("Pick two different precisions to compare.")
        return
    flips = data.rank_flips(view.data, replace(view.cond, precision=prec_a), replace(view.cond, precision=prec_b),
                            systems=view.systems, tasks=None if scope == agg else [scope])
    ranks = flips.ranks
    what = agg if scope == agg else f"{scope} score"  # one task ranks by its own score (its aggregate)
    if len(ranks) < 2:
        hints.explain_missing(
            _fewer_than_two(len(ranks), prec_a, prec_b, len(flips.tasks)),
            "Ranks need at least two systems with every shared task under both precisions. Pick another pair "
            "or task above, loosen the sidebar's filters, or add the missing runs:",
            hints.ingest_hint(view, precision=prec_b))
        return
    cols = st.columns(4)
    drawing.into(cols[0]).metric("Systems", f"{len(ranks)}",
                                 help=f"Ranked under both precisions over {words.counted(len(flips.tasks), 'task')}.")
    drawing.into(cols[1]).metric("Kendall τ-b", f"{flips.kendall_tau_b:.3f}", help="Agreement of the two orders (1 = identical).")
    drawing.into(cols[2]).metric("Flipped pairs", f"{len(flips.flipped_pairs)}")
    drawing.into(cols[3]).metric("Overlapping pairs", f"{len(flips.overlapping_pairs)}",
                                 help=glossary.tip("tie-range", before=f"Pairs whose tie ranges [{what} min, {what} max] "
                                                                "overlap under A or B: ties alone cannot order them."))
    kinds = _kinds(view, ranks["system"].tolist(), prec_b)
    _kind_note(kinds, prec_a, prec_b)
    gaps = coverage_gaps.sentence(coverage_gaps.left_out(data.coverage(view.data), view.cond, ranks["system"],
                                                         (prec_a, prec_b), view.systems))
    if gaps:  # a system never run at one of the two precisions is named, not silently left out
        drawing.caption(gaps)
    charts.draw_remembered(None if view.data.overlay else (  # built once per question
        "rank-flips", view.data, view.cond, view.systems, prec_a, prec_b, scope),
        lambda: _slope_chart(ranks, prec_a, prec_b, kinds, agg if scope == agg else scope, flips.aggregate))
    _pairs(flips, prec_a, prec_b, what)


def _fewer_than_two(found: int, prec_a: str, prec_b: str, n_tasks: int) -> str:
    """'Only one system has …' / 'No system has …' (never '(1 do …)')."""
    who = {0: "No system has", 1: "Only one system has"}[found]
    return f"{who} complete results under both {prec_a} and {prec_b} ({words.counted(n_tasks, 'shared task')})."


def _set_pair(a: str, b: str) -> None:
    state.set_wish("flip_a", a)
    state.set_wish("flip_b", b)


def _kinds(view: sidebar.View, systems: list[str], precision: str) -> dict[str, str]:
    """Each system's precision kind at ``precision`` under the shown benchmark and setting ('' = unknown)."""
    table = data.precision_kinds(view.data)
    table = table[(table["benchmark"] == view.cond.benchmark) & (table["setting"] == view.cond.setting)
                  & (table["precision"] == precision)]
    found = dict(zip(table["system"], table["precision_kind"]))
    return {s: found.get(s, "") for s in systems}


def _short(system: str) -> str:
    return system.split("/", 1)[-1]


def _kind_note(kinds: dict[str, str], prec_a: str, prec_b: str) -> None:
    """Say when B's precision means different things for different systems (model run in bf16 vs scores
    stored in bf16)."""
    groups: dict[str, list[str]] = {}
    for system, kind in kinds.items():
        groups.setdefault(kind, []).append(_short(system))
    known = {k: v for k, v in groups.items() if k}
    if len(known) > 1:
        parts = [f"{', '.join(sorted(names))} {KIND_WORDS.get(kind, kind)} {prec_b} ({kind})"
                 for kind, names in sorted(known.items())]
        drawing.caption(f"**{prec_b} means different things here:** " + "; ".join(parts)
                        + f". Lines: solid = inference, dashed = stored, dotted = native.")
    elif len(known) == 1:  # one kind: the lines' dash still needs its key
        kind = next(iter(known))
        what = {"inference": f"the model run at {prec_b}", "storage": f"the output stored at {prec_b}",
                "native": "the system's own output"}.get(kind, kind)
        line = {"inference": "solid", "storage": "dashed", "native": "dotted"}.get(kind, "solid")
        drawing.caption(f"{prec_b} is of one kind for every system here — {what} ({kind}): the lines are {line}.")


def _slope_chart(ranks, prec_a: str, prec_b: str, kinds: dict[str, str], by: str, column: str) -> go.Figure:
    """Ranks under A (left) joined to ranks under B (right). The names are the two rank axes' tick labels, so
    Plotly widens its margins to fit them (automargin) instead of clipping them at the chart's edges on a
    narrow screen; the line's dash says the precision's kind (the note above the chart), the hover gives both
    ranks, scores (``by``: what they are called; ``column``: the answer's aggregate, its columns' prefix) and
    the kind."""
    fig = go.Figure()
    colours = {"up": "#0d9488", "down": "#dc2626", "same": "#94a3b8"}
    for row, score_a, score_b in zip(ranks.itertuples(index=False), ranks[f"{column}_a"], ranks[f"{column}_b"]):
        direction = "same" if row.rank_change == 0 else ("down" if row.rank_change > 0 else "up")
        kind = kinds.get(row.system, "")
        fig.add_trace(go.Scatter(
            x=[prec_a, prec_b], y=[row.rank_a, row.rank_b], mode="lines+markers",
            line=dict(color=colours[direction], width=3 if direction != "same" else 1.5,
                      dash=KIND_DASH.get(kind, "solid")),
            marker=dict(size=8), showlegend=False, name=row.system, cliponaxis=False,
            hovertemplate=(f"{row.system}" + (f" ({kind} at {prec_b})" if kind else "")
                           + f"<br>{prec_a}: rank {row.rank_a} ({by} {score_a:.4f})"
                           f"<br>{prec_b}: rank {row.rank_b} ({by} {score_b:.4f})<extra></extra>")))
    fig.add_trace(go.Scatter(x=[prec_b] * len(ranks), y=ranks["rank_b"].tolist(), yaxis="y2", mode="markers",
                             marker=dict(opacity=0), hoverinfo="skip", showlegend=False))
    axis = dict(autorange="reversed", automargin=True, showgrid=False, zeroline=False, tickfont=dict(size=11))
    fig.update_layout(
        height=max(320, 34 * len(ranks) + 80), margin=dict(l=10, r=10, t=30, b=30),
        yaxis=dict(axis, tickmode="array", tickvals=ranks["rank_a"].tolist(),
                   ticktext=[f"{_short(s)} · {r}" for s, r in zip(ranks["system"], ranks["rank_a"])]),
        yaxis2=dict(axis, tickmode="array", tickvals=ranks["rank_b"].tolist(),
                    ticktext=[f"{r} · {_short(s)}" for s, r in zip(ranks["system"], ranks["rank_b"])],
                    overlaying="y", side="right", matches="y"),
        xaxis=dict(type="category", title=None, range=[-0.15, 1.15]))
    return fig


def _pairs(flips, prec_a: str, prec_b: str, what: str) -> None:
    drawing.subheader(f"Flipped pairs ({len(flips.flipped_pairs)})")
    if flips.flipped_pairs.empty:
        drawing.success(f"No pair of systems changes order between {prec_a} and {prec_b}.")
    else:
        drawing.markdown(f"System 1 is above system 2 under **{prec_a}** and below it under **{prec_b}**.")
        number, agg = tables.number, flips.aggregate
        drawing.dataframe(flips.flipped_pairs, hide_index=True, width="stretch", column_config={
            "system_1": "System 1", "system_2": "System 2",
            f"{agg}_a_1": number(f"{what}₁ ({prec_a})"), f"{agg}_a_2": number(f"{what}₂ ({prec_a})"),
            f"{agg}_b_1": number(f"{what}₁ ({prec_b})"), f"{agg}_b_2": number(f"{what}₂ ({prec_b})"),
            "intervals_overlap": st.column_config.CheckboxColumn(
                f"Tie ranges overlap ({prec_a} or {prec_b})", help=glossary.tip("tie-range", before=(
                    f"Their tie ranges [{what} min, {what} max] overlap under {prec_a}, under {prec_b} or under "
                    "both (the pairs below, by precision): ties alone could explain the flip."))),
        })
    drawing.subheader(f"Pairs ties cannot separate ({len(flips.overlapping_pairs)})")
    if flips.overlapping_pairs.empty:
        published = flips.ranks[[f"{flips.aggregate}_min_a", f"{flips.aggregate}_min_b"]].isna().any(axis=1).any()
        drawing.caption(f"No two systems have overlapping tie ranges [{what} min, {what} max]"
                        + (" (published scores carry no tie range)." if published else "."))
    else:
        table = flips.overlapping_pairs.assign(
            condition=flips.overlapping_pairs["condition"].map({"a": prec_a, "b": prec_b}))
        drawing.dataframe(table, hide_index=True, width="stretch", column_config={
            "condition": "Condition", "system_1": "System 1", "system_2": "System 2",
            **{c: tables.number(label) for c, label in (
                ("lo_1", f"{what} min (1)"), ("hi_1", f"{what} max (1)"), ("lo_2", f"{what} min (2)"),
                ("hi_2", f"{what} max (2)"))}})


render()
