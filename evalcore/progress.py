"""Progress of long work: a bar with rate and ETA on stderr when stderr is a terminal, nothing otherwise.

Long loops of the package (the engine's chunks of queries, the importers' files, ``derive``'s files, a
candidate's tasks) open a :func:`bar`; it shows only when the process asked for progress:

- the CLI (:func:`evalcore.cli.main`) calls :func:`configure` with ``terminal=True`` unless ``--quiet``: a
  `tqdm <https://tqdm.github.io>`_ bar on stderr (rate, ETA when the total is known, cleared when done),
  only when stderr is a terminal and only after :data:`DELAY` seconds, so short commands print nothing
  extra; stdout is never written;
- the dashboard's upload worker calls :func:`configure` with ``lines=stream``: one JSON object a line
  (``{"progress": what, "done": n, "total": m}``, at most every :data:`LINE_INTERVAL` seconds) that the page
  turns into its progress bar (:func:`parse_line`);
- anything else (library use, tests, the dashboard's own process): nothing.
"""
from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager
from typing import IO, Iterable, Iterator

DELAY = float(os.environ.get("TIEBREAK_PROGRESS_DELAY", "1.0"))
"""Seconds before a terminal bar appears (``TIEBREAK_PROGRESS_DELAY``): work shorter than this shows none."""
LINE_INTERVAL = 0.25
"""Seconds between two progress lines for the dashboard (the last one of a bar is always written)."""
LINE_PREFIX = '{"progress": '

_terminal = False
_lines: IO[str] | None = None


def configure(*, terminal: bool = False, lines: IO[str] | None = None) -> None:
    """Turn progress on or off for this process: ``terminal`` bars on stderr (when it is a terminal), or JSON
    ``lines`` on a stream; neither: off."""
    global _terminal, _lines
    _terminal = bool(terminal) and _is_terminal(sys.stderr)
    _lines = lines


def active() -> bool:
    """Whether a bar would show (terminal bars on a terminal, or progress lines)."""
    return _terminal or _lines is not None


def _is_terminal(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _shape() -> dict:
    """tqdm's size arguments: follow the terminal, or 80 × 24 when it reports no size (a pseudo-terminal
    nobody sized, where tqdm would compute -1 rows and hide the bar)."""
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (AttributeError, ValueError, OSError):
        size = os.terminal_size((0, 0))
    return {"dynamic_ncols": True} if size.columns > 0 and size.lines > 0 else {"ncols": 80, "nrows": 24}


class _Silent:
    """A bar that shows nothing (progress off)."""

    def update(self, n: int = 1) -> None:
        pass

    def set_description_str(self, text: str) -> None:
        pass


class _Lines:
    """A bar as JSON lines on a stream, throttled."""

    def __init__(self, stream: IO[str], what: str, total: int | None, unit: str):
        self.stream, self.what, self.total, self.unit = stream, what, total, unit
        self.done, self.last = 0, 0.0
        self._write(force=True)

    def _write(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < LINE_INTERVAL:
            return
        self.last = now
        try:
            self.stream.write(json.dumps({"progress": self.what, "done": self.done, "total": self.total,
                                          "unit": self.unit}) + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def update(self, n: int = 1) -> None:
        self.done += n
        self._write(force=self.total is not None and self.done >= self.total)

    def set_description_str(self, text: str) -> None:
        self.what = text

    def close(self) -> None:
        self._write(force=True)


@contextmanager
def bar(what: str, total: int | None = None, unit: str = "it") -> Iterator[object]:
    """A progress bar for the block: ``update(n)`` as work is done. ``total`` None: count and rate only."""
    if _lines is not None:
        lines = _Lines(_lines, what, total, unit)
        try:
            yield lines
        finally:
            lines.close()
        return
    if not _terminal:
        yield _Silent()
        return
    from tqdm import tqdm

    shown = tqdm(total=total, desc=what, unit=unit, unit_scale=True, file=sys.stderr, leave=False,
                 mininterval=0.2, delay=DELAY, **_shape())
    try:
        yield shown
    finally:
        shown.close()


def iterate(items: Iterable, what: str, total: int | None = None, unit: str = "it") -> Iterator:
    """``items``, one by one, counted on a :func:`bar` (``total`` defaults to ``len(items)`` when it has one)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)
    with bar(what, total, unit) as shown:
        for item in items:
            yield item
            shown.update(1)


def parse_line(line: str | bytes) -> dict | None:
    """A progress line's fields (``progress``, ``done``, ``total``, ``unit``), None for any other line."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    if not text.startswith(LINE_PREFIX):
        return None
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) and "done" in found else None
