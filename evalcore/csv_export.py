"""CSV text of result tables that is safe to open in a spreadsheet.

System and task names come from data files anyone can drop into ``data/``; a name such as
``=HYPERLINK("http://…")`` would run as a formula when the CSV is opened in Excel or LibreOffice (CSV
injection), and a raw carriage return would start a new row there. Every text cell, the header included, goes
through :func:`evalcore.cells.csv_cell` (a leading ``'`` where a spreadsheet would see a formula); every field
holding the delimiter, a quote, CR or LF is quoted (RFC 4180; Python's csv writer leaves a lone CR unquoted
when lines end in LF, so the fields are written here). Numbers are written unchanged.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from evalcore.cells import csv_cell

_MUST_QUOTE = (",", '"', "\r", "\n")


def _is_text_column(values: pd.Series) -> bool:
    return values.dtype == object or pd.api.types.is_string_dtype(values.dtype) or \
        isinstance(values.dtype, pd.CategoricalDtype)


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy whose text cells and column names cannot start a spreadsheet formula (:func:`csv_cell`)."""
    safe = frame.copy()
    for position in range(safe.shape[1]):  # by position: two columns may share a label
        values = safe.iloc[:, position]
        if _is_text_column(values):
            safe.isetitem(position, values.astype(object).map(lambda v: v if _missing(v) else csv_cell(v)))
    safe.columns = [csv_cell(c) for c in safe.columns]
    return safe


def _missing(value) -> bool:
    return value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and math.isnan(value))


def _field(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in _MUST_QUOTE) else text


def _column_texts(values: pd.Series, float_format: str | None) -> list[str]:
    """Each value of a column as CSV text before quoting: missing as empty, floats by ``float_format`` (else
    their shortest form), booleans as True/False, text through :func:`csv_cell`."""
    text_column = _is_text_column(values)
    out = []
    for value in values.astype(object):
        if _missing(value):
            out.append("")
        elif isinstance(value, (bool, np.bool_)):
            out.append(str(bool(value)))
        elif isinstance(value, (float, np.floating)):
            out.append("" if math.isnan(value) else float_format % value if float_format else str(value))
        elif isinstance(value, (int, np.integer)):
            out.append(str(int(value)))
        else:
            out.append(csv_cell(value) if text_column or isinstance(value, str) else str(value))
    return out


def to_csv_text(frame: pd.DataFrame, float_format: str | None = None, lineterminator: str = "\n") -> str:
    """``frame`` (no index) as CSV text: the header and every text cell neutralised (:func:`csv_cell`), fields
    with a comma, quote, CR or LF quoted, lines ending in ``lineterminator``."""
    columns = [_column_texts(frame.iloc[:, position], float_format) for position in range(frame.shape[1])]
    lines = [",".join(_field(csv_cell(name)) for name in frame.columns)]
    lines += [",".join(_field(column[row]) for column in columns) for row in range(len(frame))]
    return "".join(line + lineterminator for line in lines)
