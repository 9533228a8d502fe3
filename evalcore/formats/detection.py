"""Which format a file is in, and errors of opening it.

The formats are ``trec``, ``parquet``, ``csv``, ``tsv`` and ``jsonl`` (:data:`FORMATS`; ``beir`` is an alias of
tsv, ``txt``/``trec_eval`` of trec, ``json``/``ndjson`` of jsonl, ``pq`` of parquet). Detection goes by the
parquet magic bytes ``PAR1`` first, then the extension (``.gz`` stripped), then the first non-blank line: a
``{`` is JSON lines, a tab- or comma-separated header naming two known columns is TSV or CSV, anything else
TREC text. A ``.csv``/``.tsv`` name whose first line is no header but has the TREC column count (6 for a run,
4 for qrels) is TREC text.
"""
from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from evalcore.errors import InputError, one_line
from evalcore.formats.columns import QRELS_COLUMN_NAMES, RUN_COLUMN_NAMES

FORMATS = ("trec", "parquet", "csv", "tsv", "jsonl")

EXTENSION_FORMATS = {
    ".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl",
    ".ndjson": "jsonl", ".json": "jsonl", ".trec": "trec", ".run": "trec", ".res": "trec",
    ".txt": "trec", ".qrels": "trec", ".qrel": "trec",
}
FORMAT_ALIASES = {"beir": "tsv", "txt": "trec", "trec_eval": "trec", "json": "jsonl", "ndjson": "jsonl",
                  "pq": "parquet"}
PARQUET_MAGIC = b"PAR1"
UTF8_BOM = b"\xef\xbb\xbf"


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


def _detect_format(path: str | Path, names: dict[str, tuple[str, ...]], trec_columns: int) -> str:
    path = Path(path)
    head = first_bytes(path)
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    by_extension = EXTENSION_FORMATS.get(strip_gz(path).suffix.lower())
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


def checked_format(fmt: str | None, path: str | Path, detect: Callable[[str | Path], str]) -> str:
    """``fmt`` (an alias resolved) when given, else the detected format; InputError for an unknown one."""
    if fmt is None:
        return detect(path)
    fmt = FORMAT_ALIASES.get(fmt.lower(), fmt.lower())
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}", path)
    return fmt
