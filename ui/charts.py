"""Charts the pages share: colours, the forest plot of intervals, the Pareto front, and drawing a figure.
Figures are built with plotly; nothing here computes a number beyond laying out coordinates."""
from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import streamlit as st

# Categorical colours (Okabe–Ito-like, readable for colour-blind viewers); Streamlit's default is all blues.
PALETTE = ["#334155", "#e69f00", "#0d9488", "#cc79a7", "#56b4e9", "#d55e00", "#009e73", "#f0e442", "#0072b2"]


def draw(figure, where=None) -> None:
    """Show a plotly figure across the page's width, without plotly's logo in its toolbar."""
    (where or st).plotly_chart(figure, width="stretch", config={"displaylogo": False})


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
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    return fig


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
