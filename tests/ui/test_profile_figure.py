"""Ties & precision's precision-profile figure, written out as one figure description (a fifth of the
CPU of building it with make_subplots, per system, on every new question), is the figure the make_subplots
construction gave: same traces, same values, same axes and layout."""
import json

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from page_code import page_function


def _page_function():
    return page_function("ties-and-precision.py", "_profile_figure")


def _reference(rows, system, precisions, metric):
    """The figure as built before (make_subplots with a secondary y axis, call by call)."""
    own = [p for p in precisions if p in set(rows["precision"])]
    rows = rows.set_index("precision").reindex(own).reset_index()
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Bar(x=rows["precision"], y=rows["tied_share"], name="queries tied at the cutoff",
                         marker_color="#e2e8f0",
                         hovertemplate="%{x}: %{y:.1%} of queries tied at the cutoff<extra></extra>"),
                  secondary_y=False)
    fig.add_trace(go.Scatter(
        x=rows["precision"], y=rows["expected"], mode="lines+markers", name=f"expected {metric} with [min, max]",
        line=dict(color="#334155", width=1.5), marker=dict(size=7, color="#334155"),
        error_y=dict(type="data", symmetric=False, array=rows["max"] - rows["expected"],
                     arrayminus=rows["expected"] - rows["min"], color="#f97316", thickness=3, width=0),
        customdata=rows[["min", "max", "precision_kind"]].to_numpy(),
        hovertemplate="%{x} (%{customdata[2]}): expected %{y:.4f}, [min, max] [%{customdata[0]:.4f}, "
                      "%{customdata[1]:.4f}]<extra></extra>"), secondary_y=True)
    fig.add_trace(go.Scatter(x=rows["precision"], y=rows["oblivious"], mode="markers", name="oblivious",
                             marker=dict(symbol="x", size=8, color="#dc2626"),
                             hovertemplate="%{x}: oblivious %{y:.4f}<extra></extra>"), secondary_y=True)
    fig.update_yaxes(range=[0, 1], tickformat=".0%", showgrid=False, side="right", secondary_y=False)
    fig.update_yaxes(side="left", rangemode="nonnegative", secondary_y=True)  # scores: no axis below 0
    fig.update_yaxes(tickmode="auto", nticks=6, secondary_y=True)  # round ticks of its own (tests/e2e/test_landing)
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=own)
    fig.update_layout(title=dict(text=system.split("/", 1)[-1], font_size=13, x=0, xanchor="left"),
                      height=260, margin=dict(l=10, r=10, t=36, b=10), bargap=0.3, showlegend=False,
                      meta="precision-profile")
    return fig


def test_the_written_out_figure_is_the_make_subplots_figure():
    rows = pd.DataFrame({"system": "org/model", "precision": ["bf16", "fp32", "int8", "bf16+hps"],
                         "tied_share": [0.3, 0.1, 0.5, 0.1], "expected": [0.4, 0.5, 0.3, 0.5],
                         "min": [0.3, 0.45, 0.2, 0.45], "max": [0.5, 0.55, 0.4, 0.55],
                         "oblivious": [0.41, 0.5, 0.33, 0.5],
                         "precision_kind": ["inference", "native", "storage", "inference"]})
    args = (rows, "org/model", ["fp32", "bf16", "bf16+hps", "int8", "fp16"], "ndcg@10")
    ours, reference = (json.loads(pio.to_json(f(*args))) for f in (_page_function(), _reference))
    assert ours == reference
    assert ours["layout"]["yaxis2"]["overlaying"] == "y" and ours["data"][1]["yaxis"] == "y2"
    assert ours["layout"]["yaxis2"]["rangemode"] == "nonnegative", "a constant scorer's panel started at -0.087"
