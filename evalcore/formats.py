"""Readers and writers for runs and qrels: TREC text, BEIR tsv, jsonl, CSV/TSV and parquet.

Everything is columnar (pyarrow): a file becomes one string array of lines, split and cast with
vectorised kernels; no Python object is made per row. Bad input raises
:class:`evalcore.errors.InputError` naming the file, the 1-based physical line (for parquet: the
1-based row) and what was expected.

Conventions shared with the engine:

- runs are ``qid: string, docid: string, score: float64`` in input order; qrels are
  ``qid: string, docid: string, relevance: int64`` (>= 0), duplicates with equal grades collapsed.
- blank (whitespace-only) lines are skipped everywhere, but line numbers in messages are physical
  line numbers of the file (a UTF-8 BOM and CRLF line ends are accepted).
- ids are always strings as written ("007" stays "007"); a JSON number id becomes its decimal text
  (a float id of magnitude 2^53 or more is refused: float64 cannot keep such ids apart). Unquoted ids
  and values of text formats (TREC, CSV/TSV fields) are trimmed of Unicode whitespace at both ends (a
  no-break space included), so the same id matches whichever text format it comes in; quoted CSV
  fields, JSON strings and parquet values are taken as stored.
"""
from __future__ import annotations

import csv
import gzip
import json
import math
import os
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore import arrow_np
from evalcore.errors import InputError, OutputError, one_line, printable
from evalcore.id_keys import string_hashes

RUN_SCHEMA = pa.schema([("qid", pa.string()), ("docid", pa.string()), ("score", pa.float64())])
# streamed parquet chunks for the engine keep string qids dictionary-encoded (as parquet stores them)
DICTIONARY_QID_RUN_SCHEMA = RUN_SCHEMA.set(0, pa.field("qid", pa.dictionary(pa.int32(), pa.string())))
QRELS_SCHEMA = pa.schema([("qid", pa.string()), ("docid", pa.string()), ("relevance", pa.int64())])

FORMATS = ("trec", "parquet", "csv", "tsv", "jsonl")

# accepted header names per canonical column, first match wins (compared lower-case)
_QID_NAMES = ("qid", "query-id", "query_id", "q_id", "queryid", "topic")
_DOCID_NAMES = ("docid", "corpus-id", "corpus_id", "doc_id", "p_id", "pid", "docno")
_SCORE_NAMES = ("score", "sim", "similarity")
_RELEVANCE_NAMES = ("relevance", "score", "grade", "rel", "label", "judgment")
RUN_COLUMN_NAMES = {"qid": _QID_NAMES, "docid": _DOCID_NAMES, "score": _SCORE_NAMES}
QRELS_COLUMN_NAMES = {"qid": _QID_NAMES, "docid": _DOCID_NAMES, "relevance": _RELEVANCE_NAMES}

_TREC_RUN_LAYOUT = "qid Q0 docid rank score tag"
_TREC_QRELS_LAYOUT = "qid iter docid grade"
_EXTENSION_FORMATS = {
    ".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl",
    ".ndjson": "jsonl", ".json": "jsonl", ".trec": "trec", ".run": "trec", ".res": "trec",
    ".txt": "trec", ".qrels": "trec", ".qrel": "trec",
}
_FORMAT_ALIASES = {"beir": "tsv", "txt": "trec", "trec_eval": "trec", "json": "jsonl", "ndjson": "jsonl",
                   "pq": "parquet"}
_PARQUET_MAGIC = b"PAR1"
_UTF8_BOM = b"\xef\xbb\xbf"
_GRADE_PATTERN = r"^[+-]?[0-9]+(\.0*)?$"


# ----------------------------------------------------------------------------- line numbers

@dataclass(frozen=True)
class LineNumbers:
    """Maps row indices of a parsed table to 1-based physical lines of its file.

    ``array is None`` means rows are contiguous lines starting at ``first`` (the common case,
    kept without a per-row array); otherwise ``array[i]`` is the line of row ``i``.
    """

    first: int = 1
    array: np.ndarray | None = None

    def of(self, row: int) -> int:
        return int(self.array[row]) if self.array is not None else self.first + int(row)

    def slice(self, start: int, stop: int) -> "LineNumbers":
        if self.array is None:
            return LineNumbers(self.first + start)
        return LineNumbers(0, self.array[start:stop])


def _fail(message: str, path: str | Path, lines: LineNumbers | None, row: int | None) -> InputError:
    line = None if lines is None or row is None else lines.of(row)
    return InputError(message, path, line)


def _shown(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


# ----------------------------------------------------------------------------- format detection

def _strip_gz(path: Path) -> Path:
    return path.with_suffix("") if path.suffix.lower() == ".gz" else path


@contextmanager
def _reading(path: Path) -> Iterator[None]:
    """Errors of reading ``path`` inside the block as one InputError naming it: missing, a directory, an I/O or
    decompression error (other errors, an InputError of a limit included, pass as they are)."""
    try:
        yield
    except FileNotFoundError:
        raise InputError("file not found", path) from None
    except IsADirectoryError:
        raise InputError("expected a file, found a directory", path) from None
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read file ({one_line(exc)})", path) from None


def _first_bytes(path: Path, size: int = 1 << 16) -> bytes:
    with _reading(path):
        if path.suffix.lower() == ".gz":
            with gzip.open(path, "rb") as handle:
                return handle.read(size)
        with open(path, "rb") as handle:
            return handle.read(size)


def _first_line_fields(head: bytes) -> tuple[str, list[str]]:
    text = head.removeprefix(_UTF8_BOM).decode("utf-8", errors="replace")
    for raw_line in text.splitlines():
        if raw_line.strip():
            return raw_line, raw_line.split()
    return "", []


def _detect_format(path: str | Path, names: dict[str, tuple[str, ...]], trec_columns: int) -> str:
    path = Path(path)
    head = _first_bytes(path)
    if head.startswith(_PARQUET_MAGIC):
        return "parquet"
    by_extension = _EXTENSION_FORMATS.get(_strip_gz(path).suffix.lower())
    first_line, whitespace_fields = _first_line_fields(head)
    known = {name for aliases in names.values() for name in aliases}
    if by_extension in ("csv", "tsv"):
        delimiter = "," if by_extension == "csv" else "\t"
        header = [field.strip().strip('"').lower() for field in first_line.split(delimiter)]
        if len(known.intersection(header)) < 2 and len(whitespace_fields) == trec_columns:
            return "trec"  # a headerless whitespace file with a .tsv name
        return by_extension
    if by_extension is not None:
        return by_extension
    if first_line.lstrip().startswith("{"):
        return "jsonl"
    for delimiter, fmt in (("\t", "tsv"), (",", "csv")):
        header = [field.strip().strip('"').lower() for field in first_line.split(delimiter)]
        if len(header) > 1 and len(known.intersection(header)) >= 2:
            return fmt
    return "trec"


def detect_run_format(path: str | Path) -> str:
    """Format of a run file: by parquet magic, then extension, then by sniffing the first line."""
    return _detect_format(path, RUN_COLUMN_NAMES, 6)


def detect_qrels_format(path: str | Path) -> str:
    """Format of a qrels file: by parquet magic, then extension, then by sniffing the first line."""
    return _detect_format(path, QRELS_COLUMN_NAMES, 4)


def _checked_format(fmt: str | None, path: str | Path, detect: Callable[[str | Path], str]) -> str:
    if fmt is None:
        return detect(path)
    fmt = _FORMAT_ALIASES.get(fmt.lower(), fmt.lower())
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}", path)
    return fmt


# ----------------------------------------------------------------------------- text as lines

@dataclass
class _Lines:
    """The non-blank, whitespace-trimmed lines of a text file and their physical line numbers."""

    text: pa.Array
    numbers: LineNumbers


# ----------------------------------------------------------------------------- what one input may cost
#
# A text input is read whole (then split with vectorised kernels): measured on this code, a TREC run costs
# about 6x its size in memory at the peak and every line about 40 bytes more, so a small file that inflates
# (a 3 MB .gz of 3 GB of blank lines) or never ends (/dev/zero) must be stopped while it is read, not after.
# Each limit is an environment variable (a whole number; 0 = no limit); parquet inputs are streamed and not
# limited by these.

@dataclass(frozen=True)
class InputLimit:
    """One bound on a text input: its environment variable, default, unit and name."""

    variable: str
    default: int
    unit: str
    name: str

    def value(self) -> int | None:
        """The limit in force (None = no limit); a malformed setting is an InputError."""
        text = os.environ.get(self.variable, "").strip().replace("_", "")
        if not text:
            return self.default
        if not text.isascii() or not text.isdigit():
            raise InputError(f"{self.variable} must be a whole number of {self.unit} (0 = no limit), got {text!r}")
        return int(text) or None

    def exceeded(self, limit: int, path: Path, line: int | None = None) -> InputError:
        return InputError(f"more than {limit:,} {self.unit} ({self.name}; raise {self.variable} to read it, "
                          "0 = no limit)", path, line)


INPUT_BYTES = InputLimit("TIEBREAK_MAX_INPUT_BYTES", 1 << 30, "bytes after decompression", "the input size limit")
INPUT_LINES = InputLimit("TIEBREAK_MAX_INPUT_LINES", 50_000_000, "lines", "the line count limit")
LINE_BYTES = InputLimit("TIEBREAK_MAX_LINE_BYTES", 64 << 20, "bytes in one line", "the line length limit")
BLANK_LINES = InputLimit("TIEBREAK_MAX_BLANK_LINES", 10_000, "blank lines in a row", "the blank-line limit")
# one query's candidates are evaluated at once (padded to a power of two): a streamed parquet run is not
# bounded as a whole, but a query of a billion rows (a constant qid column compresses to nothing) would be
QUERY_ROWS = InputLimit("TIEBREAK_MAX_QUERY_ROWS", 10_000_000, "rows for one query", "the per-query row limit")
INPUT_LIMITS = (INPUT_BYTES, INPUT_LINES, LINE_BYTES, BLANK_LINES, QUERY_ROWS)
_READ_BLOCK = 4 << 20  # bytes read at a time; at most LINE_BYTES' smallest sensible value


def _read_bytes(path: Path, text: bool = True) -> bytes:
    """A whole text file (gunzipped for .gz), read block by block and stopped at the first block past a
    limit: total size, line count, a line without end, a run of empty lines (the cheap checks that stop a
    decompression bomb or /dev/zero early; :func:`_read_lines` checks line lengths and blank runs exactly).
    ``text=False`` (a stream that may be parquet) checks only the size and the line without end."""
    max_bytes, max_lines, max_line = INPUT_BYTES.value(), INPUT_LINES.value(), LINE_BYTES.value()
    max_blank = BLANK_LINES.value()
    if not text:
        max_lines = max_blank = None
    # max_blank + 2 line ends in a row: the first may end a non-blank line, the others end blank ones
    blank_runs = [] if max_blank is None else [b"\n" * (max_blank + 2), b"\r\n" * (max_blank + 2)]
    blocks: list[bytes] = []
    size = lines = open_line = 0  # open_line: bytes of the line not ended yet
    with _reading(path):
        with (gzip.open(path, "rb") if path.suffix.lower() == ".gz" else open(path, "rb")) as handle:
            while block := handle.read(_READ_BLOCK):
                size += len(block)
                if max_bytes is not None and size > max_bytes:
                    raise INPUT_BYTES.exceeded(max_bytes, path)
                ends = block.count(b"\n")
                if max_lines is not None and lines + ends > max_lines:
                    raise INPUT_LINES.exceeded(max_lines, path, max_lines + 1)
                for run in blank_runs:
                    start = block.find(run)
                    if start >= 0:  # the run's first blank line (the first line end may close the line before)
                        first = lines + block.count(b"\n", 0, start) + (1 if start == 0 and open_line == 0 else 2)
                        raise BLANK_LINES.exceeded(max_blank, path, first)
                open_line = open_line + len(block) if ends == 0 else len(block) - block.rfind(b"\n") - 1
                if max_line is not None and open_line > max_line:
                    raise LINE_BYTES.exceeded(max_line, path, lines + ends + 1)
                lines += ends
                blocks.append(block)
    return blocks[0] if len(blocks) == 1 else b"".join(blocks)


@contextmanager
def readable_input(path: str | Path) -> Iterator[Path]:
    """``path`` itself when it is a regular file; for a stream (``/dev/stdin``, a FIFO, ``<(command)``, a
    device) a temporary copy of what it yields, read once within the input limits: the readers open an input
    more than once (the format is sniffed from its first bytes, then the file is read), which on a stream
    silently lost those first bytes. Errors about the copy name ``path``. The copy is removed afterwards."""
    import stat

    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = None
    if mode is None or stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        yield path
        return
    data = _read_bytes(path, text=False)
    from evalcore.outputs import writing

    with writing(tempfile.gettempdir(), f"the temporary copy of {path} (set TMPDIR to a folder with room for it)"):
        handle, name = tempfile.mkstemp(prefix="evalcore-input-", suffix=_strip_gz(path).suffix)
        with os.fdopen(handle, "wb") as copy:
            copy.write(data)
    del data
    try:
        yield Path(name)
    except InputError as error:
        if error.path == name:
            error.path = str(path)
        raise
    finally:
        os.unlink(name)


def load_json_file(path: str | Path) -> object:
    """One JSON document (a result file), within the input size limit, as Python objects. Every problem is
    an InputError naming the file: missing, unreadable, too big, not UTF-8 JSON (with line and column), or
    nested deeper than Python's parser goes (json raises RecursionError there, which is no ValueError)."""
    path = Path(path)
    max_bytes = INPUT_BYTES.value()
    with _reading(path):
        with open(path, "rb") as handle:
            data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    if max_bytes is not None and len(data) > max_bytes:
        raise INPUT_BYTES.exceeded(max_bytes, path)
    try:
        return json.loads(data)
    except RecursionError:
        raise InputError("expected a JSON document, found one nested too deep to parse (more than about "
                         f"{sys.getrecursionlimit():,} levels)", path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"expected a JSON document ({exc.msg} at column {exc.colno})", path, exc.lineno) from None
    except ValueError as exc:  # not UTF-8 (json.loads of bytes detects the encoding)
        raise InputError(f"expected a JSON document in UTF-8 ({one_line(exc)})", path) from None


def _check_line_limits(data: bytes, offsets: np.ndarray, non_blank: np.ndarray | None, path: Path) -> None:
    """The exact checks on a file already split into lines: the longest line, the longest run of blank
    lines (both cheap on the arrays :func:`_read_lines` has computed anyway)."""
    max_line, max_blank = LINE_BYTES.value(), BLANK_LINES.value()
    if max_line is not None and len(offsets) > 1:
        lengths = np.diff(offsets)
        longest = int(np.argmax(lengths))
        if lengths[longest] > max_line + 1:  # + 1: the line's own end
            raise LINE_BYTES.exceeded(max_line, path, longest + 1)
    if max_blank is not None and non_blank is not None and len(non_blank) > max_blank:
        blank = ~non_blank
        edges = np.flatnonzero(np.diff(np.concatenate(([0], blank.view(np.int8), [0]))))
        starts, stops = edges[0::2], edges[1::2]
        too_long = np.flatnonzero(stops - starts > max_blank)
        if len(too_long):
            first = int(starts[too_long[0]]) + 1
            raise BLANK_LINES.exceeded(max_blank, path, first)


def _undecodable_line(data: bytes, start: int) -> tuple[int, str]:
    try:
        data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        return data.count(b"\n", 0, start + exc.start) + 1, f"byte 0x{data[start + exc.start]:02x}"
    return 1, "invalid text"


def _read_lines(path: Path) -> _Lines:
    """Read a UTF-8 text file as one string array of trimmed, non-blank lines (no per-line objects)."""
    data = _read_bytes(path)
    start = len(_UTF8_BOM) if data.startswith(_UTF8_BOM) else 0
    newline_positions = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    ends = newline_positions + 1
    if len(data) > start and (len(ends) == 0 or ends[-1] != len(data)):
        ends = np.append(ends, len(data))
    offsets = np.concatenate(([start], ends))
    if len(data) < 2**31 - 1:
        string_type, offsets = pa.string(), offsets.astype(np.int32)
    else:
        string_type, offsets = pa.large_string(), offsets.astype(np.int64)
    raw = pa.Array.from_buffers(string_type, len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    try:
        raw.validate(full=True)
    except pa.ArrowInvalid:
        line, what = _undecodable_line(data, start)
        raise InputError(f"expected UTF-8 text, found undecodable {what} (binary or wrongly encoded file)",
                         path, line) from None
    trimmed = pc.ascii_trim_whitespace(raw)
    non_blank = pc.greater(pc.binary_length(trimmed), 0)
    if pc.all(non_blank).as_py() is not False:
        _check_line_limits(data, offsets, None, path)
        return _Lines(trimmed, LineNumbers(1))
    _check_line_limits(data, offsets, np.asarray(arrow_np.to_numpy(non_blank), dtype=bool), path)
    kept = np.flatnonzero(arrow_np.to_numpy(non_blank))
    return _Lines(trimmed.take(arrow_np.from_numpy(kept)), LineNumbers(0, kept + 1))


def _first_true(mask: pa.Array | pa.ChunkedArray) -> int | None:
    values = np.asarray(arrow_np.to_numpy(mask), dtype=bool)
    hits = np.flatnonzero(values)
    return int(hits[0]) if len(hits) else None


def _split_whitespace_columns(lines: _Lines, path: Path, n_columns: int, layout: str,
                              used: tuple[int, ...] = ()) -> list[pa.Array]:
    """The columns of a whitespace-separated file (split at ASCII whitespace, as trec_eval does); the ``used``
    ones are trimmed of Unicode whitespace (a no-break space...) at both ends, as CSV fields are."""
    fields = pc.ascii_split_whitespace(lines.text)
    counts = pc.list_value_length(fields)
    bad = _first_true(pc.not_equal(counts, n_columns))
    if bad is not None:
        found = counts[bad].as_py()
        raise _fail(f"expected {n_columns} whitespace-separated columns ({layout}), found {found}",
                    path, lines.numbers, bad)
    return [pc.utf8_trim_whitespace(pc.list_element(fields, i)) if i in used else pc.list_element(fields, i)
            for i in range(n_columns)]


# ----------------------------------------------------------------------------- CSV / TSV

def _unquote(values: pa.Array) -> pa.Array:
    quoted = pc.match_substring_regex(values, r'^".*"$')
    if not pc.any(quoted).as_py():
        return values
    inner = pc.replace_substring(pc.utf8_slice_codeunits(values, 1, -1), '""', '"')
    return pc.if_else(quoted, inner, values)


def _split_delimited(lines: _Lines, path: Path, delimiter: str) -> tuple[list[str], list[pa.Array], LineNumbers]:
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
            raise _fail(f"expected {len(header)} {name}-separated columns ({shown_header}), found {found}",
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


def _pick_columns(found: list[str], wanted: dict[str, tuple[str, ...]], path: Path,
                  header_line: int | None = None) -> dict[str, int]:
    """Index of each canonical column among ``found`` names (aliases, case-insensitive)."""
    lowered = [name.lower() for name in found]
    picked: dict[str, int] = {}
    for canonical, aliases in wanted.items():
        for alias in aliases:
            if alias in lowered and lowered.index(alias) not in picked.values():
                picked[canonical] = lowered.index(alias)
                break
    missing = [name for name in wanted if name not in picked]
    if missing:
        expected = ", ".join(f"{name} (or {', '.join(wanted[name][1:3])})" for name in wanted)
        raise InputError(f"missing column(s) {', '.join(missing)}: expected columns {expected}; "
                         f"found {', '.join(map(printable, found)) if found else 'no columns'}", path, header_line)
    return picked


# ----------------------------------------------------------------------------- value parsing

def _first_failing_row(values: pa.Array, convert: Callable[[pa.Array], object]) -> int:
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


def _no_nulls(values: pa.Array, name: str, path: Path, numbers: LineNumbers) -> None:
    if values.null_count:
        raise _fail(f"expected a value for {name}, found null/missing", path, numbers,
                    _first_true(pc.is_null(values)))


def _as_id(values: pa.Array | pa.ChunkedArray, name: str, path: Path, numbers: LineNumbers,
           keep_dictionary: bool = False) -> pa.Array:
    """Ids as strings: numbers become their decimal text, dictionaries are decoded unless
    ``keep_dictionary`` and they are int32-indexed, duplicate-free string dictionaries (then only the
    dictionary is UTF-8-checked)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):
        if keep_dictionary and _is_plain_string_dictionary(values):
            _no_nulls(values, name, path, numbers)
            try:
                values.dictionary.validate(full=True)
            except pa.ArrowInvalid:
                pass  # fall through: decode and name the first bad row
            else:
                return values
        values = values.dictionary_decode()
    _no_nulls(values, name, path, numbers)
    if pa.types.is_string(values.type):
        try:  # parquet string pages are not UTF-8-checked on read; a damaged one must not reach Python
            values.validate(full=True)
        except pa.ArrowInvalid:
            raise _fail(f"expected UTF-8 text for {name}", path, numbers,
                        _first_failing_row(values, lambda part: part.validate(full=True))) from None
        return values
    _check_id_type(values.type, name, path, numbers)
    if pa.types.is_floating(values.type):
        return _float_ids_as_text(values, name, path, numbers)
    try:
        return values.cast(pa.string())
    except pa.ArrowInvalid:
        raise _fail(f"expected UTF-8 text for {name}", path, numbers,
                    _first_failing_row(values, lambda part: part.cast(pa.string()))) from None


def _check_id_type(arrow_type: pa.DataType, name: str, path: Path, numbers: LineNumbers) -> None:
    """Ids are text, integers or (pandas' doing) floats; a list, struct, date... column is refused at its first
    row (every row of a typed column has that type)."""
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if not (pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
            or pa.types.is_string_view(arrow_type) or pa.types.is_binary(arrow_type)
            or pa.types.is_large_binary(arrow_type) or pa.types.is_integer(arrow_type)
            or pa.types.is_floating(arrow_type)):
        raise _fail(f"expected column {name} to hold strings or integers, found {arrow_type}", path, numbers, 0)


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
    bad = _first_true(pc.invert(pc.is_finite(values)))
    if bad is not None:
        raise _fail(f"expected a {name}, found {values[bad].as_py()!r}", path, numbers, bad)
    bad = _first_true(pc.greater_equal(pc.abs(values), arrow_np.scalar(2.0**53, pa.float64())))
    if bad is not None:
        raise _fail(f"expected {name}s stored as text or integers: {values[bad].as_py()!r} is a float beyond 2^53, "
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
    _no_nulls(values, name, path, numbers)
    return values


def _as_scores(values: pa.Array | pa.ChunkedArray, path: Path, numbers: LineNumbers) -> pa.Array:
    """Scores as finite float64; text is parsed, NaN / inf / overflow (1e309) are rejected."""
    values = _decoded_without_nulls(values, "score", path, numbers)
    text = values if pa.types.is_string(values.type) or pa.types.is_large_string(values.type) else None
    if text is None and not (pa.types.is_floating(values.type) or pa.types.is_integer(values.type)
                             or pa.types.is_decimal(values.type)):
        raise _fail(f"expected a numeric score column, found {values.type}", path, numbers, 0)
    try:
        scores = values.cast(pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        row = _first_failing_row(values, lambda part: part.cast(pa.float64()))
        raise _fail(f"expected a number for score, found {_shown(values[row].as_py())}",
                    path, numbers, row) from None
    bad = _first_true(pc.invert(pc.is_finite(scores)))
    if bad is not None:
        found = values[bad].as_py()
        raise _fail(f"expected a finite score, found {_shown(found)}"
                    + (" (overflows float64)" if text is not None and str(found).strip().lower()
                       not in ("nan", "inf", "-inf", "+inf", "infinity", "-infinity", "+infinity") else ""),
                    path, numbers, bad)
    return scores


def _as_grades(values: pa.Array | pa.ChunkedArray, path: Path, numbers: LineNumbers) -> pa.Array:
    """Relevance grades as int64 >= 0; "2" and "2.0" are accepted, "1.5", "abc", "-1" are not."""
    values = _decoded_without_nulls(values, "relevance", path, numbers)
    expected = "expected a non-negative integer relevance grade"
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        bad = _first_true(pc.invert(pc.match_substring_regex(values, _GRADE_PATTERN)))
        if bad is not None:
            raise _fail(f"{expected}, found {_shown(values[bad].as_py())}", path, numbers, bad)
        digits = pc.replace_substring_regex(pc.replace_substring_regex(values, r"\.0*$", ""), r"^\+", "")
        try:
            grades = digits.cast(pa.int64())
        except pa.ArrowInvalid:
            row = _first_failing_row(digits, lambda part: part.cast(pa.int64()))
            raise _fail(f"{expected} that fits in 64 bits, found {_shown(values[row].as_py())}",
                        path, numbers, row) from None
    elif pa.types.is_integer(values.type) or pa.types.is_boolean(values.type):
        if pa.types.is_uint64(values.type):  # above 2^63 - 1 no int64 holds it
            bad = _first_true(pc.greater(values, arrow_np.scalar(2**63 - 1, pa.uint64())))
            if bad is not None:
                raise _fail(f"{expected} that fits in 64 bits, found {values[bad].as_py()}", path, numbers, bad)
        grades = values.cast(pa.int64())
    elif pa.types.is_floating(values.type):
        integral = pc.and_(pc.is_finite(values), pc.equal(pc.floor(values), values))
        bad = _first_true(pc.invert(integral))
        if bad is not None:
            raise _fail(f"{expected}, found {values[bad].as_py()!r}", path, numbers, bad)
        bad = _first_true(pc.greater_equal(pc.abs(values.cast(pa.float64())), arrow_np.scalar(2.0**63, pa.float64())))
        if bad is not None:  # 1e30, 9.3e18: integral, but no int64 holds them
            raise _fail(f"{expected} that fits in 64 bits, found {values[bad].as_py()!r}", path, numbers, bad)
        grades = values.cast(pa.int64())
    else:
        raise _fail(f"expected an integer relevance column, found {values.type}", path, numbers, 0)
    bad = _first_true(pc.less(grades, arrow_np.scalar(0, pa.int64())))
    if bad is not None:
        raise _fail(f"{expected}, found {grades[bad].as_py()}", path, numbers, bad)
    return grades


# ----------------------------------------------------------------------------- run validation

def _pair_codes(table: pa.Table) -> np.ndarray:
    """One int64 per row identifying its (qid, docid) pair (hash-based dictionary codes)."""
    qid_codes = pc.dictionary_encode(table["qid"]).combine_chunks()
    doc_codes = pc.dictionary_encode(table["docid"]).combine_chunks()
    n_docs = max(len(doc_codes.dictionary), 1)
    return (arrow_np.to_numpy(qid_codes.indices).astype(np.int64) * n_docs
            + arrow_np.to_numpy(doc_codes.indices).astype(np.int64))


def _has_repeated_pairs(table: pa.Table) -> bool:
    """Cheap check: False means every (qid, docid) is unique; True may be a (rare) hash collision."""
    docids = table.column("docid").combine_chunks()
    hashes = string_hashes(docids)
    if hashes is None:
        distinct = table.select(["qid", "docid"]).group_by(["qid", "docid"]).aggregate([]).num_rows
        return distinct < table.num_rows
    qid_codes = arrow_np.to_numpy(pc.dictionary_encode(table.column("qid")).combine_chunks().indices)
    hashes ^= qid_codes.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    hashes.sort()
    return bool((hashes[1:] == hashes[:-1]).any())


def check_unique_pairs(table: pa.Table, path: str | Path, numbers: LineNumbers, what: str = "run") -> None:
    """Raise InputError at the second occurrence of a (qid, docid) pair, naming the first."""
    if table.num_rows < 2 or not _has_repeated_pairs(table):
        return
    pair_codes = _pair_codes(table)
    _, first_rows, inverse = np.unique(pair_codes, return_index=True, return_inverse=True)
    repeated = np.flatnonzero(first_rows[inverse] != np.arange(table.num_rows))
    if len(repeated) == 0:  # the cheap check hit a hash collision
        return
    row = int(repeated[0])
    first_row = int(first_rows[inverse[row]])
    qid, docid = table["qid"][row].as_py(), table["docid"][row].as_py()
    raise _fail(f"duplicate document {_shown(docid)} for query {_shown(qid)} (first on line "
                f"{numbers.of(first_row)}): expected each (qid, docid) at most once in a {what}",
                path, numbers, row)


def apply_maxp(run: pa.Table) -> pa.Table:
    """CRUMB MaxP: ``docid:chunk`` -> ``docid`` (split at the last ':'), score = max over chunks.

    A document keeps the input position of its first chunk.
    """
    documents = pc.list_element(pc.split_pattern(run["docid"], ":", max_splits=1, reverse=True), 0)
    positions = arrow_np.from_numpy(np.arange(run.num_rows, dtype=np.int64))
    grouped = pa.table({"qid": run["qid"], "docid": documents, "score": run["score"], "position": positions}) \
        .group_by(["qid", "docid"], use_threads=False) \
        .aggregate([("score", "max"), ("position", "min")])
    order = pc.sort_indices(grouped["position_min"])
    result = grouped.take(order)
    return pa.table({"qid": result["qid"], "docid": result["docid"], "score": result["score_max"]},
                    schema=RUN_SCHEMA)


# ----------------------------------------------------------------------------- run readers

def _canonical_run(qids: pa.Array, docids: pa.Array, scores: pa.Array, path: Path,
                   numbers: LineNumbers, keep_qid_dictionary: bool = False) -> pa.Table:
    qid = _as_id(qids, "qid", path, numbers, keep_dictionary=keep_qid_dictionary)
    return pa.table({"qid": qid, "docid": _as_id(docids, "docid", path, numbers),
                     "score": _as_scores(scores, path, numbers)},
                    schema=DICTIONARY_QID_RUN_SCHEMA if pa.types.is_dictionary(qid.type) else RUN_SCHEMA)


def _require_rows(n_rows: int, path: Path, what: str) -> None:
    if n_rows == 0:
        raise InputError(f"empty file: expected at least one {what} row", path)


def _read_trec_run(path: Path) -> tuple[pa.Table, LineNumbers]:
    lines = _read_lines(path)
    _require_rows(len(lines.text), path, "run")
    qids, _, docids, _, scores, _ = _split_whitespace_columns(lines, path, 6, _TREC_RUN_LAYOUT, (0, 2, 4))
    return _canonical_run(qids, docids, scores, path, lines.numbers), lines.numbers


def _read_delimited_table(path: Path, delimiter: str, names: dict[str, tuple[str, ...]],
                          what: str) -> tuple[dict[str, pa.Array], LineNumbers]:
    lines = _read_lines(path)
    header, columns, numbers = _split_delimited(lines, path, delimiter)
    picked = _pick_columns(header, names, path, lines.numbers.of(0))
    _require_rows(len(columns[0]) if columns else 0, path, what)
    return {name: columns[index] for name, index in picked.items()}, numbers


def _read_jsonl_table(path: Path, names: dict[str, tuple[str, ...]],
                      what: str) -> tuple[dict[str, pa.Array], LineNumbers]:
    """Columns of a JSON-lines file (one object per non-blank line), parsed by pyarrow."""
    import pyarrow.json as pajson

    lines = _read_lines(path)
    _require_rows(len(lines.text), path, what)
    longest = int(pc.max(pc.binary_length(lines.text)).as_py())
    joined = pc.binary_join_element_wise(lines.text, "", "\n")
    body = _concatenated_values(joined)
    try:
        table = pajson.read_json(pa.BufferReader(body), read_options=pajson.ReadOptions(
            use_threads=True, block_size=max(1 << 20, 2 * longest + 2)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise _locate_json_error(lines, path, names, exc) from None
    if table.num_rows != len(lines.text):
        raise _locate_json_error(lines, path, names, None)
    picked = _pick_columns(table.column_names, names, path)
    return {name: table.column(index) for name, index in picked.items()}, lines.numbers


def _concatenated_values(strings: pa.Array | pa.ChunkedArray) -> pa.Buffer:
    """The bytes of all values of a string array back to back, as a zero-copy buffer slice."""
    if isinstance(strings, pa.ChunkedArray):
        strings = strings.combine_chunks()
    offset_type = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    offsets = np.frombuffer(strings.buffers()[1], dtype=offset_type)[strings.offset: strings.offset + len(strings) + 1]
    data = strings.buffers()[2]
    if data is None or len(offsets) == 0:
        return pa.py_buffer(b"")
    return data.slice(int(offsets[0]), int(offsets[-1]) - int(offsets[0]))


def _locate_json_error(lines: _Lines, path: Path, names: dict[str, tuple[str, ...]],
                       exc: Exception | None) -> InputError:
    """Slow path, only on error: find the first line that is not one JSON object of consistent types."""
    value_kinds: dict[str, tuple[type, int]] = {}
    for row in range(len(lines.text)):
        text = lines.text[row].as_py()
        try:
            record = json.loads(text, object_pairs_hook=_json_object_once_per_key,
                                parse_float=_json_finite_number, parse_int=_json_finite_number)
        except _JsonValueProblem as problem:
            return _fail(str(problem), path, lines.numbers, row)
        except ValueError as error:
            return _fail(f"expected one JSON object per line ({error.msg} at column {error.colno})",
                         path, lines.numbers, row)
        if not isinstance(record, dict):
            return _fail(f"expected one JSON object per line, found {type(record).__name__}",
                         path, lines.numbers, row)
        for key, value in record.items():
            kind = str if isinstance(value, str) else (int if isinstance(value, (int, float))
                                                       and not isinstance(value, bool) else type(value))
            seen = value_kinds.setdefault(key, (kind, lines.numbers.of(row)))
            if seen[0] is not kind and value is not None:
                return _fail(f"expected {key!r} to be a {seen[0].__name__} as on line {seen[1]}, "
                             f"found {_shown(value)}", path, lines.numbers, row)
    return InputError(f"expected one JSON object per line ({one_line(exc)})", path)


class _JsonValueProblem(ValueError):
    """A JSON line Python parses but pyarrow rejects (a repeated key, a number beyond float64)."""


def _json_object_once_per_key(pairs: list[tuple[str, object]]) -> dict:
    record = dict(pairs)
    if len(record) != len(pairs):
        repeated = next(key for i, (key, _) in enumerate(pairs) if key in dict(pairs[:i]))
        raise _JsonValueProblem(f"expected each key once per JSON object, found {_shown(repeated)} twice")
    return record


def _json_finite_number(text: str) -> float:
    try:
        value = float(text)
    except OverflowError:  # an integer literal beyond float64
        value = math.inf
    if not math.isfinite(value):
        raise _JsonValueProblem(f"expected a number within float64 range, found {_shown(text)} (overflows float64)")
    return value


_MIN_DECODED_ROW_BYTES = 16  # a row of two ids (4-byte offsets at least) and an 8-byte number, decoded


def _read_parquet_table(path: Path, names: dict[str, tuple[str, ...]], what: str) -> dict[str, pa.Array]:
    """The picked columns of a parquet file read whole, within the input size limit counted on the decoded
    columns (pages are compressed and strings dictionary-encoded: a 3 MB file can decode to gigabytes). The
    row count refuses an obvious bomb before anything is read; the batches read are counted as they come."""
    parquet_file = _open_parquet(path)
    picked = _pick_parquet_columns(parquet_file, names, path)
    max_bytes = INPUT_BYTES.value()
    if max_bytes is not None and parquet_file.metadata.num_rows * _MIN_DECODED_ROW_BYTES > max_bytes:
        raise INPUT_BYTES.exceeded(max_bytes, path)
    try:
        if max_bytes is None:
            table = parquet_file.read(columns=list(picked.values()))
        else:
            batches, decoded = [], 0
            for batch in parquet_file.iter_batches(batch_size=1 << 20, columns=list(picked.values())):
                decoded += batch.nbytes
                if decoded > max_bytes:
                    raise INPUT_BYTES.exceeded(max_bytes, path)
                batches.append(batch)
            schema = parquet_file.schema_arrow
            table = pa.Table.from_batches(batches, schema=pa.schema([schema.field(c) for c in picked.values()]))
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"corrupt parquet file: expected readable column data ({one_line(exc)})", path) from None
    _require_rows(table.num_rows, path, what)
    return {name: table.column(source) for name, source in picked.items()}


def _open_parquet(path: Path):
    import pyarrow.parquet as pq

    if not path.exists():
        raise InputError("file not found", path)
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:  # a damaged footer's key-value text too
        raise InputError(f"expected a parquet file, cannot read its footer ({one_line(exc)})", path) from None


def _pick_parquet_columns(parquet_file, names: dict[str, tuple[str, ...]], path: Path) -> dict[str, str]:
    found = parquet_file.schema_arrow.names
    return {name: found[index] for name, index in _pick_columns(found, names, path).items()}


def _read_run_columns(path: Path, fmt: str) -> tuple[pa.Table, LineNumbers]:
    if fmt == "trec":
        return _read_trec_run(path)
    columns, numbers = _read_named_columns(path, fmt, RUN_COLUMN_NAMES, "run")
    return _canonical_run(columns["qid"], columns["docid"], columns["score"], path, numbers), numbers


def _read_named_columns(path: Path, fmt: str, names, what: str) -> tuple[dict[str, pa.Array], LineNumbers]:
    """The named columns (aliases accepted) of a parquet, JSON-lines, CSV or TSV run or qrels file, with the
    line number of each row."""
    if fmt == "parquet":
        return _read_parquet_table(path, names, what), LineNumbers(1)
    if fmt == "jsonl":
        return _read_jsonl_table(path, names, what)
    return _read_delimited_table(path, "," if fmt == "csv" else "\t", names, what)


def read_run(path: str | Path, *, fmt: str | None = None, maxp: bool = False) -> pa.Table:
    """Read a run as ``qid, docid, score`` in input order, validated (see module docstring).

    ``maxp=True`` maps ``docid:chunk`` ids to documents scored by their best chunk.
    """
    path = Path(path)
    fmt = _checked_format(fmt, path, detect_run_format)
    run, numbers = _read_run_columns(path, fmt)
    check_unique_pairs(run, path, numbers)
    return apply_maxp(run) if maxp else run


def read_run_rows(path: str | Path, *, name: str | None = None, group_column: str | None = None
                  ) -> tuple[pa.Table, pa.Array | None, LineNumbers]:
    """A run as :func:`read_run` reads and checks it (no pair check: the caller checks per group), the physical
    line of every row, and optionally one more id column ``group_column`` (e.g. ``task``; parquet, CSV, TSV or
    JSON lines only: a TREC run has no room for it). ``name``: the file's own name when ``path`` has none to
    detect the format from (an in-memory upload at ``/proc/self/fd/N``): parquet by its magic, else the
    name's extension (``.gz`` stripped), else sniffed."""
    path = Path(path)
    fmt = detect_run_format(path)
    if name is not None and Path(name).name != path.name and fmt != "parquet":
        fmt = _EXTENSION_FORMATS.get(_strip_gz(Path(name)).suffix.lower()) or fmt
    if group_column is None:
        run, numbers = _read_run_columns(path, fmt)
        return run, None, numbers
    if fmt == "trec":
        raise InputError(f"expected a {group_column} column: a TREC run has none (use parquet, CSV, TSV or JSON "
                         f"lines with columns {group_column}, qid, docid, score)", path)
    columns, numbers = _read_named_columns(path, fmt, {group_column: (group_column,), **RUN_COLUMN_NAMES}, "run")
    run = _canonical_run(columns["qid"], columns["docid"], columns["score"], path, numbers)
    return run, _as_id(columns[group_column], group_column, path, numbers), numbers


# ----------------------------------------------------------------------------- query-aligned chunks

def qid_run_starts(qids: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Row indices where a new run of equal qids begins (always includes 0)."""
    if len(qids) == 0:
        return np.zeros(0, dtype=np.int64)
    if pa.types.is_dictionary(qids.type):
        codes = _dictionary_codes(qids)
        if codes is not None:
            return np.concatenate(([0], np.flatnonzero(codes[1:] != codes[:-1]) + 1))
        qids = qids.cast(qids.type.value_type)
    changed = pc.not_equal(qids.slice(1), qids.slice(0, len(qids) - 1))
    return np.concatenate(([0], np.flatnonzero(np.asarray(arrow_np.to_numpy(changed), bool)) + 1))


def _dictionary_codes(qids: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
    """int64 codes (null -> -1) of a dictionary column whose chunks share one duplicate-free dictionary;
    None otherwise."""
    chunks = qids.chunks if isinstance(qids, pa.ChunkedArray) else [qids]
    if not chunks:
        return np.zeros(0, dtype=np.int64)
    dictionary = chunks[0].dictionary
    if any(not chunk.dictionary.equals(dictionary) for chunk in chunks[1:]) \
            or pc.count_distinct(dictionary, mode="all").as_py() != len(dictionary):
        return None
    return np.concatenate([arrow_np.to_numpy_filled(chunk.indices, -1).astype(np.int64) for chunk in chunks])


def _chunk_ends(run_starts: np.ndarray, n_rows: int, chunk_rows: int) -> list[int]:
    """Cut points at qid boundaries, each chunk at most chunk_rows unless one query is bigger."""
    ends: list[int] = []
    position = 0
    while position < n_rows:
        target = position + chunk_rows
        if target >= n_rows:
            end = n_rows
        else:
            index = int(np.searchsorted(run_starts, target, side="right")) - 1
            end = int(run_starts[index])
            if end <= position:  # one query larger than chunk_rows: take it whole
                index = int(np.searchsorted(run_starts, position, side="right"))
                end = int(run_starts[index]) if index < len(run_starts) else n_rows
        ends.append(end)
        position = end
    return ends


def _group_by_qid(run: pa.Table) -> pa.Table:
    """Stable grouping: queries in order of first appearance, rows in input order within a query."""
    first_seen_codes = pc.dictionary_encode(run["qid"]).combine_chunks().indices
    return run.take(pc.sort_indices(first_seen_codes, sort_keys=[("", "ascending")]))


def _chunks_of_table(run: pa.Table, chunk_rows: int, path: Path | None = None) -> Iterator[pa.Table]:
    starts = qid_run_starts(run["qid"])
    if len(starts) != pc.count_distinct(run["qid"]).as_py():
        run = _group_by_qid(run)
        starts = qid_run_starts(run["qid"])
    _check_query_sizes(run["qid"], starts, path, None)  # grouped: rows are no longer lines
    position = 0
    for end in _chunk_ends(starts, run.num_rows, chunk_rows):
        yield run.slice(position, end - position).combine_chunks()
        position = end


def _query_rows_exceeded(qid: object, path: Path | None, line: int | None) -> InputError:
    limit = QUERY_ROWS.value()
    return InputError(f"query {_shown(qid)}: more than {limit:,} {QUERY_ROWS.unit} ({QUERY_ROWS.name}; raise "
                      f"{QUERY_ROWS.variable} to read it, 0 = no limit)", path, line)


def _check_query_sizes(qids: pa.Array | pa.ChunkedArray, starts: np.ndarray, path: Path | None,
                       numbers: LineNumbers | None) -> None:
    """Refuse a query with more rows than :data:`QUERY_ROWS` (``starts``: where each query's rows begin);
    the line named is its first row's, when ``numbers`` maps rows to lines."""
    limit = QUERY_ROWS.value()
    if limit is None or len(starts) == 0:
        return
    sizes = np.diff(np.append(starts, len(qids)))
    if sizes.max() > limit:
        first = int(starts[int(np.argmax(sizes))])
        qid = qids[first]
        qid = qid.value if isinstance(qid, pa.DictionaryScalar) else qid
        raise _query_rows_exceeded(qid.as_py(), path, None if numbers is None else numbers.of(first))


def _parquet_is_grouped(path: Path, qid_column: str) -> bool:
    """True when every qid's rows are contiguous; reads only the qid column, batch by batch.

    The column is read dictionary-encoded so no string is materialised per row.
    """
    import pyarrow.parquet as pq

    finished: set[object] = set()
    current: object = None
    parquet_file = pq.ParquetFile(path, read_dictionary=[qid_column])
    rows_before = 0
    for batch in parquet_file.iter_batches(batch_size=1 << 20, columns=[qid_column]):
        qids = batch.column(0)
        _no_nulls(qids, "qid", path, LineNumbers(rows_before + 1))
        rows_before += len(qids)
        if pa.types.is_dictionary(qids.type):
            codes = arrow_np.to_numpy(qids.indices)
            starts = np.concatenate(([0], np.flatnonzero(codes[1:] != codes[:-1]) + 1)) if len(codes) else codes
            run_values = qids.dictionary.take(arrow_np.from_numpy(codes[starts])) if len(codes) else qids.dictionary[:0]
        else:
            run_values = qids.take(arrow_np.from_numpy(qid_run_starts(qids)))
        for value in run_values.to_pylist():  # one object per query run, not per row
            if value == current:
                continue
            if value in finished:
                return False
            if current is not None:
                finished.add(current)
            current = value
    return True


def _stream_grouped_parquet(path: Path, parquet_file, picked: dict[str, str], maxp: bool,
                            chunk_rows: int, check_duplicates: bool = True,
                            qid_dictionary: bool = False, line_column: str | None = None) -> Iterator[pa.Table]:
    """Query-aligned chunks of a qid-grouped parquet file, validated chunk by chunk. ``line_column``
    names a column holding each row's line in the original file (a regrouped copy); otherwise lines
    are the file's own rows."""
    columns = list(picked.values()) + ([line_column] if line_column else [])
    pending: list[pa.Table] = []
    pending_rows = 0
    first_row = 0  # 0-based file row of pending[0]'s first row
    trailing_qid: pa.Scalar | None = None  # qid of the last pending row, once a cut was tried
    max_query = QUERY_ROWS.value()
    batches = _row_group_batches(parquet_file, min(chunk_rows, 1 << 18), columns)
    while True:
        try:
            batch = next(batches, None)
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"corrupt parquet file: expected readable column data ({one_line(exc)})",
                             path, first_row + pending_rows + 1) from None
        if batch is not None:
            continues_one_query = pending_rows >= chunk_rows and _only_value(batch.column(picked["qid"]), trailing_qid)
            pending.append(pa.Table.from_batches([batch]))
            pending_rows += batch.num_rows
            if continues_one_query and max_query is not None and pending_rows > max_query:  # before it is all read
                held = pa.concat_tables(pending)
                first = int(qid_run_starts(held[picked["qid"]].cast(pa.string()))[-1])  # the trailing query's
                line = int(held[line_column][first].as_py()) if line_column else first_row + first + 1
                raise _query_rows_exceeded(trailing_qid.as_py(), path, line)
            if pending_rows < chunk_rows or continues_one_query:  # a huge query: no new cut point yet
                continue
        if not pending:
            return
        combined = pa.concat_tables(pending)
        if qid_dictionary:
            combined = combined.unify_dictionaries()
        starts = qid_run_starts(combined[picked["qid"]])
        _check_query_sizes(combined[picked["qid"]], starts, path,
                           LineNumbers(0, arrow_np.to_numpy(combined[line_column])) if line_column
                           else LineNumbers(first_row + 1))
        ends = _chunk_ends(starts, combined.num_rows, chunk_rows)
        if batch is not None:
            ends = ends[:-1]  # the last chunk may hold a query that continues in the next batch
        position = 0
        for end in ends:
            part = combined.slice(position, end - position)
            lines = (LineNumbers(0, arrow_np.to_numpy(part[line_column])) if line_column
                     else LineNumbers(first_row + position + 1))
            yield _validated_chunk(part, picked, path, lines, maxp, check_duplicates, qid_dictionary)
            position = end
        first_row += position
        if batch is None:
            return
        pending = [combined.slice(position)]
        pending_rows = combined.num_rows - position
        trailing_qid = combined[picked["qid"]][combined.num_rows - 1]
        if isinstance(trailing_qid, pa.DictionaryScalar):
            trailing_qid = trailing_qid.value


def _row_group_batches(parquet_file, batch_size: int, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """Batches of one row group at a time: a single ``iter_batches`` over the whole file keeps
    allocator memory growing with the file (measured ~7 bytes/row at 100M rows); per row group it stays flat."""
    for row_group in range(parquet_file.metadata.num_row_groups):
        yield from parquet_file.iter_batches(batch_size=batch_size, columns=columns, row_groups=[row_group])


def _only_value(values: pa.Array, value: pa.Scalar | None) -> bool:
    """True when every entry of ``values`` equals ``value``."""
    if value is None or len(values) == 0:
        return False
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if values.type != value.type:
        return False
    return bool(pc.all(pc.equal(values, value)).as_py())


UNCHECKED_PAIRS_KEY = b"evalcore.unchecked_pairs_first_line"


def _validated_chunk(raw: pa.Table, picked: dict[str, str], path: Path, numbers: LineNumbers,
                     maxp: bool, check_duplicates: bool = True, qid_dictionary: bool = False) -> pa.Table:
    chunk = _canonical_run(raw[picked["qid"]], raw[picked["docid"]], raw[picked["score"]], path, numbers,
                           keep_qid_dictionary=qid_dictionary and not check_duplicates and not maxp)
    if check_duplicates or maxp:
        check_unique_pairs(chunk, path, numbers)
        return apply_maxp(chunk) if maxp else chunk
    # the caller checks (qid, docid) uniqueness itself; keep what it needs to name the line
    return chunk.replace_schema_metadata({UNCHECKED_PAIRS_KEY: str(numbers.first).encode()})


def raise_duplicate_pairs(chunk: pa.Table, path: str | Path) -> None:
    """For a chunk streamed with ``check_duplicates=False``: raise the exact duplicate error (file and
    line of the repeated row); returns quietly when the suspected duplicate was a hash collision."""
    metadata = chunk.schema.metadata or {}
    first_line = int(metadata.get(UNCHECKED_PAIRS_KEY, b"1"))
    if pa.types.is_dictionary(chunk.schema.field("qid").type):
        chunk = chunk.set_column(0, "qid", chunk["qid"].cast(pa.string()))
    check_unique_pairs(chunk.replace_schema_metadata(None), path, LineNumbers(first_line))


def iter_run_chunks(path: str | Path, *, fmt: str | None = None, maxp: bool = False,
                    chunk_rows: int = 1_000_000, check_duplicates: bool = True) -> Iterator[pa.Table]:
    """Yield a run in query-aligned chunks of about ``chunk_rows`` rows.

    Every qid's rows are in exactly one chunk, contiguous and in input order. A parquet file
    grouped by qid is streamed (memory independent of file size) and validated chunk by chunk, so
    an error in a late row surfaces only when its chunk is reached; an ungrouped parquet file or a
    text format is read and validated whole, then grouped stably (queries in first-seen order).
    Opening, format and column errors are raised at call time, not at the first ``next``.
    ``check_duplicates=False`` lets a caller that hashes document ids anyway (the engine) check
    (qid, docid) uniqueness of streamed chunks itself; such chunks carry ``UNCHECKED_PAIRS_KEY``
    metadata and :func:`raise_duplicate_pairs` produces the exact error, and their string qids stay
    dictionary-encoded (``DICTIONARY_QID_RUN_SCHEMA``: one duplicate-free dictionary per chunk).
    """
    if chunk_rows < 1:
        raise ValueError("chunk_rows must be >= 1")
    path = Path(path)
    fmt = _checked_format(fmt, path, detect_run_format)
    if fmt == "parquet":
        parquet_file = _open_parquet(path)
        picked = _pick_parquet_columns(parquet_file, RUN_COLUMN_NAMES, path)
        _require_rows(parquet_file.metadata.num_rows, path, "run")
        for name in ("qid", "docid"):  # before reading qids dictionary-encoded (a list column has no such path)
            _check_id_type(parquet_file.schema_arrow.field(picked[name]).type, name, path, LineNumbers(1))
        try:
            grouped = _parquet_is_grouped(path, picked["qid"])
        except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:  # damaged pages, invalid UTF-8 ids
            raise InputError(f"corrupt parquet file: expected readable column data ({one_line(exc)})", path) from None
        if grouped:
            return _stream_parquet_file(path, path, parquet_file, picked, maxp, chunk_rows, check_duplicates)
        if parquet_file.metadata.num_rows > GROUP_IN_MEMORY_MAX_ROWS:
            return _stream_regrouped_parquet(path, picked, maxp, chunk_rows, check_duplicates)
    return _chunks_of_table(read_run(path, fmt=fmt, maxp=maxp), chunk_rows, path)


# an ungrouped parquet run above this many rows is regrouped by DuckDB with bounded memory (spilling to
# disk) instead of being read whole: grouping in memory costs ~150 bytes per row
GROUP_IN_MEMORY_MAX_ROWS = 2_000_000
_REGROUP_MEMORY_LIMIT = "600MB"
_LINE_COLUMN = "__evalcore_line"


def _stream_parquet_file(path: Path, source: Path, parquet_file, picked: dict[str, str], maxp: bool,
                         chunk_rows: int, check_duplicates: bool, line_column: str | None = None) -> Iterator[pa.Table]:
    """Stream the grouped parquet ``source``, already open as ``parquet_file`` (``path`` names the user's
    file in messages). On the engine's path (it checks pairs itself) string qids stay dictionary-encoded,
    which skips decoding them row by row (parquet stores the few distinct qids of a page as a dictionary)."""
    import pyarrow.parquet as pq

    qid_dictionary = (not check_duplicates and not maxp
                      and pa.types.is_string(parquet_file.schema_arrow.field(picked["qid"]).type))
    if qid_dictionary:
        parquet_file = pq.ParquetFile(source, read_dictionary=[picked["qid"]])
    return _stream_grouped_parquet(path, parquet_file, picked, maxp, chunk_rows, check_duplicates,
                                   qid_dictionary, line_column)


def _quoted(identifier: str) -> str:
    """A SQL identifier (a column name read from the file's own schema) as a quoted DuckDB identifier."""
    return '"' + identifier.replace('"', '""') + '"'


def _stream_regrouped_parquet(path: Path, picked: dict[str, str], maxp: bool, chunk_rows: int,
                              check_duplicates: bool) -> Iterator[pa.Table]:
    """An ungrouped parquet run, grouped out of core: DuckDB sorts it (queries in first-seen order, rows in
    file order) into a temporary parquet file under a memory limit, spilling to disk; that copy, which
    carries each row's original line, is then streamed like a grouped file and deleted afterwards. A copy
    that cannot be written (TMPDIR full, missing or unwritable) is one OutputError naming TMPDIR."""
    import duckdb
    import pyarrow.parquet as pq

    from evalcore.outputs import writing

    temporary_root = tempfile.gettempdir()
    what = f"the temporary copy that groups {path.name} by query (set TMPDIR to a folder with room for it)"
    with writing(temporary_root, what):
        workdir_handle = tempfile.TemporaryDirectory(prefix="evalcore-regroup-")
        workdir = workdir_handle.name
    with workdir_handle:
        copy = Path(workdir) / "grouped.parquet"
        connection = duckdb.connect(config={"memory_limit": _REGROUP_MEMORY_LIMIT, "temp_directory": workdir,
                                            "preserve_insertion_order": False})
        qid, docid, score = (_quoted(picked[name]) for name in ("qid", "docid", "score"))
        sql = f"""
            WITH run AS (SELECT {qid} AS q, {docid} AS d, {score} AS s, file_row_number AS r
                         FROM read_parquet($path, file_row_number = true)),
                 first_seen AS (SELECT q, min(r) AS f FROM run GROUP BY q)
            SELECT run.q AS {qid}, run.d AS {docid}, run.s AS {score}, run.r + 1 AS {_quoted(_LINE_COLUMN)}
            FROM run JOIN first_seen USING (q) ORDER BY first_seen.f, run.r"""
        try:
            with writing(temporary_root, what, duckdb_errors=False):  # pyarrow's copy: an OSError is TMPDIR's
                reader = connection.sql(sql, params={"path": str(path)}).to_arrow_reader(1 << 18)
                with pq.ParquetWriter(copy, reader.schema) as writer:
                    for batch in reader:
                        writer.write_batch(batch)
        except duckdb.Error as exc:
            text = one_line(exc)
            if isinstance(exc, (duckdb.IOException, duckdb.OutOfMemoryException)) and (
                    workdir in text or "space" in text.lower() or "write" in text.lower()):  # spilling failed
                raise OutputError(f"cannot write {what}: {text}", temporary_root) from None
            raise InputError(f"corrupt parquet file: expected readable column data ({text})", path) from None
        finally:
            connection.close()
        yield from _stream_parquet_file(path, copy, pq.ParquetFile(copy), picked, maxp, chunk_rows, check_duplicates,
                                        _LINE_COLUMN)


# ----------------------------------------------------------------------------- qrels

def read_qrels(path: str | Path, *, fmt: str | None = None) -> pa.Table:
    """Read qrels as ``qid, docid, relevance`` (int64 >= 0) in input order.

    Exact duplicate judgements are collapsed to their first occurrence; conflicting grades for one
    (qid, docid) are an error.
    """
    path = Path(path)
    fmt = _checked_format(fmt, path, detect_qrels_format)
    if fmt == "trec":
        lines = _read_lines(path)
        _require_rows(len(lines.text), path, "qrels")
        qids, _, docids, grades = _split_whitespace_columns(lines, path, 4, _TREC_QRELS_LAYOUT, (0, 2, 3))
        columns, numbers = {"qid": qids, "docid": docids, "relevance": grades}, lines.numbers
    else:
        columns, numbers = _read_named_columns(path, fmt, QRELS_COLUMN_NAMES, "qrels")
    return _qrels_from_columns(columns, path, numbers)


def _qrels_from_columns(columns: dict[str, pa.Array], path: Path, numbers: LineNumbers) -> pa.Table:
    qrels = pa.table({"qid": _as_id(columns["qid"], "qid", path, numbers),
                      "docid": _as_id(columns["docid"], "docid", path, numbers),
                      "relevance": _as_grades(columns["relevance"], path, numbers)}, schema=QRELS_SCHEMA)
    return _deduplicated_qrels(qrels, path, numbers)


def _deduplicated_qrels(qrels: pa.Table, path: Path, numbers: LineNumbers) -> pa.Table:
    if qrels.num_rows < 2 or not _has_repeated_pairs(qrels):
        return qrels
    pair_codes = _pair_codes(qrels)
    _, first_rows, inverse = np.unique(pair_codes, return_index=True, return_inverse=True)
    grades = arrow_np.to_numpy(qrels["relevance"])
    conflicting = np.flatnonzero(grades != grades[first_rows[inverse]])
    if len(conflicting):
        row = int(conflicting[0])
        first_row = int(first_rows[inverse[row]])
        raise _fail(f"conflicting grades for document {_shown(qrels['docid'][row].as_py())} of query "
                    f"{_shown(qrels['qid'][row].as_py())}: {grades[row]} here, {grades[first_row]} on line "
                    f"{numbers.of(first_row)}; expected one grade per (qid, docid)", path, numbers, row)
    return qrels.take(arrow_np.from_numpy(np.sort(first_rows)))


# ----------------------------------------------------------------------------- in-memory tables

def _require_columns(table: pa.Table, wanted: dict[str, tuple[str, ...]], source: str) -> dict[str, pa.ChunkedArray]:
    picked = _pick_columns(table.column_names, wanted, Path(source))
    return {name: table.column(index) for name, index in picked.items()}


def validate_run(table_or_df, source: str = "<run table>") -> pa.Table:
    """An in-memory run (pa.Table / DataFrame) cast to ``RUN_SCHEMA`` and validated like a file.

    Errors name ``source`` and the 1-based row as the line. Column aliases are accepted.
    """
    path = Path(source)
    columns = _require_columns(_as_arrow(table_or_df), RUN_COLUMN_NAMES, source)
    run = _canonical_run(columns["qid"], columns["docid"], columns["score"], path, LineNumbers(1))
    check_unique_pairs(run, path, LineNumbers(1))
    return run


def validate_qrels(table_or_df, source: str = "<qrels table>") -> pa.Table:
    """In-memory qrels cast to ``QRELS_SCHEMA``, validated and de-duplicated like a file."""
    path = Path(source)
    columns = _require_columns(_as_arrow(table_or_df), QRELS_COLUMN_NAMES, source)
    return _qrels_from_columns(columns, path, LineNumbers(1))


# ----------------------------------------------------------------------------- writers

@contextmanager
def atomic_path(path: str | Path, what: str = "file") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` atomically.

    On any exception (KeyboardInterrupt included) the temporary file is removed and ``path`` is left
    untouched. The temporary name ends in ``.tmp`` so globs like ``*.parquet`` never see it. A symlink is
    written through (its target is replaced, the link stays); a special file (a FIFO, ``/dev/stdout``) is
    written into from a temporary file in TMPDIR, never replaced; an I/O failure (full disk, unwritable
    folder...) is an :class:`~evalcore.errors.OutputError` naming ``path`` (see :mod:`evalcore.outputs`).
    """
    with atomic_paths([path], what) as (temporary,):
        yield temporary


@contextmanager
def atomic_paths(paths: list[str | Path], what: str | list[str] = "file") -> Iterator[list[Path]]:
    """:func:`atomic_path` for files that belong together (an importer's task_scores and systems; an ingested
    file and its derived sums, in that order): yields one temporary per path; on success every temporary gets
    its mode and is synced to disk first, and only then are they renamed into place, in order, one right after
    the other, so that a kill can split the set only between two ``rename`` calls. (Syncing each file just
    before its own rename left a disk flush between the renames: SIGKILL tests caught an import with its new
    systems file beside its old task_scores, and an ingested file without its sums.) On any
    exception every temporary is removed and no path is touched; an I/O failure names the path it concerns
    and its ``what`` (one for all paths, or one per path; the last path's for a failure while the caller
    writes)."""
    from evalcore import outputs

    whats = [what] * len(paths) if isinstance(what, str) else list(what)
    staged: list[tuple[Path, str, outputs.Target, Path]] = []  # (path, what, where it lands, temporary)
    try:
        for path, name in zip(map(Path, paths), whats, strict=True):
            with outputs.writing(path, name):
                target = outputs.write_target(path)
                if target.special:
                    handle, temporary_name = tempfile.mkstemp(prefix="evalcore-output-", suffix=".tmp")
                else:
                    target.file.parent.mkdir(parents=True, exist_ok=True)
                    handle, temporary_name = tempfile.mkstemp(prefix=f".{target.file.name[:200]}.",
                                                              suffix=".tmp", dir=target.file.parent)
                os.close(handle)
            staged.append((path, name, target, Path(temporary_name)))
        with outputs.writing(staged[-1][0], staged[-1][1]):
            yield [temporary for *_, temporary in staged]
        umask = os.umask(0)
        os.umask(umask)
        for path, name, target, temporary in staged:
            if not target.special:
                with outputs.writing(path, name):
                    os.chmod(temporary, 0o666 & ~umask)
                    with open(temporary, "rb") as written:
                        os.fsync(written.fileno())
        for path, name, target, temporary in staged:
            with outputs.writing(path, name):
                if target.special:
                    outputs.copy_into(temporary, target)
                    temporary.unlink()
                else:
                    os.replace(temporary, target.file)
    except BaseException:
        for *_, temporary in staged:
            temporary.unlink(missing_ok=True)
        raise


def _as_arrow(table_or_df) -> pa.Table:
    if isinstance(table_or_df, pa.Table):
        return table_or_df
    if isinstance(table_or_df, pa.RecordBatch):
        return pa.Table.from_batches([table_or_df])
    return pa.Table.from_pandas(table_or_df, preserve_index=False)


def write_parquet_atomic(table_or_df, path: str | Path, what: str = "file") -> None:
    """Write a pyarrow Table or pandas DataFrame to parquet via a temp file and rename (see
    :func:`atomic_path`; ``what`` names the output in an error: ``cannot write WHAT: REASON``)."""
    import pyarrow.parquet as pq

    table = _as_arrow(table_or_df)
    with atomic_path(path, what) as temporary:
        pq.write_table(table, temporary)


def _run_for_writing(table_or_df, path: Path) -> pa.Table:
    table = _as_arrow(table_or_df)
    missing = [name for name in RUN_SCHEMA.names if name not in table.column_names]
    if missing:
        raise ValueError(f"write_run needs columns qid, docid, score; missing {', '.join(missing)}")
    numbers = LineNumbers(1)
    return _canonical_run(table["qid"], table["docid"], table["score"], path, numbers)


def _ranks_by_score(run: pa.Table) -> pa.Array:
    """1-based rank of each row within its query by descending score (ties: input order)."""
    qid_codes = arrow_np.to_numpy(pc.dictionary_encode(run["qid"]).combine_chunks().indices)
    scores = arrow_np.to_numpy(run["score"])
    order = np.lexsort((np.arange(run.num_rows), -scores, qid_codes))
    sorted_codes = qid_codes[order]
    group_starts = np.flatnonzero(np.concatenate(([True], sorted_codes[1:] != sorted_codes[:-1])))
    group_sizes = np.diff(np.append(group_starts, run.num_rows))
    ranks_sorted = np.arange(run.num_rows) - np.repeat(group_starts, group_sizes) + 1
    ranks = np.empty(run.num_rows, dtype=np.int64)
    ranks[order] = ranks_sorted
    return arrow_np.from_numpy(ranks)


def _trec_text(run: pa.Table, tags: pa.Array | None, path: Path) -> pa.Array:
    for name in ("qid", "docid"):  # ids that would not read back as they are: a split or a trimmed id
        unreadable = pc.or_(pc.match_substring_regex(run[name], r"\s"), pc.equal(run[name], ""))
        bad = _first_true(pc.or_(unreadable, pc.not_equal(pc.utf8_trim_whitespace(run[name]), run[name])))
        if bad is not None:
            raise ValueError(f"cannot write {name} {run[name][bad].as_py()!r} (row {bad + 1}) to TREC text "
                             f"{path}: ids must be non-empty and contain no whitespace")
    tag = tags if tags is not None else pa.array(np.full(run.num_rows, "evalcore", dtype=object), pa.string())
    n_rows = run.num_rows
    q0 = pa.array(np.full(n_rows, "Q0", dtype=object), pa.string()) if n_rows else pa.array([], pa.string())
    return pc.binary_join_element_wise(
        run["qid"], q0, run["docid"], _ranks_by_score(run).cast(pa.string()),
        run["score"].cast(pa.string()), tag, " ")


def write_run(table, path: str | Path, *, fmt: str | None = None) -> None:
    """Write a run (``qid, docid, score`` [+ ``tag``]) atomically; format from ``fmt`` or extension.

    TREC text gets ``qid Q0 docid rank score tag`` lines in input order, rank by descending score.
    Scores are written with the shortest text that reads back to the same float64. A ``.gz`` name
    (``run.trec.gz``, ``run.jsonl.gz``) is gzip-compressed text, read back by :func:`read_run`; parquet
    compresses inside, so ``.parquet.gz`` is refused.
    """
    path = Path(path)
    compressed = path.suffix.lower() == ".gz"
    fmt = fmt.lower() if fmt else _EXTENSION_FORMATS.get(_strip_gz(path).suffix.lower(), "trec")
    fmt = _FORMAT_ALIASES.get(fmt, fmt)
    if fmt not in FORMATS:
        raise ValueError(f"unknown run format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if compressed and fmt == "parquet":
        raise ValueError("parquet compresses inside its file and no reader opens a gzipped one: name it "
                         ".parquet, not .parquet.gz")
    source = _as_arrow(table)
    run = _run_for_writing(source, path)
    if fmt == "parquet":
        write_parquet_atomic(run, path, "run")
        return
    with atomic_path(path, "run") as temporary:
        if fmt == "trec":
            tags = source["tag"].combine_chunks().cast(pa.string()) if "tag" in source.column_names else None
            _write_lines(_trec_text(run, tags, path), temporary, compressed)
        elif fmt in ("csv", "tsv"):
            import pyarrow.csv as pacsv

            options = pacsv.WriteOptions(delimiter="," if fmt == "csv" else "\t")
            if compressed:
                with pa.CompressedOutputStream(str(temporary), "gzip") as sink:
                    pacsv.write_csv(run, sink, options)
            else:
                pacsv.write_csv(run, temporary, options)
        else:
            _write_jsonl(run, temporary, compressed)


_WRITE_BLOCK_ROWS = 1 << 20


def _write_lines(lines: pa.Array, path: Path, compressed: bool = False) -> None:
    with open(path, "wb") as raw, (gzip.GzipFile("", "wb", 6, raw, mtime=0) if compressed else raw) as handle:
        for start in range(0, len(lines), _WRITE_BLOCK_ROWS):
            block = lines.slice(start, _WRITE_BLOCK_ROWS)
            handle.write(_concatenated_values(pc.binary_join_element_wise(block, "", "\n")))


def _write_jsonl(run: pa.Table, path: Path, compressed: bool = False) -> None:
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
