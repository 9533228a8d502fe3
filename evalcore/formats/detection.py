"""Which format a file is in, and errors of opening it.

The formats are ``trec``, ``parquet``, ``csv``, ``tsv``, ``jsonl`` (JSON lines) and ``json`` (one nested document
``{qid: {docid: value}}``: :mod:`evalcore.formats.nested`) (:data:`FORMATS`; ``beir`` is an alias of tsv,
``txt``/``trec_eval`` of trec, ``ndjson`` of jsonl, ``pq`` of parquet). Detection goes by the parquet magic bytes
``PAR1`` first, then the extension (``.gz`` stripped), then the first non-blank line: a ``{`` is JSON, a tab- or
comma-separated header naming two known columns is TSV or CSV, anything else TREC text. JSON (a ``.json`` name,
or no known extension and a ``{``) is nested when the first member's value is an object and no second value
follows the first (:func:`json_layout`), else JSON lines; ``.jsonl``/``.ndjson`` are always JSON lines. A
``.csv``/``.tsv`` name whose first line is no header but has the TREC column count (6 for a run, 4 for qrels) is
TREC text.
"""
from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from evalcore.errors import InputError, one_line
from evalcore.formats.columns import QRELS_COLUMN_NAMES, RUN_COLUMN_NAMES

FORMATS = ("trec", "parquet", "csv", "tsv", "jsonl", "json")

EXTENSION_FORMATS = {
    ".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl",
    ".ndjson": "jsonl", ".json": "json", ".trec": "trec", ".run": "trec", ".res": "trec",
    ".txt": "trec", ".qrels": "trec", ".qrel": "trec",
}
FORMAT_ALIASES = {"beir": "tsv", "txt": "trec", "trec_eval": "trec", "ndjson": "jsonl", "pq": "parquet"}
PARQUET_MAGIC = b"PAR1"
UTF8_BOM = b"\xef\xbb\xbf"
WHITESPACE = re.compile(r"[ \t\n\r]*")  # JSON's white space


def strip_gz(path: Path) -> Path:
    """``path`` without a ``.gz`` suffix (``run.trec.gz`` -> ``run.trec``), the name its format is read from."""
    return path.with_suffix("") if path.suffix.lower() == ".gz" else path


@contextmanager
def reading(path: Path) -> Iterator[None]:
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


def path_kind(path: Path) -> str:
    """``file``, ``folder``, ``missing`` or ``other`` (a FIFO, a device) for ``path`` (symlinks followed); a path
    that cannot be reached (a folder on the way the user may not enter) is one InputError naming it, where
    ``Path.is_file`` raised PermissionError."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as exc:
        raise InputError(f"cannot reach it ({_reason(exc)})", path) from None
    return "file" if stat.S_ISREG(mode) else "folder" if stat.S_ISDIR(mode) else "other"


def folder_entries(path: Path) -> list[tuple[Path, str]]:
    """The entries of a folder sorted by name, each with its :func:`path_kind`; a folder that cannot be listed
    (missing, a file, not readable or not enterable by the user) is one InputError naming it."""
    try:
        names = sorted(os.listdir(path))
    except FileNotFoundError:
        raise InputError("folder not found", path) from None
    except NotADirectoryError:
        raise InputError("expected a folder, found a file", path) from None
    except OSError as exc:
        raise InputError(f"cannot read the folder ({_reason(exc)})", path) from None
    return [(Path(path) / name, path_kind(Path(path) / name)) for name in names]


def _reason(exc: OSError) -> str:
    """An OS error's reason without the path it repeats (``Permission denied``)."""
    return exc.strerror or one_line(exc)


def first_bytes(path: Path, size: int = 1 << 16) -> bytes:
    """The first ``size`` bytes of a file (gunzipped for .gz), to sniff its format."""
    with reading(path):
        if path.suffix.lower() == ".gz":
            with gzip.open(path, "rb") as handle:
                return handle.read(size)
        with open(path, "rb") as handle:
            return handle.read(size)


def _first_line_fields(head: bytes) -> tuple[str, list[str]]:
    text = head.removeprefix(UTF8_BOM).decode("utf-8", errors="replace")
    for raw_line in text.splitlines():
        if raw_line.strip():
            return raw_line, raw_line.split()
    return "", []


def _detect_format(path: str | Path, names: dict[str, tuple[str, ...]], trec_columns: int,
                   name: str | None = None) -> str:
    path = Path(path)
    head = first_bytes(path)
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    by_extension = EXTENSION_FORMATS.get(strip_gz(Path(name) if name else path).suffix.lower())
    first_line, whitespace_fields = _first_line_fields(head)
    known = {name for aliases in names.values() for name in aliases}
    if by_extension in ("csv", "tsv"):
        delimiter = "," if by_extension == "csv" else "\t"
        header = [field.strip().strip('"').lower() for field in first_line.split(delimiter)]
        if len(known.intersection(header)) < 2 and len(whitespace_fields) == trec_columns:
            return "trec"  # a headerless whitespace file with a .tsv name
        return by_extension
    if by_extension == "json" or by_extension is None and first_line.lstrip().startswith("{"):
        return json_layout(head)
    if by_extension is not None:
        return by_extension
    for delimiter, fmt in (("\t", "tsv"), (",", "csv")):
        header = [field.strip().strip('"').lower() for field in first_line.split(delimiter)]
        if len(header) > 1 and len(known.intersection(header)) >= 2:
            return fmt
    return "trec"


def detect_run_format(path: str | Path, name: str | None = None) -> str:
    """Format of a run file: by parquet magic, then extension (of ``name`` when given: an upload's own name),
    then by sniffing the first line."""
    return _detect_format(path, RUN_COLUMN_NAMES, 6, name)


def detect_qrels_format(path: str | Path, name: str | None = None) -> str:
    """Format of a qrels file: by parquet magic, then extension, then by sniffing the first line."""
    return _detect_format(path, QRELS_COLUMN_NAMES, 4, name)


def json_layout(head: bytes) -> str:
    """``json`` (one nested document) or ``jsonl`` (one object per line) for a file starting with ``head``: a
    document whose first member's value is an object (``{"q1": {…``) is nested unless a second JSON value follows
    the first (JSON lines whose rows hold objects: CRUMB's run lines); anything else is JSON lines."""
    text = head.removeprefix(UTF8_BOM).decode("utf-8", errors="replace")
    decoder = json.JSONDecoder()
    start = WHITESPACE.match(text).end()
    if text[start:start + 1] != "{":
        return "jsonl"
    position = WHITESPACE.match(text, start + 1).end()
    if text[position:position + 1] == "}":
        return "json"
    try:
        _, position = decoder.raw_decode(text, position)  # the first key
    except json.JSONDecodeError:
        return "json" if position < len(text) and text[position] == '"' else "jsonl"
    position = WHITESPACE.match(text, position).end()
    if text[position:position + 1] != ":":
        return "jsonl"
    position = WHITESPACE.match(text, position + 1).end()
    if text[position:position + 1] != "{":
        return "jsonl"
    try:
        _, end = decoder.raw_decode(text, start)
    except (json.JSONDecodeError, RecursionError):
        return "json"  # the first value goes on past the head: one large document
    return "jsonl" if text[end:].strip() else "json"


def checked_format(fmt: str | None, path: str | Path, detect: Callable[[str | Path], str]) -> str:
    """``fmt`` (an alias resolved) when given, else the detected format; InputError for an unknown one."""
    if fmt is None:
        return detect(path)
    fmt = FORMAT_ALIASES.get(fmt.lower(), fmt.lower())
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}", path)
    return fmt
