"""CSV and TSV (BEIR's qrels are TSV): a header line naming the columns (aliases accepted, see
:mod:`evalcore.formats.columns`), then one row a line.

Quoted fields follow RFC 4180 (a quoted field may hold the delimiter; such rare rows are re-parsed with the
csv module); unquoted fields are trimmed of Unicode whitespace at both ends, quoted ones are taken as
stored. A row with the wrong field count is an error naming its line and the header.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore import arrow_np
from evalcore.errors import InputError, one_line, printable
from evalcore.formats.columns import pick_columns, pick_optional
from evalcore.formats.lines import LineNumbers, row_error
from evalcore.formats.text import Lines, read_lines
from evalcore.formats.validation import require_rows


def _unquote(values: pa.Array) -> pa.Array:
    quoted = pc.match_substring_regex(values, r'^".*"$')
    if not pc.any(quoted).as_py():
        return values
    inner = pc.replace_substring(pc.utf8_slice_codeunits(values, 1, -1), '""', '"')
    return pc.if_else(quoted, inner, values)


def _split_delimited(lines: Lines, path: Path, delimiter: str) -> tuple[list[str], list[pa.Array], LineNumbers]:
    """Header names and the data columns of a CSV/TSV file (quoted fields follow RFC 4180)."""
    if len(lines.text) == 0:
        raise InputError("empty file: expected a header line and at least one data row", path)
    header = _csv_fields(lines.text[0].as_py(), delimiter, path, lines.numbers.of(0))
    header = [name.strip() for name in header]
    body = lines.text.slice(1)
    numbers = lines.numbers.slice(1, len(lines.text))
    fields = pc.split_pattern(body, delimiter)
    counts = arrow_np.to_numpy(pc.list_value_length(fields))
    wrong = counts != len(header)
    wrong[_rows_with_split_quotes(fields)] = True
    columns = [_unquote(pc.utf8_trim_whitespace(pc.list_element(fields, i)))
               if not wrong.any() else None for i in range(len(header))]
    if wrong.any():
        columns = _repair_quoted_rows(body, fields, wrong, numbers, path, delimiter, header)
    return header, columns, numbers


def _rows_with_split_quotes(fields: pa.Array) -> np.ndarray:
    """Rows where a naive split cut through a quoted field (a quote not wrapping a whole field)."""
    values = pc.utf8_trim_whitespace(pc.list_flatten(fields))
    broken = pc.and_(pc.match_substring(values, '"'),
                     pc.invert(pc.match_substring_regex(values, r'^"([^"]|"")*"$')))
    hits = np.flatnonzero(np.asarray(arrow_np.to_numpy(broken), dtype=bool))
    if len(hits) == 0:
        return hits
    return np.unique(arrow_np.to_numpy(pc.list_parent_indices(fields))[hits])


def _csv_fields(line: str, delimiter: str, path: Path, line_number: int) -> list[str]:
    try:
        return next(csv.reader([line], delimiter=delimiter, strict=True))
    except (csv.Error, StopIteration) as exc:
        raise InputError(f"expected a {'comma' if delimiter == ',' else 'tab'}-separated line with RFC 4180 "
                         f"quoting ({one_line(exc)})", path, line_number) from None


def _repair_quoted_rows(body: pa.Array, fields: pa.Array, wrong: np.ndarray, numbers: LineNumbers,
                        path: Path, delimiter: str, header: list[str]) -> list[pa.Array]:
    """Re-parse the (rare) rows whose quoted fields contain the delimiter with the csv module."""
    wrong_rows = np.flatnonzero(wrong)
    has_quote = arrow_np.to_numpy(pc.match_substring(body.take(arrow_np.from_numpy(wrong_rows)), '"'))
    fixed_rows: list[int] = []
    fixed_values: list[list[str]] = []
    for row, quoted in zip(wrong_rows.tolist(), has_quote.tolist()):
        parsed = _csv_fields(body[row].as_py(), delimiter, path, numbers.of(row)) if quoted else []
        if not quoted or len(parsed) != len(header):
            found = len(parsed) if quoted else int(pc.list_value_length(fields[row:row + 1])[0].as_py())
            name = "comma" if delimiter == "," else "tab"
            shown_header = ", ".join(map(printable, header))
            raise row_error(f"expected {len(header)} {name}-separated columns ({shown_header}), found {found}",
                            path, numbers, row)
        fixed_rows.append(row)
        fixed_values.append([value.strip() for value in parsed])
    good_rows = np.flatnonzero(~wrong)
    good_fields = fields.take(arrow_np.from_numpy(good_rows))
    order = arrow_np.from_numpy(np.argsort(np.concatenate((good_rows, np.array(fixed_rows, dtype=np.int64))), kind="stable"))
    columns = []
    for i in range(len(header)):
        good = _unquote(pc.utf8_trim_whitespace(pc.list_element(good_fields, i)))
        fixed = pa.array([values[i] for values in fixed_values], pa.string())
        columns.append(pa.concat_arrays([good.cast(pa.string()), fixed]).take(order))
    return columns


def read_delimited_table(path: Path, delimiter: str, names: dict[str, tuple[str, ...]],
                         what: str, optional: tuple[str, ...] = ()) -> tuple[dict[str, pa.Array], LineNumbers]:
    """The named columns of a CSV or TSV file (and the ``optional`` ones it has) and the line of each row."""
    lines = read_lines(path)
    header, columns, numbers = _split_delimited(lines, path, delimiter)
    picked = pick_columns(header, names, path, lines.numbers.of(0))
    picked.update(pick_optional(header, optional, picked))
    require_rows(len(columns[0]) if columns else 0, path, what)
    return {name: columns[index] for name, index in picked.items()}, numbers


def write_delimited(run: pa.Table, path: Path, delimiter: str, compressed: bool = False) -> None:
    """``run`` as CSV (``delimiter=","``) or TSV (a tab) with a header line; gzip-compressed if ``compressed``."""
    import pyarrow.csv as pacsv

    options = pacsv.WriteOptions(delimiter=delimiter)
    if compressed:
        with pa.CompressedOutputStream(str(path), "gzip") as sink:
            pacsv.write_csv(run, sink, options)
    else:
        pacsv.write_csv(run, path, options)
