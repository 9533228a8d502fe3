"""Rows and the file lines they came from, and the helpers every reader uses to name a row in an error.

Line numbers are 1-based physical lines of the file (for parquet and in-memory tables: the 1-based row),
so an :class:`~evalcore.errors.InputError` reads ``FILE:LINE: what was expected``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from evalcore import arrow_np
from evalcore.errors import InputError


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


def row_error(message: str, path: str | Path, lines: LineNumbers | None, row: int | None) -> InputError:
    """The InputError for ``row`` of ``path``: ``message`` at the row's line (no line when either is None)."""
    line = None if lines is None or row is None else lines.of(row)
    return InputError(message, path, line)


def short_repr(value: object, limit: int = 60) -> str:
    """A value as an error shows it: its repr, cut to ``limit`` characters (``...'`` at the end)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def first_true(mask: pa.Array | pa.ChunkedArray) -> int | None:
    """Index of the first true value of a boolean array (None when there is none)."""
    values = np.asarray(arrow_np.to_numpy(mask), dtype=bool)
    hits = np.flatnonzero(values)
    return int(hits[0]) if len(hits) else None
