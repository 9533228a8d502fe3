"""JSON lines: one JSON object per non-blank line, parsed by pyarrow.

Keys are the column names (aliases accepted); a JSON number id becomes its decimal text, JSON strings are
taken as stored. Only on an error is the file parsed again line by line, to name the first line that is
not one JSON object of consistent types (a repeated key, a number beyond float64, a value whose type
differs from the line where the key first appeared).
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore import arrow_np
from evalcore.errors import InputError, one_line
from evalcore.formats.columns import pick_columns, pick_optional
from evalcore.formats.limits import JSON_DEPTH, check_json_nesting, json_too_deep
from evalcore.formats.lines import LineNumbers, row_error, short_repr
from evalcore.formats.text import Lines, concatenated_values, read_lines
from evalcore.formats.validation import require_rows


def read_jsonl_table(path: Path, names: dict[str, tuple[str, ...]],
                     what: str, optional: tuple[str, ...] = ()) -> tuple[dict[str, pa.Array], LineNumbers]:
    """Columns of a JSON-lines file (one object per non-blank line; the ``optional`` ones it has too), parsed by
    pyarrow."""
    import pyarrow.json as pajson

    lines = read_lines(path)
    require_rows(len(lines.text), path, what)
    _check_nesting(lines, path)  # before pyarrow's parser, which crashed the process on a line nested 100,000 deep
    longest = int(pc.max(pc.binary_length(lines.text)).as_py())
    joined = pc.binary_join_element_wise(lines.text, "", "\n")
    body = concatenated_values(joined)
    try:
        table = pajson.read_json(pa.BufferReader(body), read_options=pajson.ReadOptions(
            use_threads=True, block_size=max(1 << 20, 2 * longest + 2)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise _locate_json_error(lines, path, names, exc) from None
    if table.num_rows != len(lines.text):
        raise _locate_json_error(lines, path, names, None)
    picked = pick_columns(table.column_names, names, path)
    picked.update(pick_optional(table.column_names, optional, picked))
    return {name: table.column(index) for name, index in picked.items()}, lines.numbers


def _check_nesting(lines: Lines, path: Path) -> None:
    """Refuse the first line nested deeper than the JSON nesting limit: lines with more opening brackets than the
    limit (counted by one kernel) are measured exactly."""
    limit = JSON_DEPTH.value()
    if limit is None:
        return
    brackets = pc.add(pc.count_substring(lines.text, "["), pc.count_substring(lines.text, "{"))
    for row in np.flatnonzero(np.asarray(arrow_np.to_numpy(pc.greater(brackets, limit)), dtype=bool)).tolist():
        check_json_nesting(lines.text[row].as_py().encode("utf-8"), path, lines.numbers.of(row))


def _locate_json_error(lines: Lines, path: Path, names: dict[str, tuple[str, ...]],
                       exc: Exception | None) -> InputError:
    """Slow path, only on error: find the first line that is not one JSON object of consistent types."""
    value_kinds: dict[str, tuple[type, int]] = {}
    for row in range(len(lines.text)):
        text = lines.text[row].as_py()
        try:
            record = json.loads(text, object_pairs_hook=_json_object_once_per_key,
                                parse_float=_json_finite_number, parse_int=_json_finite_number)
        except _JsonValueProblem as problem:
            return row_error(str(problem), path, lines.numbers, row)
        except RecursionError:
            return json_too_deep(path, lines.numbers.of(row))
        except json.JSONDecodeError as error:
            return row_error(f"expected one JSON object per line ({error.msg} at column {error.colno})",
                             path, lines.numbers, row)
        except ValueError:  # an integer of more than 4,300 digits
            return row_error("expected one JSON object per line (a number of more than "
                             f"{sys.get_int_max_str_digits():,} digits)", path, lines.numbers, row)
        if not isinstance(record, dict):
            return row_error(f"expected one JSON object per line, found {type(record).__name__}",
                             path, lines.numbers, row)
        for key, value in record.items():
            kind = str if isinstance(value, str) else (int if isinstance(value, (int, float))
                                                       and not isinstance(value, bool) else type(value))
            seen = value_kinds.setdefault(key, (kind, lines.numbers.of(row)))
            if seen[0] is not kind and value is not None:
                return row_error(f"expected {key!r} to be a {seen[0].__name__} as on line {seen[1]}, "
                                 f"found {short_repr(value)}", path, lines.numbers, row)
    return InputError(f"expected one JSON object per line ({one_line(exc)})", path)


class _JsonValueProblem(ValueError):
    """A JSON line Python parses but pyarrow rejects (a repeated key, a number beyond float64)."""


def _json_object_once_per_key(pairs: list[tuple[str, object]]) -> dict:
    record = dict(pairs)
    if len(record) != len(pairs):
        repeated = next(key for i, (key, _) in enumerate(pairs) if key in dict(pairs[:i]))
        raise _JsonValueProblem(f"expected each key once per JSON object, found {short_repr(repeated)} twice")
    return record


def _json_finite_number(text: str) -> float:
    try:
        value = float(text)
    except OverflowError:  # an integer literal beyond float64
        value = math.inf
    if not math.isfinite(value):
        raise _JsonValueProblem(f"expected a number within float64 range, found {short_repr(text)} (overflows float64)")
    return value


def write_jsonl(run: pa.Table, path: Path, compressed: bool = False) -> None:
    """``run`` as JSON lines (``qid, docid, score``), written by DuckDB; gzip-compressed if asked."""
    import duckdb

    connection = duckdb.connect()
    try:
        connection.register("run_rows", run)
        target = str(path).replace("'", "''")  # COPY takes no parameter for its file; the name is ours (mkstemp)
        compression = "gzip" if compressed else "none"
        connection.execute(f"COPY (SELECT qid, docid, score FROM run_rows) TO '{target}' "
                           f"(FORMAT JSON, COMPRESSION {compression})")
    finally:
        connection.close()
