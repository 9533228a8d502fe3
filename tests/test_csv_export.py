"""CSV exports neutralise spreadsheet formulas in text cells (CSV injection) and leave numbers alone."""
from __future__ import annotations

import csv
import io

import numpy as np
import pytest
import pandas as pd

from evalcore.csv_export import spreadsheet_safe, to_csv_text


def test_formula_like_names_are_prefixed_and_numbers_untouched():
    frame = pd.DataFrame({
        "system": ['=HYPERLINK("http://x","y")', "+cmd", "-2+3", "@SUM(A1)", "\tx", "plain", "a=b", None],
        "G": [0.5, -0.25, 0.0, 1.0, 0.1, 0.2, 0.3, np.nan],
        "rank": [1, 2, 3, 4, 5, 6, 7, 8],
    })
    rows = list(csv.DictReader(io.StringIO(to_csv_text(frame))))
    assert [r["system"] for r in rows[:5]] == ["'" + v for v in frame["system"][:5]]
    assert [r["system"] for r in rows[5:7]] == ["plain", "a=b"]
    assert [float(r["G"]) for r in rows[:7]] == frame["G"][:7].tolist()  # -0.25 stays a number
    assert frame["system"][0].startswith("=")  # the input is not modified
    assert spreadsheet_safe(frame)["rank"].tolist() == frame["rank"].tolist()


def test_string_dtype_columns_are_covered():
    frame = pd.DataFrame({"task": pd.array(["=1+1", "ok"], dtype="string")})
    assert spreadsheet_safe(frame)["task"].tolist() == ["'=1+1", "ok"]


def test_headers_are_guarded_and_fields_with_cr_lf_or_quotes_are_quoted():
    """A task named as a formula is a header; a lone CR in a name must not end the row where lines end in LF."""
    frame = pd.DataFrame({'=HYPERLINK("http://x","y")': [0.5, 0.25], "system": ["a\r=cmd|x", 'q"uote\nline']})
    text = to_csv_text(frame, float_format="%.6g", lineterminator="\n")
    assert text.count("\n") == 3 + 1  # three lines, one LF inside a quoted field
    assert text.splitlines(keepends=True)[0].startswith('"\'=HYPERLINK(""http://x"",""y"")",system\n')
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows == [["'=HYPERLINK(\"http://x\",\"y\")", "system"], ["0.5", "a\r=cmd|x"], ["0.25", 'q"uote\nline']]
    assert '"a\r=cmd|x"' in text  # quoted: the CR is inside the field


@pytest.mark.parametrize("name", [" =1+1", "\u00a0=1", "\x1b[31m", "\n=1", "\u202eevil"])
def test_a_formula_behind_white_space_or_a_control_character_is_guarded(name):
    (cell,) = list(csv.reader(io.StringIO(to_csv_text(pd.DataFrame({"s": [name]})), newline="")))[1]
    assert cell == "'" + name


def test_numbers_booleans_and_missing_values_are_written_as_pandas_writes_them():
    frame = pd.DataFrame({"G": [0.5, np.nan, 1e-05], "rank": pd.array([1, None, 3], dtype="Int64"),
                          "complete": [True, False, True], "name": ["x", None, "z"]})
    assert to_csv_text(frame) == frame.to_csv(index=False, lineterminator="\n")
    assert to_csv_text(frame, float_format="%.6g") == frame.to_csv(index=False, float_format="%.6g",
                                                                   lineterminator="\n")
