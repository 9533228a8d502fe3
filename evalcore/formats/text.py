"""Text files as lines: one string array of the non-blank, whitespace-trimmed lines and their physical line
numbers, split into columns with vectorised kernels (no Python object per row); and lines written back.

A UTF-8 BOM and CRLF line ends are accepted; blank (whitespace-only) lines are skipped but counted, so line
numbers in messages are physical lines of the file. Undecodable bytes are one error naming the line and the
byte (``expected UTF-8 text, found undecodable byte 0x..``).
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore import arrow_np
from evalcore.errors import InputError
from evalcore.formats.detection import UTF8_BOM
from evalcore.formats.limits import check_line_limits, read_bytes
from evalcore.formats.lines import LineNumbers, first_true, row_error


@dataclass
class Lines:
    """The non-blank, whitespace-trimmed lines of a text file and their physical line numbers."""

    text: pa.Array
    numbers: LineNumbers


def read_lines(path: Path) -> Lines:
    """Read a UTF-8 text file as one string array of trimmed, non-blank lines (no per-line objects)."""
    data = read_bytes(path)
    start = len(UTF8_BOM) if data.startswith(UTF8_BOM) else 0
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
        check_line_limits(data, offsets, None, path)
        return Lines(trimmed, LineNumbers(1))
    check_line_limits(data, offsets, np.asarray(arrow_np.to_numpy(non_blank), dtype=bool), path)
    kept = np.flatnonzero(arrow_np.to_numpy(non_blank))
    return Lines(trimmed.take(arrow_np.from_numpy(kept)), LineNumbers(0, kept + 1))


def _undecodable_line(data: bytes, start: int) -> tuple[int, str]:
    try:
        data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        return data.count(b"\n", 0, start + exc.start) + 1, f"byte 0x{data[start + exc.start]:02x}"
    return 1, "invalid text"


def split_whitespace_columns(lines: Lines, path: Path, n_columns: int, layout: str,
                             used: tuple[int, ...] = ()) -> list[pa.Array]:
    """The columns of a whitespace-separated file (split at ASCII whitespace, as trec_eval does); the ``used``
    ones are trimmed of Unicode whitespace (a no-break space...) at both ends, as CSV fields are."""
    fields = pc.ascii_split_whitespace(lines.text)
    counts = pc.list_value_length(fields)
    bad = first_true(pc.not_equal(counts, n_columns))
    if bad is not None:
        found = counts[bad].as_py()
        raise row_error(f"expected {n_columns} whitespace-separated columns ({layout}), found {found}",
                        path, lines.numbers, bad)
    return [pc.utf8_trim_whitespace(pc.list_element(fields, i)) if i in used else pc.list_element(fields, i)
            for i in range(n_columns)]


def concatenated_values(strings: pa.Array | pa.ChunkedArray) -> pa.Buffer:
    """The bytes of all values of a string array back to back, as a zero-copy buffer slice."""
    if isinstance(strings, pa.ChunkedArray):
        strings = strings.combine_chunks()
    offset_type = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    offsets = np.frombuffer(strings.buffers()[1], dtype=offset_type)[strings.offset: strings.offset + len(strings) + 1]
    data = strings.buffers()[2]
    if data is None or len(offsets) == 0:
        return pa.py_buffer(b"")
    return data.slice(int(offsets[0]), int(offsets[-1]) - int(offsets[0]))


_WRITE_BLOCK_ROWS = 1 << 20


def write_lines(lines: pa.Array, path: Path, compressed: bool = False) -> None:
    """``lines`` written one a line (gzip-compressed if asked), a block of rows at a time."""
    with open(path, "wb") as raw, (gzip.GzipFile("", "wb", 6, raw, mtime=0) if compressed else raw) as handle:
        for start in range(0, len(lines), _WRITE_BLOCK_ROWS):
            block = lines.slice(start, _WRITE_BLOCK_ROWS)
            handle.write(concatenated_values(pc.binary_join_element_wise(block, "", "\n")))
