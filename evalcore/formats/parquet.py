"""Parquet runs and qrels: read whole (within the input size limit, counted on the decoded columns) or, for
a run, streamed in query-aligned chunks.

A parquet "line" is its 1-based row. A file grouped by qid is streamed one row group at a time (memory
independent of the file's size), validated chunk by chunk; an ungrouped run above
``GROUP_IN_MEMORY_MAX_ROWS`` (:mod:`evalcore.formats.readers`) is first regrouped out of core by DuckDB
(memory limit 600MB, spilling to a temporary folder) into a temporary copy that keeps each row's original
line; a copy that cannot be written is one OutputError naming TMPDIR.
"""
from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore import arrow_np
from evalcore.errors import InputError, OutputError, one_line
from evalcore.formats.chunks import chunk_ends, qid_run_starts, validated_chunk
from evalcore.formats.columns import pick_columns, pick_optional
from evalcore.formats.limits import INPUT_BYTES, QUERY_ROWS, check_query_sizes, query_rows_exceeded
from evalcore.formats.lines import LineNumbers
from evalcore.formats.validation import require_rows
from evalcore.formats.values import no_nulls

_MIN_DECODED_ROW_BYTES = 16  # a row of two ids (4-byte offsets at least) and an 8-byte number, decoded


def open_parquet(path: Path):
    """A parquet file opened (its footer read); InputError when missing or not parquet."""
    import pyarrow.parquet as pq

    if not path.exists():
        raise InputError("file not found", path)
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:  # a damaged footer's key-value text too
        raise InputError(f"expected a parquet file, cannot read its footer ({one_line(exc)})", path) from None


def pick_parquet_columns(parquet_file, names: dict[str, tuple[str, ...]], path: Path,
                         optional: tuple[str, ...] = ()) -> dict[str, str]:
    """The file's column name for each canonical column (aliases accepted), and for each ``optional`` one it has."""
    found = parquet_file.schema_arrow.names
    picked = pick_columns(found, names, path)
    picked.update(pick_optional(found, optional, picked))
    return {name: found[index] for name, index in picked.items()}


def read_parquet_table(path: Path, names: dict[str, tuple[str, ...]], what: str,
                       optional: tuple[str, ...] = ()) -> dict[str, pa.Array]:
    """The picked columns of a parquet file read whole, within the input size limit counted on the decoded
    columns (pages are compressed and strings dictionary-encoded: a 3 MB file can decode to gigabytes). The
    row count refuses an obvious bomb before anything is read; the batches read are counted as they come."""
    parquet_file = open_parquet(path)
    picked = pick_parquet_columns(parquet_file, names, path, optional)
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
    require_rows(table.num_rows, path, what)
    return {name: table.column(source) for name, source in picked.items()}


def parquet_is_grouped(path: Path, qid_column: str) -> bool:
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
        no_nulls(qids, "qid", path, LineNumbers(rows_before + 1))
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


def stream_parquet_file(path: Path, source: Path, parquet_file, picked: dict[str, str], maxp: bool,
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
                raise query_rows_exceeded(trailing_qid.as_py(), path, line)
            if pending_rows < chunk_rows or continues_one_query:  # a huge query: no new cut point yet
                continue
        if not pending:
            return
        combined = pa.concat_tables(pending)
        if qid_dictionary:
            combined = combined.unify_dictionaries()
        starts = qid_run_starts(combined[picked["qid"]])
        check_query_sizes(combined[picked["qid"]], starts, path,
                          LineNumbers(0, arrow_np.to_numpy(combined[line_column])) if line_column
                          else LineNumbers(first_row + 1))
        ends = chunk_ends(starts, combined.num_rows, chunk_rows)
        if batch is not None:
            ends = ends[:-1]  # the last chunk may hold a query that continues in the next batch
        position = 0
        for end in ends:
            part = combined.slice(position, end - position)
            lines = (LineNumbers(0, arrow_np.to_numpy(part[line_column])) if line_column
                     else LineNumbers(first_row + position + 1))
            yield validated_chunk(part, picked, path, lines, maxp, check_duplicates, qid_dictionary)
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


_REGROUP_MEMORY_LIMIT = "600MB"
_LINE_COLUMN = "__evalcore_line"


def _quoted(identifier: str) -> str:
    """A SQL identifier (a column name read from the file's own schema) as a quoted DuckDB identifier."""
    return '"' + identifier.replace('"', '""') + '"'


def stream_regrouped_parquet(path: Path, picked: dict[str, str], maxp: bool, chunk_rows: int,
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
        yield from stream_parquet_file(path, copy, pq.ParquetFile(copy), picked, maxp, chunk_rows, check_duplicates,
                                       _LINE_COLUMN)
