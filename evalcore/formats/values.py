"""Column values checked and cast: ids to text, scores to finite float64, grades to int64 >= 0.

- ids are always strings as written ("007" stays "007"); a number id becomes its decimal text (1.0 -> "1",
  2.5 -> "2.5"); a float id of magnitude 2^53 or more, NaN or an infinity is refused (float64 cannot keep
  such ids apart); a list, struct, date... column is refused;
- scores: text is parsed; NaN, infinities and overflow (1e309) are refused;
- grades: "2" and "2.0" are accepted, "1.5", "abc", "-1" and values no int64 holds are not.

Every refusal is an InputError naming the file and the line (or row) of the first bad value.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from evalcore import arrow_np
from evalcore.formats.columns import DICTIONARY_QID_RUN_SCHEMA
from evalcore.formats.lines import LineNumbers, first_true, row_error, short_repr

_GRADE_PATTERN = r"^[+-]?[0-9]+(\.0*)?$"
_INT64_MAX = 2**63 - 1


def json_text(value: object, limit: int = 60) -> str:
    """A parsed JSON value as a message shows it: as JSON (``"abc"``, ``true``, ``[1, 2]``), cut to ``limit``
    characters."""
    import json

    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def score_problem(value: object) -> str | None:
    """Why one parsed JSON value is no score, or None when it is one: a score is a JSON number (true, "0.5",
    null or a list are not) that is finite in float64 (NaN, Infinity and 1e309 are not, nor an integer of 400
    digits)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{json_text(value)} is not a number"
    if isinstance(value, int):
        try:
            value = float(value)
        except OverflowError:
            return f"{json_text(value)} is beyond float64"
    if value != value or value in (float("inf"), float("-inf")):
        return f"{json_text(value)} is not a finite number"
    return None


def grade_problem(value: object) -> str | None:
    """Why one parsed JSON value is no relevance grade, or None when it is one: an integer >= 0 that fits in
    64 bits (2.0 counts as 2; true, "2", 1.5, -1, 1e19 and 2^64 do not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{json_text(value)} is not a number"
    if isinstance(value, float) and not (value == value and abs(value) != float("inf") and value == int(value)):
        return f"{json_text(value)} is not a whole number"
    if value < 0:
        return f"{json_text(value)} is negative"
    if int(value) > _INT64_MAX:
        return f"{json_text(value)} does not fit in 64 bits"
    return None


def first_failing_row(values: pa.Array, convert: Callable[[pa.Array], object]) -> int:
    """Index of the first value ``convert`` rejects, by bisection over slices (about 2n work)."""
    low, high = 0, len(values)
    while high - low > 1:
        middle = (low + high) // 2
        try:
            convert(values.slice(low, middle - low))
            low = middle
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            high = middle
    return low


def no_nulls(values: pa.Array, name: str, path: Path, numbers: LineNumbers) -> None:
    """InputError at the first missing value of column ``name``."""
    if values.null_count:
        raise row_error(f"expected a value for {name}, found null/missing", path, numbers,
                        first_true(pc.is_null(values)))


def as_id(values: pa.Array | pa.ChunkedArray, name: str, path: Path, numbers: LineNumbers,
          keep_dictionary: bool = False) -> pa.Array:
    """Ids as strings: numbers become their decimal text, dictionaries are decoded unless
    ``keep_dictionary`` and they are int32-indexed, duplicate-free string dictionaries (then only the
    dictionary is UTF-8-checked)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):
        if keep_dictionary and _is_plain_string_dictionary(values):
            no_nulls(values, name, path, numbers)
            try:
                values.dictionary.validate(full=True)
            except pa.ArrowInvalid:
                pass  # fall through: decode and name the first bad row
            else:
                return values
        values = values.dictionary_decode()
    no_nulls(values, name, path, numbers)
    if pa.types.is_string(values.type):
        try:  # parquet string pages are not UTF-8-checked on read; a damaged one must not reach Python
            values.validate(full=True)
        except pa.ArrowInvalid:
            raise row_error(f"expected UTF-8 text for {name}", path, numbers,
                            first_failing_row(values, lambda part: part.validate(full=True))) from None
        return values
    check_id_type(values.type, name, path, numbers)
    if pa.types.is_floating(values.type):
        return _float_ids_as_text(values, name, path, numbers)
    try:
        return values.cast(pa.string())
    except pa.ArrowInvalid:
        raise row_error(f"expected UTF-8 text for {name}", path, numbers,
                        first_failing_row(values, lambda part: part.cast(pa.string()))) from None


def check_id_type(arrow_type: pa.DataType, name: str, path: Path, numbers: LineNumbers) -> None:
    """Ids are text, integers or (pandas' doing) floats; a list, struct, date... column is refused at its first
    row (every row of a typed column has that type)."""
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if not (pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
            or pa.types.is_string_view(arrow_type) or pa.types.is_binary(arrow_type)
            or pa.types.is_large_binary(arrow_type) or pa.types.is_integer(arrow_type)
            or pa.types.is_floating(arrow_type)):
        raise row_error(f"expected column {name} to hold strings or integers, found {arrow_type}", path, numbers, 0)


def _is_plain_string_dictionary(values: pa.Array) -> bool:
    """int32 indices into a string dictionary without repeated entries (so equal codes <=> equal ids)."""
    dictionary = values.dictionary
    return (values.type == DICTIONARY_QID_RUN_SCHEMA.field("qid").type
            and pc.count_distinct(dictionary).as_py() == len(dictionary) and dictionary.null_count == 0)


def _float_ids_as_text(values: pa.Array, name: str, path: Path, numbers: LineNumbers) -> pa.Array:
    """1.0 -> "1", 2.5 -> "2.5" (ids stored as floats by pandas when a column had missing values, or JSON
    numbers). A float id of magnitude 2^53 or more is refused: float64 no longer holds every integer there, so
    distinct ids may already have been merged by whoever wrote them as floats (1e20 and 1e20 + 1 are one
    float), and those above 2^63 would wrap through int64. NaN and infinities are no ids either."""
    values = values.cast(pa.float64())
    bad = first_true(pc.invert(pc.is_finite(values)))
    if bad is not None:
        raise row_error(f"expected a {name}, found {values[bad].as_py()!r}", path, numbers, bad)
    bad = first_true(pc.greater_equal(pc.abs(values), arrow_np.scalar(2.0**53, pa.float64())))
    if bad is not None:
        raise row_error(f"expected {name}s stored as text or integers: {values[bad].as_py()!r} is a float beyond 2^53, "
                        "where float64 no longer tells neighbouring integers apart", path, numbers, bad)
    integral = pc.equal(pc.floor(values), values)
    as_int = pc.cast(pc.if_else(integral, values, 0.0), pa.int64(), safe=False).cast(pa.string())
    return pc.if_else(integral, as_int, values.cast(pa.string()))


def _decoded_without_nulls(values: pa.Array | pa.ChunkedArray, name: str, path: Path, numbers: LineNumbers) -> pa.Array:
    """One array of plain values (chunks combined, a dictionary decoded); InputError at the first NULL."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    no_nulls(values, name, path, numbers)
    return values


def as_scores(values: pa.Array | pa.ChunkedArray, path: Path, numbers: LineNumbers) -> pa.Array:
    """Scores as finite float64; text is parsed, NaN / inf / overflow (1e309) are rejected."""
    values = _decoded_without_nulls(values, "score", path, numbers)
    text = values if pa.types.is_string(values.type) or pa.types.is_large_string(values.type) else None
    if text is None and not (pa.types.is_floating(values.type) or pa.types.is_integer(values.type)
                             or pa.types.is_decimal(values.type)):
        raise row_error(f"expected a numeric score column, found {values.type}", path, numbers, 0)
    try:
        scores = values.cast(pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        row = first_failing_row(values, lambda part: part.cast(pa.float64()))
        raise row_error(f"expected a number for score, found {short_repr(values[row].as_py())}",
                        path, numbers, row) from None
    bad = first_true(pc.invert(pc.is_finite(scores)))
    if bad is not None:
        found = values[bad].as_py()
        raise row_error(f"expected a finite score, found {short_repr(found)}"
                        + (" (overflows float64)" if text is not None and str(found).strip().lower()
                           not in ("nan", "inf", "-inf", "+inf", "infinity", "-infinity", "+infinity") else ""),
                        path, numbers, bad)
    return scores


def as_grades(values: pa.Array | pa.ChunkedArray, path: Path, numbers: LineNumbers) -> pa.Array:
    """Relevance grades as int64 >= 0; "2" and "2.0" are accepted, "1.5", "abc", "-1" are not."""
    values = _decoded_without_nulls(values, "relevance", path, numbers)
    expected = "expected a non-negative integer relevance grade"
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        bad = first_true(pc.invert(pc.match_substring_regex(values, _GRADE_PATTERN)))
        if bad is not None:
            raise row_error(f"{expected}, found {short_repr(values[bad].as_py())}", path, numbers, bad)
        digits = pc.replace_substring_regex(pc.replace_substring_regex(values, r"\.0*$", ""), r"^\+", "")
        try:
            grades = digits.cast(pa.int64())
        except pa.ArrowInvalid:
            row = first_failing_row(digits, lambda part: part.cast(pa.int64()))
            raise row_error(f"{expected} that fits in 64 bits, found {short_repr(values[row].as_py())}",
                            path, numbers, row) from None
    elif pa.types.is_integer(values.type) or pa.types.is_boolean(values.type):
        if pa.types.is_uint64(values.type):  # above 2^63 - 1 no int64 holds it
            bad = first_true(pc.greater(values, arrow_np.scalar(2**63 - 1, pa.uint64())))
            if bad is not None:
                raise row_error(f"{expected} that fits in 64 bits, found {values[bad].as_py()}", path, numbers, bad)
        grades = values.cast(pa.int64())
    elif pa.types.is_floating(values.type):
        integral = pc.and_(pc.is_finite(values), pc.equal(pc.floor(values), values))
        bad = first_true(pc.invert(integral))
        if bad is not None:
            raise row_error(f"{expected}, found {values[bad].as_py()!r}", path, numbers, bad)
        bad = first_true(pc.greater_equal(pc.abs(values.cast(pa.float64())), arrow_np.scalar(2.0**63, pa.float64())))
        if bad is not None:  # 1e30, 9.3e18: integral, but no int64 holds them
            raise row_error(f"{expected} that fits in 64 bits, found {values[bad].as_py()!r}", path, numbers, bad)
        grades = values.cast(pa.int64())
    else:
        raise row_error(f"expected an integer relevance column, found {values.type}", path, numbers, 0)
    bad = first_true(pc.less(grades, arrow_np.scalar(0, pa.int64())))
    if bad is not None:
        raise row_error(f"{expected}, found {grades[bad].as_py()}", path, numbers, bad)
    return grades
