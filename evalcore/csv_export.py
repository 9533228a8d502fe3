"""CSV text of result tables that is safe to open in a spreadsheet.

System and task names come from data files anyone can drop into ``data/``; a name such as
``=HYPERLINK("http://…")`` would run as a formula when the CSV is opened in Excel or LibreOffice (CSV
injection). Following OWASP's advice, text cells that start with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return get a leading apostrophe; numeric columns are written unchanged.
"""
from __future__ import annotations

import pandas as pd

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy whose text cells cannot start a spreadsheet formula (prefixed with ``'``)."""
    safe = frame.copy()
    for position in range(safe.shape[1]):  # by position: two columns may share a label
        values = safe.iloc[:, position]
        if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
            text = values.astype("string")
            risky = text.str.startswith(_FORMULA_STARTS).fillna(False).to_numpy(dtype=bool)
            if risky.any():
                safe.isetitem(position, values.astype(object).where(~risky, "'" + text.astype(object)))
    return safe


def to_csv_text(frame: pd.DataFrame, **to_csv_options) -> str:
    """``frame.to_csv`` (no index) after :func:`spreadsheet_safe`."""
    return spreadsheet_safe(frame).to_csv(index=False, **to_csv_options)
