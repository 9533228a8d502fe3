"""Rank flips' slope chart keeps every name readable on a phone (at 390 px the names, drawn as text
beside the markers, were clipped at the chart's edges). The names are now the two rank axes' tick labels, which
Plotly fits by widening its margins (automargin), and each side lists every system at its own rank."""
import pandas as pd

from page_code import page_function


def _slope_chart():
    return page_function("rank-flips.py", "_slope_chart")


RANKS = pd.DataFrame({
    "system": ["org/all-MiniLM-L6-v2", "wordllama-l2-supercat", "uniform-random", "constant"],
    "rank_a": [1, 2, 3, 4], "rank_b": [1, 2, 4, 3], "rank_change": [0, 0, 1, -1],
    "G_a": [0.5, 0.4, 0.2, 0.1], "G_b": [0.5, 0.4, 0.1, 0.2],
})
KINDS = {"org/all-MiniLM-L6-v2": "inference", "uniform-random": "storage"}


def test_names_are_rank_axis_labels_fitted_by_automargin():
    fig = _slope_chart()(RANKS, "fp32", "bf16", KINDS, "G", "G")
    left, right = fig.layout.yaxis, fig.layout.yaxis2
    assert left.automargin and right.automargin
    assert dict(zip(left.tickvals, left.ticktext)) == {
        1: "all-MiniLM-L6-v2 · 1", 2: "wordllama-l2-supercat · 2", 3: "uniform-random · 3", 4: "constant · 4"}
    assert dict(zip(right.tickvals, right.ticktext)) == {
        1: "1 · all-MiniLM-L6-v2", 2: "2 · wordllama-l2-supercat", 4: "4 · uniform-random", 3: "3 · constant"}
    assert right.overlaying == "y" and right.side == "right" and right.matches == "y"
    # no name is drawn as text inside the plot, where the chart's edges would cut it
    assert not any("text" in (trace.mode or "") for trace in fig.data)


def test_each_line_joins_a_systems_two_ranks_and_its_hover_names_the_kind():
    fig = _slope_chart()(RANKS, "fp32", "bf16", KINDS, "G", "G")
    lines = {trace.name: trace for trace in fig.data if trace.name}
    assert set(lines) == set(RANKS["system"])
    assert list(lines["uniform-random"].y) == [3, 4] and list(lines["constant"].y) == [4, 3]
    assert "(storage at bf16)" in lines["uniform-random"].hovertemplate
    assert lines["uniform-random"].line.dash != lines["org/all-MiniLM-L6-v2"].line.dash
