"""ui/charts.py: the forest chart's coordinates (a value's position is its share of the axis), its cut bands,
its ticks, and figures keep their legends above the plot."""
from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from ui import charts

BANDS = [charts.Band("lo", "hi", "95% bootstrap interval", "#93c5fd", 10),
         charts.Band("mn", "mx", "tie range", "#f97316", 4)]


def _frame():
    return pd.DataFrame({"s": ["a", "b<script>", "c"], "G": [0.10, 0.07, 0.001], "lo": [0.09, 0.06, np.nan],
                         "hi": [0.11, 0.08, np.nan], "mn": [0.10, 0.06, 0.0], "mx": [0.10, 0.12, 1.0]})


def test_positions_are_shares_of_the_axis_and_a_far_band_is_cut():
    frame = _frame()
    low, high = charts.forest_domain(frame, "G", BANDS)
    assert low == 0.0 and high < 1.0, "the constant scorer's [0, 1] does not squash the others"
    html = charts.forest_html(frame, "s", "G", BANDS, "G")
    dots = [float(x) for x in re.findall(r'tb-dot" style="left:([\d.]+)%', html)]
    np.testing.assert_allclose(dots, [100 * g / high for g in frame["G"]], atol=0.01)
    assert html.count("tb-cut") - html.count(".tb-cut") == 1, "only c's tie range reaches past the end"
    assert "b&lt;script&gt;" in html and "<script>" not in html
    assert html.index('class="tb-legend"') > html.rindex('class="tb-row"'), "the legend is below the rows"


def test_the_legend_keys_only_the_bands_drawn():
    """Task-level scores only (the landing's rows): dots and no bars, so no key for a bar nobody sees."""
    def legend(frame):
        html = charts.forest_html(frame, "s", "G", BANDS, "G")
        return html[html.index('class="tb-legend"'):]

    frame = _frame()
    assert "95% bootstrap interval" in legend(frame) and "tie range" in legend(frame)
    ties_only = frame.assign(lo=np.nan, hi=np.nan)
    assert "95% bootstrap interval" not in legend(ties_only) and "tie range" in legend(ties_only)
    bare = ties_only.assign(mn=np.nan, mx=np.nan)
    assert "class=\"tb-seg" not in charts.forest_html(bare, "s", "G", BANDS, "G")
    assert "interval" not in legend(bare) and "tie range" not in legend(bare) and "tb-key-dot" in legend(bare)


@given(st.floats(-5, 5), st.floats(0.001, 10))
def test_ticks_are_round_and_inside_the_range(lo, width):
    ticks = charts.nice_ticks(lo, lo + width)
    assert 2 <= len(ticks) <= 7
    assert all(lo - 1e-9 <= t <= lo + width + 1e-9 for t in ticks)
    steps = np.diff(ticks)
    assert np.allclose(steps, steps[0])
    mantissa = steps[0] / 10 ** np.floor(np.log10(steps[0]))
    assert any(abs(mantissa - m) < 1e-6 for m in (1, 2, 5, 10))


def test_draw_puts_the_legend_above_the_plot(monkeypatch):
    import plotly.graph_objects as go

    drawn = []
    area = SimpleNamespace(plotly_chart=lambda fig, **kw: drawn.append(fig))
    monkeypatch.setattr(charts.drawing, "into", lambda where=None: area)
    fig = go.Figure(go.Scatter(x=[1], y=[1], name="a"))
    fig.update_layout(legend=dict(x=0.8, y=0.5))  # inside the plot
    charts.draw(fig)
    legend = drawn[0].layout.legend
    assert legend.orientation == "h" and legend.yanchor == "bottom" and legend.y > 1


def test_a_one_row_chart_starts_at_zero_and_ends_just_past_its_value():
    """A filter leaving one system with a task-level score only: the axis ran from its G to G + 1 (past 1, which
    G cannot reach), its dot on the left edge."""
    one = pd.DataFrame({"s": ["a"], "G": [0.2], "lo": [np.nan], "hi": [np.nan], "mn": [np.nan], "mx": [np.nan]})
    low, high = charts.forest_domain(one, "G", BANDS)
    assert low == 0.0 and 0.2 < high <= 0.21
    html = charts.forest_html(one, "s", "G", BANDS, "G")
    dot = float(re.search(r'tb-dot" style="left:([\d.]+)%', html).group(1))
    assert 95 < dot < 100
    zero = one.assign(G=[0.0])
    assert charts.forest_domain(zero, "G", BANDS) == (0.0, 1.0)


def test_labels_of_two_close_points_go_apart():
    assert charts.apart_labels([3.3e7, 1.1e8, 1.5e9, 1.54e9, 7e9]) == [
        "top center", "top center", "middle left", "top center", "top center"]
    assert charts.apart_labels([1e8, 1.05e8]) == ["bottom center", "top center"], "the leftmost's left is the edge"
    assert charts.apart_labels([]) == []


def test_the_rows_cut_at_the_edge_are_named_with_their_reach():
    """A constant scorer's tie range [0, 1] is cut where the axis stops (1.3 × the highest point); the chart's
    caption names the rows cut and how far they reach — exactly the bars that end in an arrow."""
    frame = pd.DataFrame({"system": ["a", "b", "constant"], "G": [0.10, 0.08, 0.0007],
                          "G_lo": [0.09, 0.07, 0.0], "G_hi": [0.11, 0.09, 0.001],
                          "G_min": [0.10, 0.06, 0.0], "G_max": [0.10, 0.159, 1.0]})
    bands = [charts.Band("G_lo", "G_hi", "boot", "#000", 10), charts.Band("G_min", "G_max", "ties", "#111", 4)]
    cut = charts.cut_at_edge(frame, "system", "G", bands)
    assert cut == [("b", 0.159), ("constant", 1.0)]
    html_text = charts.forest_html(frame, "system", "G", bands, "G")
    assert html_text.count("tb-seg tb-cut") == len(cut)
    assert charts.cut_at_edge(frame.iloc[:1], "system", "G", bands) == []
