"""The readers: a run or qrels file of any format to a validated table, and a run in query-aligned chunks."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from evalcore.errors import InputError, one_line
from evalcore.formats.chunks import chunks_of_table
from evalcore.formats.columns import QRELS_COLUMN_NAMES, RUN_COLUMN_NAMES
from evalcore.formats.delimited import read_delimited_table
from evalcore.formats.detection import (
    checked_format,
    detect_qrels_format,
    detect_run_format,
)
from evalcore.formats.jsonl import read_jsonl_table
from evalcore.formats.lines import LineNumbers
from evalcore.formats.nested import read_nested
from evalcore.formats.partitions import (
    PARTITION_COLUMNS,
    Parts,
    Selection,
    check_parts_agree,
    partition_names,
    split_parts,
)
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


def _read_named_columns(path: Path, fmt: str, names, what: str,
                        optional: tuple[str, ...] = ()) -> tuple[dict[str, pa.Array], LineNumbers]:
    """The named columns (aliases accepted; the ``optional`` ones where present) of a parquet, JSON-lines, CSV or
    TSV run or qrels file, with the line number of each row."""
    if fmt == "parquet":
        return read_parquet_table(path, names, what, optional), LineNumbers(1)
    if fmt == "jsonl":
        return read_jsonl_table(path, names, what, optional)
    return read_delimited_table(path, "," if fmt == "csv" else "\t", names, what, optional)


def _read_run_columns(path: Path, fmt: str) -> tuple[pa.Table, LineNumbers]:
    if fmt == "trec":
        return read_trec_run(path)
    if fmt == "json":
        return read_nested(path, "run")
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
    fmt = detect_run_format(path, name if name is not None and Path(name).name != path.name else None)
    if group_column is None:
        run, numbers = _read_run_columns(path, fmt)
        return run, None, numbers
    if fmt in ("trec", "json"):
        layout = "a TREC run" if fmt == "trec" else "a nested JSON run {qid: {docid: score}}"
        raise InputError(f"expected a {group_column} column: {layout} has none (use parquet, CSV, TSV or JSON "
                         f"lines with columns {group_column}, qid, docid, score)", path)
    columns, numbers = _read_named_columns(path, fmt, {group_column: (group_column,), **RUN_COLUMN_NAMES}, "run")
    run = canonical_run(columns["qid"], columns["docid"], columns["score"], path, numbers)
    return run, as_id(columns[group_column], group_column, path, numbers), numbers


def read_qrels(path: str | Path, *, fmt: str | None = None, select: Selection | None = None) -> pa.Table:
    """Read qrels as ``qid, docid, relevance`` (int64 >= 0) in input order.

    Exact duplicate judgements are collapsed to their first occurrence; conflicting grades for one
    (qid, docid) are an error. A file whose ``benchmark`` / ``task`` / ``setting`` columns hold several
    evaluations (after ``select``) is refused, saying how to select one (:mod:`evalcore.formats.partitions`).
    """
    return read_qrels_parts(path, fmt=fmt, select=select).single()[0]


def read_qrels_parts(path: str | Path, *, fmt: str | None = None, select: Selection | None = None) -> Parts:
    """Qrels by their partition columns (:mod:`evalcore.formats.partitions`), each part read as
    :func:`read_qrels` reads a file (duplicates collapsed and conflicts refused within the part)."""
    path = Path(path)
    fmt = checked_format(fmt, path, detect_qrels_format)
    partitions: dict[str, pa.Array] = {}
    if fmt == "trec":
        columns, numbers = read_trec_qrels(path)
    elif fmt == "json":
        table, numbers = read_nested(path, "qrels")
        columns = {name: table[name] for name in table.column_names}
    else:
        columns, numbers = _read_named_columns(path, fmt, QRELS_COLUMN_NAMES, "qrels", PARTITION_COLUMNS)
        partitions = {name: columns.pop(name) for name in PARTITION_COLUMNS if name in columns}
    raw = pa.table(columns)
    parts = split_parts(raw, partitions, numbers, path, "qrels", select)
    for key, (part, lines) in parts.tables.items():
        parts.tables[key] = (qrels_from_columns({name: part[name] for name in part.column_names}, path, lines), None)
    return parts


def read_run_parts(path: str | Path, *, fmt: str | None = None, select: Selection | None = None,
                   maxp: bool = False, name: str | None = None) -> Parts:
    """A run read whole (as :func:`read_run`) and split by its partition columns after ``select``; each part's
    (qid, docid) pairs are unique within the part. ``name``: the file's own name for an in-memory upload (see
    :func:`read_run_rows`)."""
    path = Path(path)
    fmt = checked_format(fmt, path, lambda p: detect_run_format(p, name))
    if fmt in ("trec", "json"):
        run, numbers = _read_run_columns(path, fmt)
        parts = split_parts(run, {}, numbers, path, "run")
    else:
        columns, numbers = _read_named_columns(path, fmt, RUN_COLUMN_NAMES, "run", PARTITION_COLUMNS)
        run = canonical_run(columns["qid"], columns["docid"], columns["score"], path, numbers)
        partitions = {column: columns[column] for column in PARTITION_COLUMNS if column in columns}
        parts = split_parts(run, partitions, numbers, path, "run", select)
    for key, (part, lines) in parts.tables.items():
        check_unique_pairs(part, path, lines)
        parts.tables[key] = (apply_maxp(part) if maxp else part, lines)
    return parts


def read_evaluation(run: str | Path, qrels: str | Path, *, select: Selection | None = None,
                    maxp: bool = False) -> tuple[pa.Table, pa.Table]:
    """(run, qrels) of one evaluation, read whole: files that hold several tasks or settings are refused unless
    ``select`` picks one, and a run of another task or setting than its qrels is refused
    (:mod:`evalcore.formats.partitions`)."""
    qrels_parts = read_qrels_parts(qrels, select=select)
    run_parts = read_run_parts(run, select=select, maxp=maxp)
    check_parts_agree(run_parts, qrels_parts, per_part=False)
    return run_parts.single()[0], qrels_parts.single()[0]


def run_partitions(path: str | Path) -> dict[str, list[str]] | None:
    """For a parquet run: the distinct values of each partition column it has (read alone, dictionary-encoded;
    {} without any), so that a grouped run of one task is still streamed; None for other formats (read whole)."""
    path = Path(path)
    if detect_run_format(path) != "parquet":
        return None
    import pyarrow.parquet as pq

    parquet_file = open_parquet(path)
    present = partition_names(parquet_file.schema_arrow.names)
    if not present:
        return {}
    found = [parquet_file.schema_arrow.names[i] for i in present.values()]
    try:
        table = pq.read_table(path, columns=found, read_dictionary=found)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"corrupt parquet file: expected readable column data ({one_line(exc)})", path) from None
    values = {}
    for name, column in zip(present, found):
        distinct = pc.unique(table[column].combine_chunks().dictionary_decode()
                             if pa.types.is_dictionary(table[column].type) else table[column])
        values[name] = [str(v) for v in distinct.to_pylist()]
    return values


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
