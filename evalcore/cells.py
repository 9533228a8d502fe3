"""What a text cell of an exported table may contain: names are data, and data never acts.

System and task names come from data files anyone can drop into ``data/`` or ingest (``--system``,
``--task``). Every export passes every text cell — headers included — through one function per format:

- :func:`csv_cell` (spreadsheets): a cell whose first character other than white space is ``=``, ``+``,
  ``-`` or ``@``, or that starts with a control character (tab, CR, LF…), gets a leading ``'`` — OWASP's
  advice against CSV injection, so ``=HYPERLINK(…)`` stays text in Excel and LibreOffice.
  :func:`evalcore.csv_export.to_csv_text` quotes every field holding a comma, a quote, CR or LF (RFC 4180), so
  a raw carriage return cannot start a new row in a spreadsheet.
- :func:`terminal_cell` (tables printed to a terminal): every character that is not printable — C0 (newline,
  CR, tab, ESC…), DEL, C1, the Unicode line and paragraph separators, format characters such as the
  bidirectional overrides — is replaced by its Python escape (``\\n``, ``\\x1b``, ``\\u202e``;
  :func:`evalcore.errors.printable`, which every one-line error message goes through too), so a name cannot
  colour the terminal, move the cursor, reorder text or break a row.
- :func:`latex_cell` (LaTeX): the same replacement, then LaTeX's special characters escaped, so a name
  cannot end a tabular row, run a command or leave an ESC byte in the ``.tex`` file.

Numbers, booleans and missing values are not text; the exporters format them.
"""
from __future__ import annotations

import pandas as pd

from evalcore.errors import printable

FORMULA_STARTS = ("=", "+", "-", "@")
LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
    "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}


def terminal_cell(text) -> str:
    """``text`` with every unprintable character replaced by its visible escape (one line, inert)."""
    return printable(str(text))


def latex_cell(text) -> str:
    """``text`` for a LaTeX document: control characters as visible escapes, then LaTeX's specials escaped."""
    return "".join(LATEX_SPECIALS.get(char, char) for char in terminal_cell(text))


def csv_cell(text) -> str:
    """``text`` for a spreadsheet: prefixed with ``'`` when a spreadsheet would read it as a formula (its first
    character other than white space is ``=``, ``+``, ``-`` or ``@``) or it starts with a control character."""
    text = str(text)
    if not text:
        return text
    if not text[0].isprintable() or text.lstrip().startswith(FORMULA_STARTS):
        return "'" + text
    return text


def terminal_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` for ``DataFrame.to_string``: column names and text cells through
    :func:`terminal_cell` (numbers and missing values untouched)."""
    safe = frame.copy()
    for position in range(safe.shape[1]):
        values = safe.iloc[:, position]
        if values.dtype == object or pd.api.types.is_string_dtype(values.dtype) or \
                isinstance(values.dtype, pd.CategoricalDtype):
            safe.isetitem(position, values.astype(object).map(lambda v: terminal_cell(v) if isinstance(v, str) else v))
    safe.columns = [terminal_cell(c) for c in safe.columns]
    return safe
