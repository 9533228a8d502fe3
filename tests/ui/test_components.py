"""Heat shading of dashboard tables (ui/components.py): per-column steps, few distinct CSS rules."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from ui import components as ui


@given(st.lists(st.one_of(st.floats(-1e6, 1e6), st.just(math.nan), st.just(math.inf)), min_size=1, max_size=40))
def test_heat_levels_match_a_plain_python_rescaling_per_column(values):
    columns = {"as drawn": values, "reversed and scaled": [3 * v for v in reversed(values)]}
    levels = ui.heat_levels(pd.DataFrame(columns))
    for column, column_values in enumerate(columns.values()):
        _assert_rescaled(column_values, levels[:, column])


def _assert_rescaled(values, levels):
    finite = [v for v in values if math.isfinite(v)]
    if not finite or max(finite) <= min(finite):
        assert np.isnan(levels).all()
        return
    lo, hi = min(finite), max(finite)
    for value, level in zip(values, levels):
        if not math.isfinite(value):
            assert math.isnan(level)
        else:
            expected = (value - lo) / (hi - lo) * ui.HEAT_LEVELS
            assert abs(level - expected) <= 0.5 + 1e-9 and level == round(level)
            assert 0 <= level <= ui.HEAT_LEVELS


def test_heat_styler_shades_only_the_chosen_columns_with_few_distinct_colours():
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"system": [f"s{i}" for i in range(300)], "G": rng.random(300),
                          "taskA": rng.random(300), "taskB": rng.normal(size=300)})
    frame.loc[5, "taskA"] = np.nan
    styler = ui.heat_styler(frame, ["taskA", "taskB", "not-a-column"])
    styler._compute()
    columns = {frame.columns.get_loc(c) for c in ("taskA", "taskB")}
    styled = {(row, col): dict(props) for (row, col), props in styler.ctx.items()}
    assert {col for _, col in styled} == columns, "only task columns are shaded"
    colours = {props["background-color"] for props in styled.values()}
    assert len(colours) <= ui.HEAT_LEVELS + 1
    for name in ("taskA", "taskB"):
        col = frame.columns.get_loc(name)
        assert styled[(int(frame[name].idxmin()), col)]["background-color"] == "rgb(255,255,255)"
        assert "background-color: " + styled[(int(frame[name].idxmax()), col)]["background-color"] == ui.heat_colour(ui.HEAT_LEVELS)
    assert (5, frame.columns.get_loc("taskA")) not in styled, "a missing value stays unshaded"


def test_heat_colour_runs_from_white_to_teal():
    assert ui.heat_colour(0) == "background-color: rgb(255,255,255)"
    assert ui.heat_colour(ui.HEAT_LEVELS) == "background-color: rgb(55,165,157)"
    assert ui.heat_colour(math.nan) == ""
