"""Heat shading of dashboard tables (ui/tables.py): per-column steps, few distinct CSS rules, and what
Streamlit sends to the browser for them."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from ui import tables


@given(st.lists(st.one_of(st.floats(-1e6, 1e6), st.just(math.nan), st.just(math.inf)), min_size=1, max_size=40))
def test_heat_levels_match_a_plain_python_rescaling_per_column(values):
    columns = {"as drawn": values, "reversed and scaled": [3 * v for v in reversed(values)]}
    levels = tables.heat_levels(pd.DataFrame(columns))
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
            expected = (value - lo) / (hi - lo) * tables.HEAT_LEVELS
            assert abs(level - expected) <= 0.5 + 1e-9 and level == round(level)
            assert 0 <= level <= tables.HEAT_LEVELS


def _frame(n_rows: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"system": [f"s{i}" for i in range(n_rows)], "G": rng.random(n_rows),
                          "taskA": rng.random(n_rows), "taskB": rng.normal(size=n_rows), "flat": 0.5})
    frame.loc[5, "taskA"] = np.nan
    return frame


def _sent_css(styled) -> dict[tuple[int, int], str]:
    """(row, column) → CSS of every shaded cell, as Streamlit marshals the Styler for the browser."""
    from streamlit.elements.lib.pandas_styler_utils import marshall_styler
    from streamlit.proto.ArrowData_pb2 import ArrowData

    proto = ArrowData()
    marshall_styler(proto, styled, "uuid")
    cells = {}
    for line in filter(None, proto.styler.styles.splitlines()):
        selectors, declaration = line.split(" { ")
        for selector in selectors.split(", "):  # "#T_uuid_row3_col2"
            row, col = selector.rsplit("_row", 1)[1].split("_col")
            assert (int(row), int(col)) not in cells, "one rule per cell"
            cells[(int(row), int(col))] = declaration.rstrip(" }")
    return cells


def test_heat_shading_reaches_the_browser_per_column_in_few_colours():
    frame = _frame()
    cells = _sent_css(tables.heat_styled(frame, ["taskA", "taskB", "flat", "not-a-column"]))
    assert {col for _, col in cells} == {frame.columns.get_loc(c) for c in ("taskA", "taskB")}, \
        "only the chosen columns are shaded (a constant column has no scale)"
    assert len(set(cells.values())) <= tables.HEAT_LEVELS + 1
    for name in ("taskA", "taskB"):
        col = frame.columns.get_loc(name)
        assert cells[(int(frame[name].idxmin()), col)] == "background-color: rgb(255,255,255)"
        assert cells[(int(frame[name].idxmax()), col)] == tables.heat_colour(tables.HEAT_LEVELS)
    assert (5, frame.columns.get_loc("taskA")) not in cells, "a missing value stays unshaded"


def test_the_browser_gets_the_same_css_as_from_pandas_own_rendering():
    """The kept hook (tables._with_precomputed_rendering) must not change what is drawn: Streamlit's
    marshalling of our Styler and of the same Styler.apply rendered by pandas send the same cell CSS."""
    frame = _frame(60)
    ours = _sent_css(tables.heat_styled(frame, ["taskA", "taskB"]))
    theirs = _sent_css(frame.style.apply(tables.heat_shading, subset=["taskA", "taskB"], axis=None))
    assert ours == theirs and len(ours) == 2 * len(frame) - 1  # every finite task cell


def test_the_rendering_hook_spares_pandas_the_per_cell_work(monkeypatch):
    """Fails when the hook stops working: Streamlit no longer asks the Styler's ``_translate`` (the speed is
    gone), or asks pandas to render the cells some other way."""
    from pandas.io.formats.style_render import StylerRenderer
    from streamlit.elements.lib.pandas_styler_utils import marshall_styler
    from streamlit.proto.ArrowData_pb2 import ArrowData

    def rendered_by_pandas(*args, **kwargs):
        raise AssertionError("pandas rendered the cells one by one")

    monkeypatch.setattr(StylerRenderer, "_translate_body", rendered_by_pandas)
    styled = tables.heat_styled(_frame(), ["taskA", "taskB"])
    asked = []
    answer = styled._translate
    styled._translate = lambda *args, **kwargs: asked.append(args) or answer(*args, **kwargs)
    marshall_styler(ArrowData(), styled, "uuid")
    assert len(asked) == 1, "Streamlit did not ask the Styler's _translate"


def test_heat_colour_runs_from_white_to_teal():
    assert tables.heat_colour(0) == "background-color: rgb(255,255,255)"
    assert tables.heat_colour(tables.HEAT_LEVELS) == "background-color: rgb(55,165,157)"
    assert tables.heat_colour(math.nan) == ""


def test_latex_table_escapes_and_bolds_the_best_value():
    frame = pd.DataFrame({"system": ["a_b", "c&d"], "G": [0.5, 0.75]})
    latex = tables.latex_table(frame, "50% of #1", bold_max=["G"])
    assert r"a\_b & 0.5000 \\" in latex and r"c\&d & \textbf{0.7500} \\" in latex
    assert r"\caption{50\% of \#1}" in latex


def test_latex_prints_ranks_as_integers_and_missing_values_as_dashes():
    frame = tables.with_integer_columns(pd.DataFrame({"rank": [1.0, 2.0, np.nan], "system": ["a", "b", "c"],
                                                      "G": [0.5, 0.25, np.nan]}), ["rank"])
    body = tables.latex_table(frame, "c", ["G"]).split(r"\midrule")[1]
    assert "1 & a & \\textbf{0.5000}" in body and "2 & b & 0.2500" in body and "-- & c & --" in body
    assert "1.0000" not in body and "<NA>" not in body


def test_a_one_row_or_constant_column_has_no_best_to_bold():
    one = tables.latex_table(pd.DataFrame({"system": ["a"], "G": [0.5], "T": [0.3]}), "c", ["G", "T"])
    assert "textbf" not in one
    flat = tables.latex_table(pd.DataFrame({"system": ["a", "b"], "G": [0.5, 0.5]}), "c", ["G"])
    assert "textbf" not in flat


def test_a_wide_latex_table_is_scaled_to_the_page_and_a_narrow_one_is_not():
    wide = pd.DataFrame({f"c{i}": [0.1, 0.2] for i in range(tables.WIDE_LATEX + 1)})
    assert "\\resizebox{\\linewidth}{!}{%" in tables.latex_table(wide, "c")
    assert "graphicx" in tables.latex_table(wide, "c")
    assert "resizebox" not in tables.latex_table(wide.iloc[:, :tables.WIDE_LATEX], "c")


def test_csv_prints_integer_columns_without_a_decimal_point():
    from evalcore.csv_export import to_csv_text

    frame = tables.with_integer_columns(pd.DataFrame({"rank": [1.0, np.nan], "n_tasks": [17.0, 3.0],
                                                      "G": [1.0, 0.5]}), ["rank", "n_tasks"])
    assert to_csv_text(frame).splitlines() == ["rank,n_tasks,G", "1,17,1.0", ",3,0.5"]


def test_bold_marks_the_best_ranked_row_not_a_row_without_a_rank():
    """The landing's LaTeX bolded SpartQA 0.9092 of a system missing a task (no rank) above every ranked row."""
    frame = tables.with_integer_columns(pd.DataFrame({"Rank": [1, 2, np.nan], "System": ["a", "b", "c"],
                                                      "G": [0.5, 0.4, np.nan], "T": [0.3, 0.6, 0.9]}), ["Rank"])
    body = tables.latex_table(frame, "c", ["G", "T"], bold_where="Rank").split(r"\midrule")[1]
    assert "2 & b & 0.4000 & \\textbf{0.6000}" in body and "-- & c & -- & 0.9000" in body
    assert "1 & a & \\textbf{0.5000} & 0.3000" in body
    every = tables.latex_table(frame, "c", ["T"]).split(r"\midrule")[1]  # without bold_where: every row counts
    assert "\\textbf{0.9000}" in every


def test_intervals_are_printed_rounded_outwards():
    """The printed interval holds the printed point: a Leaderboard row read G 0.3155 beside 0.315–0.315."""
    from ui import tables

    assert tables.interval_words(0.31531, 0.31549) == "0.315–0.316"
    assert tables.interval_words(0.1, 0.2) == "0.100–0.200", "float noise is not rounded outwards"
    assert tables.interval_words(0.0, 1.0) == "0.000–1.000"
    assert tables.interval_words(0.09812, 0.10618, between=", ") == "0.098, 0.107"
    rng = np.random.default_rng(0)
    for lo, width, point in rng.random((500, 3)):
        hi = lo + width * (1 - lo)
        p = lo + point * (hi - lo)
        low, high = map(float, tables.interval_words(lo, hi).split("–"))
        assert low <= lo + 1e-12 and hi <= high + 1e-12, "the printed interval holds the interval"
        assert low - 1e-12 <= round(p, 4) <= high + 1e-12, "and the point as the table prints it (4 decimals)"
