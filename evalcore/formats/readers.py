"""The readers: a run or qrels file of any format to a validated table, and a run in query-aligned chunks."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from evalcore.errors import InputError, one_line
from evalcore.formats.chunks import chunks_of_table
from evalcore.formats.columns import QRELS_COLUMN_NAMES, RUN_COLUMN_NAMES
from evalcore.formats.delimited import read_delimited_table
from evalcore.formats.detection import (
    EXTENSION_FORMATS,
    checked_format,
    detect_qrels_format,
    detect_run_format,
    strip_gz,
)
from evalcore.formats.jsonl import read_jsonl_table
from evalcore.formats.lines import LineNumbers
from evalcore.formats.parquet import (
    open_parquet,
    parquet_is_grouped,
    pick_parquet_columns,
    read_parquet_table,
    stream_parquet_file,
    stream_regrouped_parquet,
)
from evalcore.formats.trec import read_trec_qrels, read_trec_run
from evalcore.formats.validation import apply_maxp, canonical_run, check_unique_pairs, qrels_from_columns, require_rows
from evalcore.formats.values import as_id, check_id_type


def _read_named_columns(path: Path, fmt: str, names, what: str) -> tuple[dict[str, pa.Array], LineNumbers]:
    """The named columns (aliases accepted) of a parquet, JSON-lines, CSV or TSV run or qrels file, with the
    line number of each row."""
    if fmt == "parquet":
        return read_parquet_table(path, names, what), LineNumbers(1)
    if fmt == "jsonl":
        return read_jsonl_table(path, names, what)
    return read_delimited_table(path, "," if fmt == "csv" else "\t", names, what)


def _read_run_columns(path: Path, fmt: str) -> tuple[pa.Table, LineNumbers]:
    if fmt == "trec":
        return read_trec_run(path)
    columns, numbers = _read_named_columns(path, fmt, RUN_COLUMN_NAMES, "run")
    return canonical_run(columns["qid"], columns["docid"], columns["score"], path, numbers), numbers


def read_run(path: str | Path, *, fmt: str | None = None, maxp: bool = False) -> pa.Table:
    """Read a run as ``qid, docid, score`` in input order, validated (see :mod:`evalcore.formats`).

    ``maxp=True`` maps ``docid:chunk`` ids to documents scored by their best chunk.
    """
    path = Path(path)
    fmt = checked_format(fmt, path, detect_run_format)
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
        fmt = EXTENSION_FORMATS.get(strip_gz(Path(name)).suffix.lower()) or fmt
    if group_column is None:
        run, numbers = _read_run_columns(path, fmt)
        return run, None, numbers
    if fmt == "trec":
        raise InputError(f"expected a {group_column} column: a TREC run has none (use parquet, CSV, TSV or JSON "
                         f"lines with columns {group_column}, qid, docid, score)", path)
    columns, numbers = _read_named_columns(path, fmt, {group_column: (group_column,), **RUN_COLUMN_NAMES}, "run")
    run = canonical_run(columns["qid"], columns["docid"], columns["score"], path, numbers)
    return run, as_id(columns[group_column], group_column, path, numbers), numbers


def read_qrels(path: str | Path, *, fmt: str | None = None) -> pa.Table:
    """Read qrels as ``qid, docid, relevance`` (int64 >= 0) in input order.

    Exact duplicate judgements are collapsed to their first occurrence; conflicting grades for one
    (qid, docid) are an error.
    """
    path = Path(path)
    fmt = checked_format(fmt, path, detect_qrels_format)
    if fmt == "trec":
        columns, numbers = read_trec_qrels(path)
    else:
        columns, numbers = _read_named_columns(path, fmt, QRELS_COLUMN_NAMES, "qrels")
    return qrels_from_columns(columns, path, numbers)


# an ungrouped parquet run above this many rows is regrouped by DuckDB with bounded memory (spilling to
# disk) instead of being read whole: grouping in memory costs ~150 bytes per row
GROUP_IN_MEMORY_MAX_ROWS = 2_000_000


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
    fmt = checked_format(fmt, path, detect_run_format)
    if fmt == "parquet":
        parquet_file = open_parquet(path)
        picked = pick_parquet_columns(parquet_file, RUN_COLUMN_NAMES, path)
        require_rows(parquet_file.metadata.num_rows, path, "run")
        for name in ("qid", "docid"):  # before reading qids dictionary-encoded (a list column has no such path)
            check_id_type(parquet_file.schema_arrow.field(picked[name]).type, name, path, LineNumbers(1))
        try:
            grouped = parquet_is_grouped(path, picked["qid"])
        except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:  # damaged pages, invalid UTF-8 ids
            raise InputError(f"corrupt parquet file: expected readable column data ({one_line(exc)})", path) from None
        if grouped:
            return stream_parquet_file(path, path, parquet_file, picked, maxp, chunk_rows, check_duplicates)
        if parquet_file.metadata.num_rows > GROUP_IN_MEMORY_MAX_ROWS:
            return stream_regrouped_parquet(path, picked, maxp, chunk_rows, check_duplicates)
    return chunks_of_table(read_run(path, fmt=fmt, maxp=maxp), chunk_rows, path)
