"""CSV exports neutralise spreadsheet formulas in text cells (CSV injection) and leave numbers alone."""
from __future__ import annotations

import csv
import io

import numpy as np
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
