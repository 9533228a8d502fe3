"""Charts the pages share: colours, the forest chart of intervals (plain HTML, no plotting library), the Pareto
front, and drawing a plotly figure with its legend off the plot. Nothing here computes a number beyond laying
out coordinates."""
from __future__ import annotations

import html
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ui import drawing, memo

# Categorical colours (Okabe–Ito-like, readable for colour-blind viewers); Streamlit's default is all blues.
PALETTE = ["#334155", "#e69f00", "#0d9488", "#cc79a7", "#56b4e9", "#d55e00", "#009e73", "#f0e442", "#0072b2"]


LEGEND_ABOVE = dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0)
"""Where every figure's legend goes: one horizontal row above the plot, never over the data (on a phone a
legend inside the plot covers most of it)."""


def draw(figure, where=None) -> None:
    """Show a plotly figure across the page's width, its legend above the plot (:data:`LEGEND_ABOVE`), without
    plotly's logo in its toolbar."""
    figure.update_layout(legend=LEGEND_ABOVE)
    drawing.into(where).plotly_chart(figure, width="stretch", config={"displaylogo": False})


REMEMBERED_FIGURES = memo.FIGURES()
_figures = memo.Lru("a drawn figure", "ui/charts.py",
                    "what the view names as the figure's key: the data snapshot, condition, systems and control "
                    "values (none for a session's own uploaded run); the last TIEBREAK_FIGURES (64)",
                    REMEMBERED_FIGURES)


def draw_remembered(key: Hashable | None, build: Callable[[], object], where=None) -> None:
    """:func:`draw` of the figure ``build()`` returns, built once per ``key`` in this process (the last
    :data:`REMEMBERED_FIGURES` keys) and drawn again as it is: building a plotly figure validates every property
    (a small-multiples figure: ~0.2 s of CPU), on every rerun of every session otherwise (bench/RESULTS.md
    § Capacity). ``key`` must name everything the figure shows (e.g. the data snapshot, condition, systems and
    control values); None builds it every time (a session's own uploaded run). The remembered figure is never
    changed after it is stored (Streamlit only reads it: ``to_dict`` and JSON)."""
    if key is None:
        draw(build(), where)
        return
    figure = _figures.get(key)
    if figure is None:
        figure = build()
        figure.update_layout(legend=LEGEND_ABOVE)
        _figures.put(key, figure)
    drawing.into(where).plotly_chart(figure, width="stretch", config={"displaylogo": False})


def interval_figure(frame: pd.DataFrame, label: str, point: str, intervals: Sequence[tuple[str, str, str, str]],
                    x_title: str, point_name: str = "G"):
    """A forest plot: one row per ``label``, a dot at ``point`` and a segment for each (lo, hi, name, colour).

    Segments are drawn from their two ends, so nothing is computed here beyond laying out coordinates.
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    labels = frame[label].astype(str).tolist()
    for offset, (lo, hi, name, colour) in enumerate(intervals):
        if lo not in frame or hi not in frame or frame[[lo, hi]].isna().all().all():
            continue
        xs, ys = [], []
        for y, a, b in zip(labels, frame[lo], frame[hi]):
            if pd.notna(a) and pd.notna(b):
                xs += [a, b, None]
                ys += [y, y, None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=name,
                                 line=dict(color=colour, width=6 - 2 * offset), opacity=0.55 + 0.2 * offset,
                                 hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=frame[point], y=labels, mode="markers", name=point_name,
                             marker=dict(color="#1f2937", size=8),
                             hovertemplate="%{y}: %{x:.4f}<extra></extra>"))
    fig.update_layout(height=max(260, 24 * len(labels) + 90), margin=dict(l=10, r=10, t=30, b=40),
                      xaxis_title=x_title, yaxis=dict(autorange="reversed", type="category"),
                      legend=LEGEND_ABOVE)
    return fig


@dataclass(frozen=True)
class Band:
    """One interval drawn on each row of a forest chart: the frame's ``lo`` and ``hi`` columns."""

    lo: str
    hi: str
    name: str
    colour: str
    thickness: int


def apart_labels(sizes: Sequence[float], close: float = 0.08) -> list[str]:
    """Text positions for labels above points sorted by size on a log axis: "top center", except that of two
    points closer than ``close`` decades (two 1.5B models) the first one's label goes to its left ("bottom
    center" for the leftmost, whose left is the plot's edge), so the two labels do not print on each other."""
    places = ["top center"] * len(sizes)
    for i in range(1, len(sizes)):
        if sizes[i - 1] > 0 and sizes[i] > 0 and abs(math.log10(sizes[i]) - math.log10(sizes[i - 1])) < close:
            places[i - 1] = "bottom center" if i - 1 == 0 else "middle left"
    return places


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]: a step of 1, 2 or 5 × 10^k giving at most ``count`` + 1 ticks."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks, value = [], first
    while value <= hi + 1e-12:
        ticks.append(round(value, 12))
        value += step
    return ticks


def forest_domain(frame: pd.DataFrame, point: str, bands: Sequence[Band], clip_factor: float = 1.3) -> tuple[float, float]:
    """The x range of a forest chart: from 0 (or below the lowest value) to the highest value, except that a
    band reaching past ``clip_factor`` × the highest point or first band's end (a constant scorer's tie range
    of [0, 1]) is cut there, so that one row does not squash every other."""
    columns = [point] + [c for band in bands for c in (band.lo, band.hi) if c in frame]
    values = frame[columns].to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return 0.0, 1.0
    low, high = float(values.min()), float(values.max())
    core_columns = [point] + ([bands[0].hi] if bands and bands[0].hi in frame else [])
    core = frame[core_columns].to_numpy(dtype=float)
    core = core[np.isfinite(core)]
    if core.size and high > clip_factor * core.max() > 0:
        high = clip_factor * float(core.max())
    if high <= low:  # one value (a one-row chart without bands): from 0 to just past it, not [v, v + 1]
        return (0.0, 1.03 * high) if high > 0 else (low, low + 1.0)
    low = 0.0 if low >= 0 and low < 0.5 * high else low - 0.05 * (high - low)
    high = high + 0.03 * (high - low)  # the last dot is not cut in half
    return low, high


def cut_at_edge(frame: pd.DataFrame, label: str, point: str, bands: Sequence[Band]) -> list[tuple[str, float]]:
    """(``label``, how far its bands reach) of every row with a band that :func:`forest_html` cuts at the
    chart's right end (it reaches past :func:`forest_domain`'s end and ends in an arrow): the page names them,
    so that a cut bar is not read as the interval's end."""
    high = forest_domain(frame, point, bands)[1]
    ends = [frame[band.hi].astype(float) for band in bands if band.hi in frame]
    if not ends:
        return []
    reach = pd.concat(ends, axis=1).max(axis=1)
    cut = reach > high
    return list(zip(frame.loc[cut, label].astype(str), reach[cut].astype(float)))


def forest_html(frame: pd.DataFrame, label: str, point: str, bands: Sequence[Band], x_title: str,
                notes: pd.Series | None = None, aria_label: str = "chart", groups: pd.Series | None = None) -> str:
    """A forest chart as plain HTML and CSS: one row per ``label``, each band a bar from its ``lo`` to ``hi``
    (thicker first, drawn under thinner ones), the ``point`` a dot; a band cut at the chart's end
    (:func:`forest_domain`) ends in an arrow. Hovering a row shows its values (``notes`` adds a line). The
    legend (the bands drawn, then the point) and the axis sit below the rows; names stack above their bars on a
    narrow screen. ``groups`` (one label per row, e.g. "Tier 1"): a heading line wherever the label changes and
    a stripe of the group's shade beside its rows.

    No script and no plotting library: it costs the browser nothing beyond the page itself (a plotly chart
    loads a 3.5 MB bundle and adds ~0.1 s to every rerun, bench/bench_app.py). Only coordinates are computed
    here."""
    low, high = forest_domain(frame, point, bands)
    span = high - low

    def pos(value: float) -> float:
        return min(max((value - low) / span * 100.0, 0.0), 100.0)

    rows, drawn = [], set()
    group_of = list(groups) if groups is not None else [None] * len(frame)
    shades, shade = {}, ""
    for i, (_, row) in enumerate(frame.iterrows()):
        if group_of[i] is not None and (i == 0 or group_of[i] != group_of[i - 1]):
            shade = shades.setdefault(group_of[i], GROUP_SHADES[len(shades) % len(GROUP_SHADES)])
            rows.append(f'<div class="tb-row tb-group"><span class="tb-name" style="border-right:4px solid {shade}">'
                        f'{html.escape(str(group_of[i]))}</span><span class="tb-track"></span></div>')
        name = html.escape(str(row[label]))
        parts, tip = [], [f"{row[label]}: {x_title} {row[point]:.4f}"]
        for band in bands:
            lo, hi = row.get(band.lo), row.get(band.hi)
            if pd.isna(lo) or pd.isna(hi):
                continue
            left, right = pos(lo), pos(hi)
            cut = " tb-cut" if hi > high else ""
            parts.append(f'<span class="tb-seg{cut}" style="left:{left:.2f}%;width:{max(right - left, 0.4):.2f}%;'
                         f'height:{band.thickness}px;margin-top:-{band.thickness / 2:.1f}px;'
                         f'background:{band.colour}"></span>')
            tip.append(f"{band.name}: {lo:.4f} – {hi:.4f}")
            drawn.add(band.name)
        if notes is not None and isinstance(notes.iloc[i], str) and notes.iloc[i]:
            tip.append(notes.iloc[i])
        parts.append(f'<span class="tb-dot" style="left:{pos(row[point]):.2f}%"></span>')
        if group_of[i] is not None:
            tip.append(str(group_of[i]))
        stripe = f' style="border-right:4px solid {shade}"' if group_of[i] is not None else ""
        rows.append(f'<div class="tb-row" title="{html.escape(chr(10).join(tip), quote=True)}">'
                    f'<span class="tb-name"{stripe}>{name}</span><span class="tb-track">{"".join(parts)}</span></div>')
    ticks = "".join(f'<span class="tb-tick" style="left:{pos(t):.2f}%">{t:g}</span>'
                    for t in nice_ticks(low, high))
    legend = "".join(f'<span class="tb-key"><span style="background:{b.colour};height:{b.thickness}px"></span>'
                     f"{html.escape(b.name)}</span>" for b in bands if b.name in drawn)  # no key without a bar
    legend += f'<span class="tb-key"><span class="tb-key-dot"></span>{html.escape(x_title)}</span>'
    return (f"<style>{_FOREST_CSS}</style>"
            f'<div class="tb-forest" role="img" aria-label="{html.escape(aria_label, quote=True)}">'
            + "".join(rows)
            + f'<div class="tb-row tb-axis"><span class="tb-name"></span><span class="tb-track">{ticks}</span></div>'
            + f'<div class="tb-row"><span class="tb-name"></span><span class="tb-caption">{html.escape(x_title)}'
            + "</span></div>"
            + f'<div class="tb-legend">{legend}</div></div>')


GROUP_SHADES = ("#0d9488", "#a78bfa", "#f59e0b", "#64748b")
"""Stripe colours of successive groups (tiers) in a forest chart, repeating."""

_FOREST_CSS = """
.tb-forest{font-size:0.85rem;line-height:1.25;margin:0.25rem 0 0.5rem}
.tb-row{display:flex;align-items:center;gap:0.6rem;min-height:1.45rem}
.tb-name{flex:0 0 32%;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;text-align:right}
.tb-track{position:relative;flex:1 1 auto;height:1.2rem;border-left:1px solid #cbd5e1}
.tb-seg{position:absolute;top:50%;border-radius:2px;opacity:0.8}
.tb-cut{border-top-right-radius:0;border-bottom-right-radius:0}
.tb-cut::after{content:"▸";position:absolute;right:-0.55rem;top:50%;transform:translateY(-50%);
 font-size:0.8rem;color:#9a3412}
.tb-dot{position:absolute;top:50%;width:0.6rem;height:0.6rem;margin:-0.3rem 0 0 -0.3rem;border-radius:50%;
 background:#1f2937}
.tb-axis .tb-track{border-left:none;border-top:1px solid #94a3b8;height:1.1rem}
.tb-tick{position:absolute;top:0.1rem;transform:translateX(-50%);color:#475569;font-size:0.75rem}
.tb-caption{flex:1;text-align:center;color:#475569;font-size:0.75rem}
.tb-name{padding-right:0.35rem}
.tb-group{min-height:1.2rem;font-weight:600;color:#334155;font-size:0.78rem}
.tb-group .tb-track{border-left:none}
.tb-legend{display:flex;flex-wrap:wrap;gap:0.4rem 1.2rem;margin-top:0.4rem;font-size:0.8rem;color:#334155}
.tb-key{display:inline-flex;align-items:center;gap:0.35rem}
.tb-key>span{display:inline-block;width:1.4rem;border-radius:2px}
.tb-key>span.tb-key-dot{width:0.6rem;height:0.6rem;border-radius:50%;background:#1f2937}
@media (max-width:640px){.tb-row{flex-direction:column;align-items:stretch;gap:0;padding:0.15rem 0 0.3rem;
 border-bottom:1px solid #e2e8f0}.tb-axis,.tb-row:has(.tb-caption){border-bottom:none}
 .tb-name{flex:none;text-align:left}.tb-axis .tb-name,.tb-row>.tb-name:empty{display:none}}
"""


def pareto_front(sizes: Sequence[float], scores: Sequence[float]) -> list[bool]:
    """Which points no other point beats: none is at most as large and scores at least as high (one strictly)."""
    order = sorted(range(len(sizes)), key=lambda i: (sizes[i], -scores[i]))
    on_front = [False] * len(sizes)
    best = -math.inf
    for i in order:
        if scores[i] > best:
            on_front[i] = True
            best = scores[i]
    return on_front


def symmetric_span(values: pd.Series) -> float:
    """Half-width of a diverging colour scale centred on 0 that fits every value (1.0 when all are 0/NaN)."""
    largest = pd.to_numeric(values, errors="coerce").abs().max()
    return float(largest) if pd.notna(largest) and largest > 0 else 1.0
