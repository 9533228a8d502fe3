"""What one input may cost, and reading an input within it: the one reader every text input goes through
(:func:`input_blocks`, :func:`input_lines`: runs and qrels of every text format, nested JSON, CRUMB's labels and
runs, candidates and uploads) and the one JSON parse (:func:`parse_json`, :func:`check_json_nesting`).

A text input is read whole (then split with vectorised kernels): measured on this code, a TREC run costs
about 6x its size in memory at the peak and every line about 40 bytes more, so a small file that inflates
(a 3 MB .gz of 3 GB of blank lines) or never ends (/dev/zero) must be stopped while it is read, not after.
Each limit is an environment variable (a whole number; 0 = no limit; a malformed setting is an InputError):

- ``TIEBREAK_MAX_INPUT_BYTES`` (default 1 GiB after decompression; a parquet file read whole counts its
  decoded columns),
- ``TIEBREAK_MAX_INPUT_LINES`` (50,000,000 lines),
- ``TIEBREAK_MAX_LINE_BYTES`` (64 MiB in one line),
- ``TIEBREAK_MAX_BLANK_LINES`` (10,000 blank lines in a row),
- ``TIEBREAK_MAX_QUERY_ROWS`` (10,000,000 rows for one query, on every read path: a streamed parquet run is
  not bounded as a whole, but one query's rows are evaluated at once),
- ``TIEBREAK_MAX_JSON_DEPTH`` (100 levels of nesting in one JSON value): JSON parsers recurse per level
  (Python's stops with a RecursionError, pyarrow's crashed the process on a line nested 100,000 deep), and no
  input evalcore reads nests deeper than a few levels; checked on the text before a parser sees it,
- ``TIEBREAK_FIFO_WAIT_SECONDS`` (30 s): how long a named pipe (``mkfifo``) that no process has opened for
  writing is waited for; the wait is announced on stderr, and past it the input is refused in one line. A pipe
  with a writer (``cmd | evalcore ... /dev/stdin``, ``<(cmd)``) is read however long the writer takes.

Parquet inputs are streamed and not limited by the first four when streamed. Passing a limit is one line:
``FILE[:LINE]: more than N UNIT (NAME; raise VARIABLE to read it, 0 = no limit)``.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from evalcore.errors import InputError, one_line
from evalcore.formats.detection import UTF8_BOM, reading, strip_gz
from evalcore.formats.lines import LineNumbers, short_repr


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
WRITER_WAIT = InputLimit("TIEBREAK_FIFO_WAIT_SECONDS", 30, "seconds", "the wait for a FIFO's writer")
# JSON parsers recurse per level: Python's stops at its recursion limit, pyarrow's crashed the process on a line
# nested 100,000 deep; no input evalcore reads nests deeper than a few levels
JSON_DEPTH = InputLimit("TIEBREAK_MAX_JSON_DEPTH", 100, "levels of nesting in one JSON value",
                        "the JSON nesting limit")
INPUT_LIMITS = (INPUT_BYTES, INPUT_LINES, LINE_BYTES, BLANK_LINES, QUERY_ROWS, JSON_DEPTH)
_READ_BLOCK = 4 << 20  # bytes read at a time; at most LINE_BYTES' smallest sensible value


def read_bytes(path: Path, text: bool = True) -> bytes:
    """A whole text file (gunzipped for .gz), read block by block and stopped at the first block past a
    limit (:func:`input_blocks`). ``text=False`` (a stream that may be parquet) checks only the size and the
    line without end."""
    blocks = list(input_blocks(path, lines=text))
    return blocks[0] if len(blocks) == 1 else b"".join(blocks)


def input_blocks(path: Path, *, lines: bool = True, line_length: bool = True) -> Iterator[bytes]:
    """The bytes of an input (gunzipped for .gz), a block at a time, stopped at the first block past a limit:
    total size always; with ``lines`` the line count and a run of empty lines; with ``line_length`` a line
    without end (the cheap checks that stop a decompression bomb or /dev/zero early; :func:`read_lines` checks
    line lengths and blank runs exactly). A FIFO without a writer is waited for as :func:`open_input` says;
    errors of opening or reading are one InputError naming ``path`` (:func:`reading`). Every reader of text
    (runs, qrels, nested JSON, CRUMB's labels and runs) reads through here."""
    max_bytes, max_lines = INPUT_BYTES.value(), INPUT_LINES.value()
    max_line = LINE_BYTES.value() if line_length else None
    max_blank = BLANK_LINES.value()
    if not lines:
        max_lines = max_blank = None
    # max_blank + 2 line ends in a row: the first may end a non-blank line, the others end blank ones
    blank_runs = [] if max_blank is None else [b"\n" * (max_blank + 2), b"\r\n" * (max_blank + 2)]
    size = counted = open_line = 0  # open_line: bytes of the line not ended yet
    with reading(path):
        raw = open_input(path)
        with (gzip.open(raw, "rb") if path.suffix.lower() == ".gz" else raw) as handle, raw:
            while block := handle.read(_READ_BLOCK):
                size += len(block)
                if max_bytes is not None and size > max_bytes:
                    raise INPUT_BYTES.exceeded(max_bytes, path)
                ends = block.count(b"\n")
                if max_lines is not None and counted + ends > max_lines:
                    raise INPUT_LINES.exceeded(max_lines, path, max_lines + 1)
                for run in blank_runs:
                    start = block.find(run)
                    if start >= 0:  # the run's first blank line (the first line end may close the line before)
                        first = counted + block.count(b"\n", 0, start) + (1 if start == 0 and open_line == 0 else 2)
                        raise BLANK_LINES.exceeded(max_blank, path, first)
                open_line = open_line + len(block) if ends == 0 else len(block) - block.rfind(b"\n") - 1
                if max_line is not None and open_line > max_line:
                    raise LINE_BYTES.exceeded(max_line, path, counted + ends + 1)
                counted += ends
                yield block


def input_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(1-based physical line number, the line's bytes without its end) of every line of a text input, read
    through :func:`input_blocks` (every limit applies; a UTF-8 BOM is dropped). For formats parsed line by line
    in Python (CRUMB's labels and runs): memory holds one block and its lines, never the file."""
    number = 0
    carry = b""
    first = True
    for block in input_blocks(path):
        if first:
            block, first = block.removeprefix(UTF8_BOM), False
        parts = (carry + block).split(b"\n")
        carry = parts.pop()
        for line in parts:
            number += 1
            yield number, line.removesuffix(b"\r")
    if carry:
        yield number + 1, carry.removesuffix(b"\r")


def open_input(path: Path):
    """``path`` opened for binary reading. A FIFO is opened without blocking and waited for: opening one that
    no process writes into blocks forever, which looked like a silent hang. While no writer has come, a line
    on stderr says what is awaited; after :data:`WRITER_WAIT` an InputError. A writer that has connected
    (even one that has written nothing yet) is read however long it takes; the first byte, taken to tell
    "no writer" from "a writer, nothing yet", is put back in front."""
    import stat

    if not stat.S_ISFIFO(os.stat(path).st_mode):
        return open(path, "rb")
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        head = _await_writer(descriptor, path)
    except BaseException:
        os.close(descriptor)
        raise
    os.set_blocking(descriptor, True)
    stream = io.FileIO(descriptor, "rb")
    return io.BufferedReader(_Prefixed(head, stream)) if head else io.BufferedReader(stream)


def _await_writer(descriptor: int, path: Path) -> bytes:
    """Wait until the FIFO ``descriptor`` (non-blocking) has a writer, data or an end; returns the bytes read
    while telling them apart (at most one). Linux and macOS: a read is EAGAIN while a writer is connected
    and silent, empty (end of file) while none is; ``poll`` wakes on data or on a writer that came and left."""
    import select
    import time

    limit = WRITER_WAIT.value()
    started = time.monotonic()
    poller = select.poll()
    poller.register(descriptor, select.POLLIN)
    announced = False
    while True:
        if poller.poll(1000 if limit is None else max(0, min(1.0, started + limit - time.monotonic())) * 1000):
            return b""  # data waiting, or a writer came and left (its bytes, or none, are all there is)
        try:
            head = os.read(descriptor, 1)
        except BlockingIOError:
            return b""  # a writer is connected and has not written yet: read it as the stream it is
        if head:
            return head
        waited = time.monotonic() - started
        if limit is not None and waited >= limit:
            raise InputError(f"a FIFO that no process opened for writing in {limit:,} s: start the command that "
                             f"writes into it (or raise {WRITER_WAIT.variable}, 0 = wait without end)", path)
        if not announced:
            bound = "without end" if limit is None else f"up to {limit:,} s ({WRITER_WAIT.variable})"
            print(f"evalcore: waiting for a process to write into the FIFO {path}, {bound}", file=sys.stderr,
                  flush=True)
            announced = True


class _Prefixed(io.RawIOBase):
    """A raw binary stream that yields ``head`` first, then ``stream``'s bytes."""

    def __init__(self, head: bytes, stream: io.RawIOBase):
        super().__init__()
        self._head, self._stream = head, stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            size = min(len(buffer), len(self._head))
            buffer[:size], self._head = self._head[:size], self._head[size:]
            return size
        return self._stream.readinto(buffer)

    def close(self) -> None:
        self._stream.close()
        super().close()


def check_line_limits(data: bytes, offsets: np.ndarray, non_blank: np.ndarray | None, path: Path) -> None:
    """The exact checks on a file already split into lines: the longest line, the longest run of blank
    lines (both cheap on the arrays :func:`read_lines` has computed anyway)."""
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


def json_nesting(data: bytes) -> int:
    """How deep the JSON text ``data`` nests (brackets inside strings do not count), or a bound on it that is
    within :data:`JSON_DEPTH`: the count of opening brackets when that is within the limit (cheap), else the
    exact depth from one vectorised pass over the quotes and brackets."""
    opening = data.count(b"[") + data.count(b"{")
    limit = JSON_DEPTH.value()
    if limit is None or opening <= limit:
        return min(opening, limit or opening)
    cleaned = data.replace(b"\\\\", b"").replace(b'\\"', b"")  # escaped backslashes, then escaped quotes
    text = np.frombuffer(cleaned, dtype=np.uint8)
    special = np.flatnonzero((text == 34) | (text == 91) | (text == 93) | (text == 123) | (text == 125))
    chars = text[special]
    quote = chars == 34
    outside = (np.cumsum(quote) & 1) == 0  # an even number of quotes so far: not inside a string
    step = np.where(outside & ((chars == 91) | (chars == 123)), 1, np.where(outside & ((chars == 93) | (chars == 125)), -1, 0))
    return int(np.cumsum(step).max()) if len(step) else 0


def check_json_nesting(data: bytes, path: Path | None, line: int | None = None, where: str = "") -> None:
    """InputError (``where``: a key path to name) when the JSON text ``data`` nests deeper than :data:`JSON_DEPTH`."""
    limit = JSON_DEPTH.value()
    if limit is not None and json_nesting(data) > limit:
        raise json_too_deep(path, line, where)


def json_too_deep(path: Path | None, line: int | None = None, where: str = "") -> InputError:
    """The InputError for JSON nested past :data:`JSON_DEPTH` (or past Python's parser, which stops first when
    the limit is raised)."""
    limit = JSON_DEPTH.value()
    bound = f"{limit:,}" if limit is not None else f"about {sys.getrecursionlimit():,} (Python's parser)"
    return InputError(f"{where}more than {bound} {JSON_DEPTH.unit} ({JSON_DEPTH.name}; raise {JSON_DEPTH.variable} "
                      "to read it, 0 = no limit)", path, line)


def parse_json(data: bytes | str, path: Path | None, line: int | None = None, expected: str = "a JSON document",
               constants: bool = True) -> object:
    """One JSON text parsed within :data:`JSON_DEPTH`; every problem is one InputError naming ``path`` and
    ``line``: not UTF-8, not JSON (with the column), nested too deep; with ``constants=False`` the literals NaN
    and Infinity (which Python's json accepts) are refused too."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    check_json_nesting(raw, path, line)
    try:
        text = data if isinstance(data, str) else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"expected UTF-8 text (byte {exc.start + 1} is not)", path, line) from None
    try:
        return json.loads(text) if constants else json.loads(text, parse_constant=_refuse_constant)
    except _NotFinite as problem:
        raise InputError(str(problem), path, line) from None
    except RecursionError:
        raise json_too_deep(path, line) from None
    except json.JSONDecodeError as exc:
        at = f" at column {exc.colno}" if exc.lineno == 1 or line is not None else f" at line {exc.lineno} column {exc.colno}"
        raise InputError(f"expected {expected} ({exc.msg}{at})", path,
                         line if line is not None else exc.lineno) from None
    except ValueError:  # an integer of more than 4,300 digits (Python's int-to-text limit)
        raise InputError(f"expected {expected} (a number of more than {sys.get_int_max_str_digits():,} digits)",
                         path, line) from None


class _NotFinite(ValueError):
    """A JSON constant (NaN, Infinity) where a finite number is expected."""


def _refuse_constant(name: str):
    raise _NotFinite(f"expected finite numbers, found {name}")


def query_rows_exceeded(qid: object, path: Path | None, line: int | None) -> InputError:
    """The InputError for query ``qid`` past :data:`QUERY_ROWS`."""
    limit = QUERY_ROWS.value()
    return InputError(f"query {short_repr(qid)}: more than {limit:,} {QUERY_ROWS.unit} ({QUERY_ROWS.name}; raise "
                      f"{QUERY_ROWS.variable} to read it, 0 = no limit)", path, line)


def check_query_sizes(qids: pa.Array | pa.ChunkedArray, starts: np.ndarray, path: Path | None,
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
        raise query_rows_exceeded(qid.as_py(), path, None if numbers is None else numbers.of(first))


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
    data = read_bytes(path, text=False)
    from evalcore.outputs import writing

    with writing(tempfile.gettempdir(), f"the temporary copy of {path} (set TMPDIR to a folder with room for it)"):
        handle, name = tempfile.mkstemp(prefix="evalcore-input-", suffix=strip_gz(path).suffix)
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
    with reading(path):
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
