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


def _frame(n_rows: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"system": [f"s{i}" for i in range(n_rows)], "G": rng.random(n_rows),
                          "taskA": rng.random(n_rows), "taskB": rng.normal(size=n_rows), "flat": 0.5})
    frame.loc[5, "taskA"] = np.nan
    return frame


def _pandas_shading(frame: pd.DataFrame, columns: list[str]) -> dict[tuple[int, int], str]:
    """(row, column) → CSS of every shaded cell, from pandas' own Styler.apply of the same shade table."""
    def shade(block):
        return pd.DataFrame([[ui.heat_colour(level) for level in row] for row in ui.heat_levels(block)],
                            index=block.index, columns=block.columns)

    styler = frame.style.apply(shade, subset=columns, axis=None)
    styler._compute()
    return {cell: "; ".join(f"{k}: {v}" for k, v in props) for cell, props in styler.ctx.items() if props}


def test_heat_styler_shades_only_the_chosen_columns_with_few_distinct_colours():
    frame = _frame()
    styler = ui.heat_styler(frame, ["taskA", "taskB", "flat", "not-a-column"])
    rules = styler._translate(False, False)["cellstyle"]
    styled = {}
    for rule in rules:
        css = "; ".join(f"{k}: {v}" for k, v in rule["props"])
        for selector in rule["selectors"]:
            row, col = selector.removeprefix("row").split("_col")
            assert (int(row), int(col)) not in styled, "one rule per cell"
            styled[(int(row), int(col))] = css
    assert styled == _pandas_shading(frame, ["taskA", "taskB", "flat"])
    assert {col for _, col in styled} == {frame.columns.get_loc(c) for c in ("taskA", "taskB")}, \
        "only task columns are shaded (a constant column has no scale)"
    assert len(rules) <= ui.HEAT_LEVELS + 1
    for name in ("taskA", "taskB"):
        col = frame.columns.get_loc(name)
        assert styled[(int(frame[name].idxmin()), col)] == "background-color: rgb(255,255,255)"
        assert styled[(int(frame[name].idxmax()), col)] == ui.heat_colour(ui.HEAT_LEVELS)
    assert (5, frame.columns.get_loc("taskA")) not in styled, "a missing value stays unshaded"


def _css_rules(css: str) -> set[tuple[str, str]]:
    rules = set()
    for line in filter(None, css.splitlines()):
        selectors, declaration = line.split(" { ")
        for selector in selectors.split(", "):  # "#T_<styler uuid>_row3_col2": the uuid is random
            rules.add((selector.split("_", 2)[2], declaration.rstrip(" }")))
    return rules


def test_streamlit_sends_the_same_cell_css_as_for_a_pandas_styler():
    # what the browser receives: Streamlit's marshalling of our Styler vs of pandas' own Styler.apply
    from streamlit.elements.lib.pandas_styler_utils import marshall_styler
    from streamlit.proto.ArrowData_pb2 import ArrowData

    frame = _frame(60)

    def shade(block):
        return pd.DataFrame([[ui.heat_colour(level) for level in row] for row in ui.heat_levels(block)],
                            index=block.index, columns=block.columns)

    ours, theirs = ArrowData(), ArrowData()
    marshall_styler(ours, ui.heat_styler(frame, ["taskA", "taskB"]), "uuid")
    marshall_styler(theirs, frame.style.apply(shade, subset=["taskA", "taskB"], axis=None), "uuid")
    assert _css_rules(ours.styler.styles) == _css_rules(theirs.styler.styles)
    assert len(_css_rules(ours.styler.styles)) == 2 * len(frame) - 1  # every finite task cell
    assert ours.styler.display_values  # a table of cell text is still sent (the grid shows column_config's)


def test_heat_colour_runs_from_white_to_teal():
    assert ui.heat_colour(0) == "background-color: rgb(255,255,255)"
    assert ui.heat_colour(ui.HEAT_LEVELS) == "background-color: rgb(55,165,157)"
    assert ui.heat_colour(math.nan) == ""
