"""Derived data: what the store would otherwise compute from a per-query file whenever a process opens the data
folder, written once, beside that file, as versioned parquet.

One kind today, the **query sums** of a ``query_metrics`` file ``F.parquet``: ``_derived/F.sums.parquet`` in
F's folder (a ``_``-prefixed folder, as parquet's own ``_metadata`` summary files: Spark, Hadoop and a glob of
``*.parquet`` in the folder pass it by), one row per (system, condition, task, metric) group of F with the
sums its task means come from and the aggregates the load checks (:func:`sums_schema`). Its parquet footer
(key :data:`METADATA_KEY`) says what it was derived from — the source's file name, size and sha256 — and the
format (:data:`FORMAT`). The store uses a sums file only when all of these match the file it finds; otherwise
it computes the same table in memory (one scan, :func:`scan_sums`) and logs why. A content hash, not a
modification time or an inode: those change with every copy and ``git clone``, while the bytes, and hence the
sums, do not.

Who writes them: ``evalcore derive`` (:func:`evalcore.store.derivation.derive`), which the import commands and
the real-runs generator call after they write, and ``evalcore ingest``, which writes its new file and its sums
as one set (:func:`write_with_sums`). The store never writes (the data folder may be read-only).

Why sums are enough for the checks: a group's values are valid when none is NULL, NaN or infinite
(``n_null_values`` and the finiteness of the sums), none is below 0 (``lowest``) or above 1 for a metric
bounded by 1 (``highest``), ``min <= oblivious, expected <= max`` (``least_gap``, the least of the four
differences, >= 0), and every qid appears once (``n_distinct_qids == n_queries``) — so the store's load
checks read the same verdict from the derived table as from a scan.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np

from evalcore.schema import CONDITION_KEY

if TYPE_CHECKING:  # pragma: no cover
    import duckdb
    import pyarrow as pa

log = logging.getLogger(__name__)

FORMAT = "query-sums/1"
"""The layout of a sums file: bump when :data:`SUMS_SCHEMA` or the meaning of a column changes (every older
file then counts as stale and is computed in memory until ``evalcore derive`` rewrites it)."""
METADATA_KEY = "tiebreak.derived"
FOLDER = "_derived"
SUMS_SUFFIX = ".sums.parquet"

# -- the per-group sums of one per-query file ------------------------------------------------------------
# per (system, condition, task, metric) of one file: the sums, and what the load checks (aggregates that cost
# little: a FILTER per row or count(DISTINCT qid) made the scan of 10M rows several times slower)
_SUMS_SELECT = """
       system::VARCHAR AS system, benchmark::VARCHAR AS benchmark, task::VARCHAR AS task,
       setting::VARCHAR AS setting, instruction::BOOLEAN AS instruction, precision::VARCHAR AS precision,
       tie_policy::VARCHAR AS tie_policy, metric::VARCHAR AS metric,
       count(*)::BIGINT AS n_queries, sum(oblivious)::DOUBLE AS sum_oblivious,
       sum(expected)::DOUBLE AS sum_expected, sum("min")::DOUBLE AS sum_min, sum("max")::DOUBLE AS sum_max,
       sum(tied_at_cutoff::INTEGER)::BIGINT AS n_tied, min(source)::VARCHAR AS source,
       (count(*) - count(qid))::BIGINT AS n_null_qids, list(hash(qid)) AS qid_hashes,
       (4 * count(*) - count(oblivious) - count(expected) - count("min") - count("max"))::BIGINT AS n_null_values,
       least(min(oblivious), min(expected), min("min"), min("max"))::DOUBLE AS lowest,
       greatest(max(oblivious), max(expected), max("min"), max("max"))::DOUBLE AS highest,
       least(min("max" - "min"), min(oblivious - "min"), min("max" - oblivious), min(expected - "min"),
             min("max" - expected))::DOUBLE AS least_gap
"""
_GROUP_BY = ", ".join(CONDITION_KEY)
_SUMS_SQL = f"SELECT {_SUMS_SELECT} FROM read_parquet(?) GROUP BY {_GROUP_BY}"
# a file with rows without a qid is summed again without them (rare)
_NAMED_SUMS_SQL = f"SELECT {_SUMS_SELECT} FROM read_parquet(?) WHERE qid IS NOT NULL GROUP BY {_GROUP_BY}"
# all files in one scan (DuckDB spreads the files over its threads; one query per file was ~1.5x slower)
_BATCH_SUMS_SQL = f"""
SELECT {_SUMS_SELECT}, filename AS file
FROM read_parquet(?::VARCHAR[], filename = true, union_by_name = true) GROUP BY filename, {_GROUP_BY}
"""
_HASH_SPREAD = np.uint64(0x9E3779B97F4A7C15)  # odd constant spreading group numbers over 64 bits


def sums_schema() -> "pa.Schema":
    """The columns of a sums table, in order (the group key, the sums, the check aggregates)."""
    import pyarrow as pa

    text, flag, count, number = pa.string(), pa.bool_(), pa.int64(), pa.float64()
    return pa.schema([
        ("system", text), ("benchmark", text), ("task", text), ("setting", text), ("instruction", flag),
        ("precision", text), ("tie_policy", text), ("metric", text), ("n_queries", count),
        ("sum_oblivious", number), ("sum_expected", number), ("sum_min", number), ("sum_max", number),
        ("n_tied", count), ("source", text), ("n_null_qids", count), ("n_distinct_qids", count),
        ("n_null_values", count), ("lowest", number), ("highest", number), ("least_gap", number),
    ])


def scan_sums(conn: "duckdb.DuckDBPyConnection", paths: list[Path]) -> dict[Path, object]:
    """The sums table (:func:`sums_schema`) of each per-query file, or the exception that made it unreadable.
    One scan over all files; when it fails, file by file to find the bad ones."""
    import pyarrow as pa

    if not paths:
        return {}
    try:
        table = _finish(conn, conn.sql(_BATCH_SUMS_SQL, params=[[str(p) for p in paths]]).to_arrow_table())
    except Exception:  # a corrupt file (or one with a 'filename' column): each file on its own below
        table = None
    if table is not None:
        files = table["file"].to_numpy(zero_copy_only=False)
        order = np.argsort(files, kind="stable")
        names = [str(p) for p in paths]
        starts = np.searchsorted(files[order], names, side="left")
        ends = np.searchsorted(files[order], names, side="right")
        if int((ends - starts).sum()) == table.num_rows:  # every group is attributed to one of ``paths``
            # a file without rows has no groups: an empty table, as when read on its own
            ordered = _without_file(table.take(order))  # one take, then zero-copy slices
            return {path: ordered.slice(start, end - start) for path, start, end in zip(paths, starts, ends)}
    found: dict[Path, object] = {}
    for path in paths:
        try:
            sums = conn.sql(_SUMS_SQL, params=[str(path)]).to_arrow_table()
            sums = sums.append_column("file", pa.array([str(path)] * sums.num_rows, pa.string()))
            found[path] = _without_file(_finish(conn, sums))
        except Exception as exc:
            found[path] = exc
    return found


def sums_of_rows(conn: "duckdb.DuckDBPyConnection", relation: str) -> "pa.Table":
    """The sums table of per-query rows held in memory: ``relation`` is the name of a table or a registered
    Arrow table on ``conn`` (a fixed identifier, never user input). Same columns and checks as a file's."""
    import pyarrow as pa

    sums = conn.sql(f"SELECT {_SUMS_SELECT} FROM {relation} GROUP BY {_GROUP_BY}").to_arrow_table()
    sums = sums.append_column("file", pa.array([relation] * sums.num_rows, pa.string()))
    return _without_file(_finish(conn, sums, relation=relation))


def _without_file(table: "pa.Table") -> "pa.Table":
    return table.drop_columns(["file"]).cast(sums_schema())


def _finish(conn: "duckdb.DuckDBPyConnection", sums: "pa.Table", relation: str | None = None) -> "pa.Table":
    """Scanned sums (of one or several files, column ``file``) with the ``qid_hashes`` lists replaced by
    ``n_distinct_qids``, the exact number of distinct qids of each group; the groups of a file holding rows
    without a qid are summed again without those rows (their number stays in ``n_null_qids``).

    The scan keeps the 64-bit hash of every qid (``count(DISTINCT qid)`` made it 6-10x slower); the hashes of
    all groups are sorted here at once, each mixed with its group's number: a group whose hashes all differ
    has distinct qids. Only a group with a repeated hash (a repeated qid, or a 64-bit collision) is counted
    exactly, by DuckDB, on its file and group. ``relation``: the rows are that in-memory relation, not files.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    source = (lambda file: relation) if relation else (lambda file: "read_parquet(?)")
    source_params = (lambda file: []) if relation else (lambda file: [file])
    key = list(CONDITION_KEY)
    where = " AND ".join(f"{name}::{'BOOLEAN' if name == 'instruction' else 'VARCHAR'} IS NOT DISTINCT FROM ?"
                         for name in key)
    without_qid = pc.greater(sums["n_null_qids"], 0).to_numpy(zero_copy_only=False)
    if without_qid.any():  # rare: sum those files again without the rows lacking a qid
        files = sorted(set(pc.filter(sums["file"], pa.array(without_qid)).to_pylist()))
        kept = sums.filter(pc.invert(pc.is_in(sums["file"], pa.array(files, pa.string()))))
        parts = [kept]
        for file in files:
            named = conn.sql(f"SELECT {_SUMS_SELECT} FROM {source(file)} WHERE qid IS NOT NULL GROUP BY {_GROUP_BY}",
                             params=source_params(file)).to_arrow_table()
            missing_qids = conn.sql(
                f"SELECT {_GROUP_BY}, count(*)::BIGINT AS n FROM {source(file)} WHERE qid IS NULL "
                f"GROUP BY {_GROUP_BY}", params=source_params(file)).df()
            named = named.append_column("file", pa.array([file] * named.num_rows, pa.string()))
            # the count of rows without a qid is reported once per file, on its first group
            counts = np.zeros(named.num_rows, dtype=np.int64)
            if named.num_rows:
                counts[0] = int(missing_qids["n"].sum())
            elif len(missing_qids):  # only rows without a qid: keep one empty group to carry the count
                named = sums.filter(pc.equal(sums["file"], file)).slice(0, 1)
                named = named.set_column(named.schema.get_field_index("n_queries"), "n_queries",
                                         pa.array([0], pa.int64()))
                counts = np.array([int(missing_qids["n"].sum())], dtype=np.int64)
            named = named.set_column(named.schema.get_field_index("n_null_qids"), "n_null_qids",
                                     pa.array(counts, pa.int64()))
            parts.append(named.cast(kept.schema))
        sums = pa.concat_tables(parts)
    hashes = sums["qid_hashes"].combine_chunks()
    lengths = pc.list_value_length(hashes).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    distinct = lengths.copy()
    flat = hashes.flatten().to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)
    group = np.repeat(np.arange(len(lengths), dtype=np.uint64), lengths)
    with np.errstate(over="ignore"):
        mixed = flat + group * _HASH_SPREAD  # wraps: equal values in two groups only cost an exact count
    ordered = np.sort(mixed)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if repeated.size:
        rows = sums.select(key + ["file"]).to_pylist()
        for index in np.unique(group[np.isin(mixed, repeated)]).astype(np.int64):
            file = rows[index]["file"]
            distinct[index] = conn.execute(
                f"SELECT count(DISTINCT qid) FROM {source(file)} WHERE {where}",
                source_params(file) + [rows[index][name] for name in key],
            ).fetchall()[0][0]
    position = sums.schema.get_field_index("qid_hashes")
    return sums.set_column(position, "n_distinct_qids", pa.array(distinct, pa.int64()))


# -- versions of a source file -------------------------------------------------------------------------
@dataclass(frozen=True)
class SourceVersion:
    """One version of a file's bytes: its size and their sha256 (what a derived file is keyed by)."""

    size: int
    sha256: str


@dataclass(frozen=True)
class FileStat:
    """(path, size, mtime, inode, device): tells within one process whether a file changed since it was last
    read (an atomic rewrite gets a new inode even within one mtime tick). Never stored: a copy or a ``git
    clone`` changes it while the content stays the same."""

    path: str
    size: int
    mtime_ns: int
    inode: int
    device: int

    @staticmethod
    def of(path: Path) -> "FileStat":
        info = os.stat(path)
        return FileStat(str(path), info.st_size, info.st_mtime_ns, info.st_ino, info.st_dev)


def source_version(path: Path) -> tuple[SourceVersion, FileStat]:
    """The version of ``path``'s bytes, read through one open descriptor, and the stat of that same file (so a
    caller can tell whether what it reads next is still this version)."""
    with open(path, "rb") as handle:
        info = os.fstat(handle.fileno())
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
        size = handle.tell()
    return SourceVersion(size, digest), FileStat(str(path), info.st_size, info.st_mtime_ns, info.st_ino,
                                                 info.st_dev)


# -- sums files: where, what their footer says, reading and writing ---------------------------------------
def sums_path(source: Path) -> Path:
    """Where the sums of per-query file ``source`` live: ``DIR/F.parquet`` -> ``DIR/_derived/F.sums.parquet``."""
    name = source.name[: -len(".parquet")] if source.name.endswith(".parquet") else source.name
    return source.parent / FOLDER / (name + SUMS_SUFFIX)


@dataclass(frozen=True)
class DerivedFrom:
    """What a derived file's footer says: its format and the source it was computed from (a file name in the
    folder above the derived file's, its size and sha256)."""

    format: str
    source: str
    size: int
    sha256: str

    def source_path(self, derived: Path) -> Path:
        return derived.parent.parent / self.source

    def matches(self, version: SourceVersion) -> bool:
        return self.format == FORMAT and (self.size, self.sha256) == (version.size, version.sha256)


def derived_from(schema: "pa.Schema") -> DerivedFrom | None:
    """The :class:`DerivedFrom` of a parquet schema's footer metadata, or None when it holds none (or a
    malformed one)."""
    raw = (schema.metadata or {}).get(METADATA_KEY.encode())
    return None if raw is None else _parse_record(raw)


def _parse_record(raw: bytes) -> DerivedFrom | None:
    try:
        info = json.loads(raw)
        found = DerivedFrom(str(info["format"]), str(info["source"]), int(info["source_size"]),
                            str(info["source_sha256"]))
    except (ValueError, KeyError, TypeError):
        return None
    return found if "/" not in found.source and found.source not in ("", ".", "..") else None


def read_footers(conn: "duckdb.DuckDBPyConnection", paths: list[Path]) -> dict[Path, DerivedFrom | None]:
    """The footer record of each derived file (None when it has none or a malformed one), read in one DuckDB
    call (parquet_kv_metadata); a file that cannot be read is looked at on its own (an exception, then)."""
    if not paths:
        return {}
    found: dict[Path, DerivedFrom | None] = {path: None for path in paths}
    try:
        rows = conn.execute("SELECT file_name, value FROM parquet_kv_metadata(?::VARCHAR[]) WHERE key = ?::BLOB",
                            [[str(p) for p in paths], METADATA_KEY.encode()]).fetchall()
    except Exception:  # a damaged file among them: each on its own
        return {path: _footer_or_error(path) for path in paths}
    by_name = {str(path): path for path in paths}
    for name, raw in rows:
        found[by_name[name]] = _parse_record(raw)
    return found


def _footer_or_error(path: Path):
    try:
        return footer(path)
    except Exception as exc:
        return exc


def read_many(conn: "duckdb.DuckDBPyConnection", paths: list[Path]) -> dict[Path, object]:
    """Each derived sums file's table (:func:`sums_schema`), or the exception that makes it unusable: one
    DuckDB scan of all of them (100 files: ~0.03 s, against ~2 ms per file read on its own); file by file
    when that fails."""
    if not paths:
        return {}
    expected = sums_schema()
    try:
        table = conn.read_parquet([str(p) for p in paths], filename=True).to_arrow_table()
        if table.column_names != expected.names + ["filename"]:
            raise ValueError("not every file has the columns of " + FORMAT)
        files = table["filename"].to_numpy(zero_copy_only=False)
        table = table.drop_columns(["filename"]).cast(expected)
    except Exception:
        found = {}
        for path in paths:
            try:
                found[path] = read_sums(path)
            except Exception as exc:
                found[path] = exc
        return found
    order = np.argsort(files, kind="stable")
    names = [str(p) for p in paths]
    starts = np.searchsorted(files[order], names, side="left")
    ends = np.searchsorted(files[order], names, side="right")
    ordered = table.take(order)  # one take, then zero-copy slices (a take per file cost ~5 ms each)
    return {path: ordered.slice(start, end - start) for path, start, end in zip(paths, starts, ends)}


def footer(path: Path) -> DerivedFrom | None:
    """The :class:`DerivedFrom` record of a derived file (None without a readable one; OSError / Arrow errors
    when the file cannot be read)."""
    import pyarrow.parquet as pq

    return derived_from(pq.read_schema(path))


def read_sums(path: Path) -> "pa.Table":
    """A sums file's table (raises when it is unreadable or its columns are not :func:`sums_schema`)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    expected = sums_schema()
    if not table.schema.remove_metadata().equals(expected):
        raise ValueError(f"columns {table.schema.names} are not those of {FORMAT}")
    return table


def _write_table(path: Path, table: "pa.Table", source_name: str, version: SourceVersion) -> None:
    import pyarrow.parquet as pq

    record = {METADATA_KEY: json.dumps({"format": FORMAT, "source": source_name, "source_size": version.size,
                                        "source_sha256": version.sha256})}
    # groups in key order: DuckDB's parallel GROUP BY returns them in any order, and the same source must give
    # the same derived file (a re-derivation, a killed and rerun ingest)
    table = table.sort_by([(name, "ascending") for name in CONDITION_KEY])
    pq.write_table(table.cast(sums_schema()).replace_schema_metadata(record), path, compression="zstd")


def write_sums(source: Path, table: "pa.Table", version: SourceVersion) -> Path:
    """Write ``table`` (the sums of ``source`` at ``version``) to :func:`sums_path` atomically."""
    from evalcore.formats import atomic_path

    target = sums_path(source)
    with atomic_path(target, "derived sums") as temporary:
        _write_table(temporary, table, source.name, version)
    return target


def write_with_sums(path: Path, write: "Callable[[Path], None]") -> None:
    """Write a new per-query file and its sums as one set: ``write(temporary)`` stages the file, its sums are
    computed from those very bytes, both are synced, then renamed into place one right after the other, the
    file first (:func:`evalcore.formats.atomic_paths`): a kill leaves nothing, both, or — only between the two
    ``rename`` calls — the file without sums, which the store computes in memory. (Each file synced just before
    its own rename left a disk flush in that gap, where a SIGKILL test landed.)"""
    import duckdb

    from evalcore.formats import atomic_paths
    from evalcore.outputs import writing

    files, whats = [path, sums_path(path)], ["per-query results", "derived sums"]
    with atomic_paths(files, whats) as (temporary, sums_temporary):
        with writing(path, "per-query results"):
            write(temporary)
            version, _ = source_version(temporary)
            conn = duckdb.connect(":memory:")
            try:
                sums = scan_sums(conn, [temporary])[temporary]
            finally:
                conn.close()
            if isinstance(sums, Exception):
                raise sums
        _write_table(sums_temporary, sums, path.name, version)

