"""The DuckDB layer over ``data/**/*.parquet``: schema, views, every query the pages need.

Every query the pages need lives here; all SQL is parameterised (filter values are bound parameters; the
only identifiers put into SQL text come from fixed tuples in this module). See DESIGN.md § Data contract.

Conventions shared by every method:
- ``cond`` is a :class:`Condition`. ``instruction=None`` means "any": per system, its with-instruction rows
  are used when it has any under the rest of the condition, else its without-instruction rows, else its rows
  whose instruction is NULL (unknown: e.g. a published model whose metadata does not say) — one state per
  system, never mixed. ``instruction=True/False`` never matches an unknown state. Other fields set to ``None``
  are simply not filtered on.
- ``systems=None`` means all systems; otherwise an iterable of system names.
- Task values come from ``query_metrics`` (mean over queries) when per-query data exists for that
  (system, task, condition), else from published ``task_scores``; ``source`` says which.
- Published rows have ``expected``/``min``/``max`` NULL (unknown), so G_min/G_max/G_expected are NaN for them.

Loading: every ``*.parquet`` under the data dir (recursively, except ``runs/``) is classified by its schema
(footer only). ``query_metrics`` files are additionally summed per (system, condition, task, metric) once per
file version (cached by path, size, mtime and inode), which both validates their data pages and makes every
task-level query run on a small in-memory table. Per-query views read the parquet files directly.

The folder is not trusted (issue 16): rows without a name are left out with a warning (:attr:`Store.warnings`);
a per-query file with a value that cannot be right or a repeated qid, or repeating an earlier file's rows, is
skipped whole (:attr:`Store.skipped`, with the reason); task_scores rows are checked one by one, and repeated
task_scores keys are kept once when identical and dropped when they differ.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

import numpy as np
import pandas as pd

from evalcore import aggregate, disk_cache
from evalcore import aggregate as _aggregate  # ``Store.leaderboard`` has a parameter named ``aggregate``

if TYPE_CHECKING:  # pragma: no cover
    import duckdb

log = logging.getLogger(__name__)

DATA_ENV = "TIEBREAK_DATA"
CACHE_ENV = disk_cache.CACHE_ENV  # folder of the on-disk caches ("off" disables them)
_SUMS_CACHE_VERSION = "query-sums-3"  # bump when _QUERY_SUMS_SELECT changes
_INTERVALS_CACHE_FOLDER = "leaderboard-intervals-2"  # bump when the stored layout changes
RUNS_DIR = "runs"
DEFAULT_TIE_POLICY = "docid-desc"

# contract columns -> kind of arrow type expected ('str', 'num', 'bool', 'any')
QUERY_METRICS_COLUMNS: dict[str, str] = {
    "system": "str", "benchmark": "str", "task": "str", "setting": "str", "instruction": "bool",
    "precision": "str", "qid": "str", "metric": "str", "oblivious": "num", "expected": "num", "min": "num",
    "max": "num", "tie_policy": "str", "n_candidates": "num", "tied_at_cutoff": "bool", "source": "str",
}
TASK_SCORES_COLUMNS: dict[str, str] = {
    "system": "str", "benchmark": "str", "task": "str", "setting": "str", "instruction": "bool",
    "precision": "str", "metric": "str", "value": "num", "expected": "num", "min": "num", "max": "num",
    "n_queries": "num", "source": "str",
}
TASK_SCORES_OPTIONAL: dict[str, str] = {"tie_policy": "str"}
SYSTEMS_COLUMNS: dict[str, str] = {"system": "str", "display_name": "str"}
SYSTEMS_OPTIONAL: dict[str, str] = {
    "family": "str", "n_parameters": "num", "license": "str", "open_weights": "bool",
    "uses_instructions": "bool", "release_date": "any", "reference": "str", "source": "str", "revision": "str",
}
SYSTEMS_SQL_TYPES = {
    "system": "VARCHAR", "display_name": "VARCHAR", "family": "VARCHAR", "n_parameters": "DOUBLE",
    "license": "VARCHAR", "open_weights": "BOOLEAN", "uses_instructions": "BOOLEAN", "release_date": "VARCHAR",
    "reference": "VARCHAR", "source": "VARCHAR", "revision": "VARCHAR",
}
CONDITION_KEY = ("system", "benchmark", "task", "setting", "instruction", "precision", "tie_policy", "metric")

_EMPTY_QUERY_METRICS_SQL = """
CREATE OR REPLACE TABLE query_metrics (system VARCHAR, benchmark VARCHAR, task VARCHAR, setting VARCHAR,
  instruction BOOLEAN, precision VARCHAR, qid VARCHAR, metric VARCHAR, oblivious DOUBLE, expected DOUBLE,
  "min" DOUBLE, "max" DOUBLE, tie_policy VARCHAR, n_candidates BIGINT, tied_at_cutoff BOOLEAN, source VARCHAR)
"""
# per (system, condition, task, metric) of one file: the sums, and what the load checks (aggregates that cost
# little: a FILTER per row or count(DISTINCT qid) made the scan of 10M rows several times slower)
_QUERY_SUMS_SELECT = """
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
# what the per-file sums keep once checked (the check columns above are only read at load)
_QUERY_SUMS_COLUMNS = (
    "system", "benchmark", "task", "setting", "instruction", "precision", "tie_policy", "metric", "n_queries",
    "sum_oblivious", "sum_expected", "sum_min", "sum_max", "n_tied", "source", "file",
)
# a per-query or task-level row without one of these names cannot be placed (instruction NULL = unknown)
_KEY_NAMES = ("system", "benchmark", "task", "setting", "precision", "tie_policy", "metric")
_QUERY_SUMS_KEY = "system, benchmark, task, setting, instruction, precision, tie_policy, metric"
_QUERY_SUMS_SQL = f"SELECT {_QUERY_SUMS_SELECT} FROM read_parquet(?) GROUP BY {_QUERY_SUMS_KEY}"
# a file with rows without a qid is summed again without them (rare)
_QUERY_SUMS_NAMED_SQL = (f"SELECT {_QUERY_SUMS_SELECT} FROM read_parquet(?) WHERE qid IS NOT NULL "
                         f"GROUP BY {_QUERY_SUMS_KEY}")
# all new files in one scan (DuckDB spreads the files over its threads; one query per file was ~1.5x slower)
_QUERY_SUMS_BATCH_SQL = f"""
SELECT {_QUERY_SUMS_SELECT}, filename AS file
FROM read_parquet(?::VARCHAR[], filename = true, union_by_name = true) GROUP BY filename, {_QUERY_SUMS_KEY}
"""
_TASK_RESULTS_SQL = """
CREATE OR REPLACE TABLE task_results AS
WITH computed AS (
  SELECT system, benchmark, task, setting, instruction, precision, tie_policy, metric,
         sum(sum_oblivious) / sum(n_queries) AS value, sum(sum_expected) / sum(n_queries) AS expected,
         sum(sum_min) / sum(n_queries) AS "min", sum(sum_max) / sum(n_queries) AS "max",
         sum(n_queries)::BIGINT AS n_queries, sum(n_tied) / sum(n_queries) AS tied_share,
         min(source) AS source, TRUE AS has_query_data, 0 AS priority
  FROM query_task_sums GROUP BY system, benchmark, task, setting, instruction, precision, tie_policy, metric
), published AS (
  SELECT system, benchmark, task, setting, instruction, precision, tie_policy, metric,
         value, expected, "min", "max", n_queries, NULL::DOUBLE AS tied_share, source,
         FALSE AS has_query_data, 1 AS priority
  FROM task_scores
)
SELECT * EXCLUDE (priority, row_order) FROM (
  SELECT *, row_number() OVER (PARTITION BY system, benchmark, task, setting, instruction, precision,
                                             tie_policy, metric ORDER BY priority, source) AS row_order
  FROM (SELECT * FROM computed UNION ALL BY NAME SELECT * FROM published)
) WHERE row_order = 1
"""
_TASK_RESULT_COLUMNS = (
    'system, task, instruction, value, expected, "min", "max", n_queries, tied_share, source, has_query_data'
)


@dataclass(frozen=True)
class Condition:
    """One evaluation condition; ``None`` means 'any' (see module docstring for instruction=None)."""

    benchmark: str
    metric: str = "ndcg@10"
    setting: str = "full"  # 'full' | 'mcr'
    instruction: bool | None = False
    precision: str = "fp32"
    tie_policy: str = "docid-desc"


@dataclass
class SkippedFile:
    """A parquet file (or a folder) under the data dir that was not loaded, and why."""

    path: str
    reason: str


@dataclass
class LoadWarning:
    """Rows of a loaded file that were left out or changed at load (the rest of the file is used), and why."""

    path: str
    message: str


@dataclass
class Leaderboard:
    """Result of :meth:`Store.leaderboard`."""

    ranked: pd.DataFrame  # rank, system, G, G_min, G_max, G_expected, mean, mean_min, mean_max, mean_expected,
    #                       borda, n_tasks, complete, zero_task, has_query_data, G_lo, G_hi, mean_lo, mean_hi,
    #                       rank_lo, rank_hi, then one column per task (``tasks``); ``rank`` (and rank_lo/hi)
    #                       follow ``ranked_by`` (G_lo..rank_hi NaN without per-query data for every task)
    incomplete: pd.DataFrame  # system, n_tasks, missing_tasks (list[str]), reason (str), then the task columns
    #                           (values where usable, else NaN)
    tasks: list[str]  # the task columns of ``ranked``, in order (a task's name, or "<name> (task)" when its
    #                   name is a summary column such as "rank" or "G": see aggregate.task_column_labels)
    zero_task_systems: list[str] = field(default_factory=list)  # ranked systems with G = 0 from a zero task
    bootstrap: int = 0  # resamples used for G_lo/G_hi (0 = no per-query data)
    ranked_by: str = "G"  # the aggregate ``rank`` follows: "G" (geometric mean) or "mean" (arithmetic mean)
    task_names: list[str] = field(default_factory=list)  # the task names of ``tasks``, in the same order
    policy_swaps: pd.DataFrame | None = None  # pairs ordered one way by ``tie_policy`` and the other by their
    #   expected values (aggregate.order_swaps: system_1 ahead by policy, behind by expected; value_1/2,
    #   expected_1/2 in ``ranked_by``); empty = no pair; None = not computed (too many systems)
    tie_policy: str | None = None  # the tie policy of the oblivious values ranked

    def rows(self) -> pd.DataFrame:
        """Every system, ranked ones first (by rank) then the systems not ranked: the ``ranked`` columns, with
        ``rank`` and the aggregates empty, ``complete`` False and ``n_tasks`` counting usable tasks for the
        latter (their task values where usable). What an export carries."""
        rest = self.incomplete.drop(columns=["missing_tasks", "reason"], errors="ignore").assign(complete=False)
        frame = pd.concat([self.ranked, rest], ignore_index=True)
        frame["rank"] = frame["rank"].astype("Int64")
        frame["complete"] = frame["complete"].astype(bool)
        for column in ("has_query_data", "zero_task"):
            if column in frame:
                frame[column] = frame[column].astype("boolean")
        return frame[list(self.ranked.columns)] if len(self.ranked.columns) else frame


@dataclass
class RankFlips:
    """Result of :meth:`Store.rank_flips` (systems complete under both conditions only)."""

    ranks: pd.DataFrame  # system, G_a, G_b, G_min_a, G_max_a, G_min_b, G_max_b, rank_a, rank_b, rank_change
    #                      (rank_change = rank_b - rank_a; positive = moved down)
    flipped_pairs: pd.DataFrame  # system_1, system_2 (system_1 ranked above system_2 under a, below under b),
    #                              G_a_1, G_a_2, G_b_1, G_b_2, intervals_overlap (bool: [G_min,G_max] overlap in a or b)
    kendall_tau_b: float  # between G_a and G_b (NaN with < 2 systems)
    overlapping_pairs: pd.DataFrame  # condition ('a'|'b'), system_1, system_2, lo_1, hi_1, lo_2, hi_2
    #                                  (pairs whose tie-aware [G_min, G_max] intervals overlap; published
    #                                   rows without min/max are not included)
    tasks: list[str] = field(default_factory=list)  # tasks G was computed over (present under both)


@dataclass
class Gap:
    """Result of :meth:`Store.instruction_gap` / :meth:`Store.mcr_vs_full`: b − a per task and in G."""

    per_task: pd.DataFrame  # system, task, a, b, gap (= b - a)
    per_system: pd.DataFrame  # system, G_a, G_b, gap (= G_b - G_a), n_tasks (tasks present under both)
    label_a: str  # e.g. 'without instruction' / 'full'
    label_b: str  # e.g. 'with instruction' / 'mcr'


@dataclass
class PairedTest:
    """Result of :meth:`Store.paired_test` (two-sided paired randomization / sign-flip test)."""

    system_a: str
    system_b: str
    task: str | None  # None = all shared tasks (statistic = mean over tasks of the per-task mean difference)
    observed_diff: float  # mean(a - b) (oblivious values)
    p_value: float  # (1 + #{|resampled| >= |observed|}) / (1 + n_resamples)
    n_queries: int  # paired queries used
    n_tasks: int
    n_resamples: int


# -- file classification --------------------------------------------------------------------------------
def _arrow_kind(arrow_type) -> str:
    """'str' | 'bool' | 'num' | 'other' for an arrow type (dictionaries by their value type)."""
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type):
        return "str"
    if pa.types.is_boolean(arrow_type):
        return "bool"
    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type) or pa.types.is_null(arrow_type):
        return "num"
    return "other"


def _schema_problem(schema, required: dict[str, str], optional: dict[str, str]) -> str | None:
    """None when ``schema`` holds every required column with a compatible type, else what is wrong."""
    names = set(schema.names)
    missing = [c for c in required if c not in names]
    if missing:
        return f"missing columns {missing}"
    for column, kind in {**required, **{k: v for k, v in optional.items() if k in names}}.items():
        actual = _arrow_kind(schema.field(column).type)
        if kind != "any" and actual != kind and not (actual == "num" and schema.field(column).type.id == 0):
            return f"column {column!r} has type {schema.field(column).type}, expected {kind}"
    return None


def _one_line(exc: BaseException) -> str:
    """An exception's text on one line (DuckDB / Arrow messages span several; skip reasons are one line)."""
    text = " ".join(str(exc).split())
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def classify_parquet(path: Path) -> tuple[str | None, str]:
    """('query_metrics' | 'task_scores' | 'systems', '') or (None, reason) from the footer alone."""
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except Exception as exc:  # truncated / not parquet / unreadable
        return None, f"unreadable parquet: {type(exc).__name__}: {_one_line(exc)}"
    closest: tuple[int, str] | None = None
    for kind, required, optional in (
        ("query_metrics", QUERY_METRICS_COLUMNS, {}),
        ("task_scores", TASK_SCORES_COLUMNS, TASK_SCORES_OPTIONAL),
        ("systems", SYSTEMS_COLUMNS, SYSTEMS_OPTIONAL),
    ):
        problem = _schema_problem(schema, required, optional)
        if problem is None:
            return kind, ""
        n_missing = sum(c not in schema.names for c in required)
        if closest is None or n_missing < closest[0]:
            closest = (n_missing, f"closest to {kind}: {problem}")
    return None, f"foreign schema ({closest[1]})"


def _walk_parquet(root: Path, *, runs: bool) -> tuple[list[Path], list[SkippedFile]]:
    """(sorted parquet files under ``root``: results only (runs=False) or only under ``root/runs``; the
    folders that could not be listed). Symlinked folders are not followed (as ``Path.rglob``)."""
    if not root.is_dir():
        return [], []
    runs_root = root / RUNS_DIR
    found: list[Path] = []
    unreadable: list[SkippedFile] = []

    def record(error: OSError) -> None:
        unreadable.append(SkippedFile(str(error.filename or root),
                                      f"unreadable folder: {type(error).__name__}: {error.strerror or error}"))

    for folder, _, names in os.walk(root, onerror=record):
        folder_path = Path(folder)
        under_runs = folder_path == runs_root or runs_root in folder_path.parents
        if under_runs != runs:
            continue
        for name in names:
            if not name.endswith(".parquet") or name.startswith("."):  # '.…' = temp files of atomic writes
                continue
            path = folder_path / name
            # a dangling symlink is listed so that it is reported as skipped, not silently ignored; FIFOs and
            # other special files are never opened (reading one could block the load)
            if path.is_file() or (path.is_symlink() and not path.exists()):
                found.append(path)
    if not runs:  # folders under runs/ are the runs panel's business
        unreadable = [item for item in unreadable
                      if not (Path(item.path) == runs_root or runs_root in Path(item.path).parents)]
    return sorted(found), sorted(unreadable, key=lambda item: item.path)


def _parquet_files(root: Path, *, runs: bool) -> list[Path]:
    """Sorted parquet files under ``root``: results only (runs=False) or only under ``root/runs``."""
    return _walk_parquet(root, runs=runs)[0]


def _file_key(path: Path) -> tuple[str, int, int, int, int]:
    """(path, size, mtime_ns, inode, device): identifies one version of a file without reading it (an
    atomic rewrite gets a new inode even within the same mtime tick)."""
    stat = path.stat()
    return str(path), stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_dev


@lru_cache(maxsize=1)
def _interval_code_version() -> str | None:
    """Digest of the source of the modules whose code decides a bootstrap interval (this one, aggregate,
    arrow_np, disk_cache) and of the numpy, DuckDB (its ``hash`` pairs the queries) and pyarrow versions:
    part of every cached interval's key, so any edit of that code invalidates them. None when a source file
    cannot be read (an installation without sources): intervals are then never cached."""
    import duckdb
    import pyarrow

    from evalcore import arrow_np

    digest = hashlib.blake2b(digest_size=16)
    try:
        for module in (__file__, aggregate.__file__, arrow_np.__file__, disk_cache.__file__):
            digest.update(Path(module).read_bytes())
    except (OSError, TypeError):
        return None
    digest.update(repr((np.__version__, duckdb.__version__, pyarrow.__version__)).encode())
    return digest.hexdigest()


class _SumsDiskCache:
    """Per-file ``query_metrics`` sums kept across processes, one Arrow IPC file per file version.

    A new process (a dashboard server start, every ``evalcore leaderboard``) would otherwise scan every
    per-query file again (1.2 s for 10M rows). Entries live outside the data dir (``$TIEBREAK_CACHE``, else
    ``$XDG_CACHE_HOME/tiebreak`` or ``~/.cache/tiebreak``) and are keyed by the file's path, size, mtime and
    inode (an atomic rewrite gets a new inode), so a changed file is never served from the cache. Writes are
    atomic (temp file + rename); an unreadable entry or an unwritable folder only means a re-scan.
    """

    def __init__(self) -> None:
        root = disk_cache.kind_root("sums")
        self.folder = None if root is None else root / _SUMS_CACHE_VERSION

    def _entry(self, path: Path, version: tuple) -> Path | None:
        if self.folder is None:
            return None
        key = repr((str(path.resolve()),) + tuple(version))
        return self.folder / (hashlib.blake2b(key.encode(), digest_size=16).hexdigest() + ".arrow")

    def get(self, path: Path, version: tuple):
        """The cached sums table of this file version, or None."""
        import pyarrow as pa

        try:
            entry = self._entry(path, version)
            if entry is None or not entry.is_file():
                return None
            with pa.OSFile(str(entry), "rb") as source:
                table = pa.ipc.open_file(source).read_all()
            files = table["file"].unique().to_pylist() if "file" in table.column_names else None
            return table if files in ([], [str(path)]) else None
        except Exception:  # a damaged or foreign entry: scan the file again
            return None

    def put(self, path: Path, version: tuple, table) -> None:
        import pyarrow as pa

        entry = self._entry(path, version)
        if entry is None:
            return

        def write(temporary: str) -> None:
            with pa.OSFile(temporary, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)

        disk_cache.write_atomic(entry, write, keep=disk_cache.KEEP["sums"])


def _query_sums(conn: "duckdb.DuckDBPyConnection", paths: list[Path]) -> dict[Path, object]:
    """Per-file sums of query_metrics (``_QUERY_SUMS_SELECT`` columns + ``file``), or the exception that
    made a file unreadable. One scan over all files; when it fails, file by file to find the bad ones."""
    import pyarrow as pa

    if not paths:
        return {}
    try:
        table = _finish_sums(conn, conn.sql(_QUERY_SUMS_BATCH_SQL, params=[[str(p) for p in paths]]).to_arrow_table())
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
            return {path: table.take(order[start:end]) for path, start, end in zip(paths, starts, ends)}
    found: dict[Path, object] = {}
    for path in paths:
        try:
            sums = conn.sql(_QUERY_SUMS_SQL, params=[str(path)]).to_arrow_table()
            sums = sums.append_column("file", pa.array([str(path)] * sums.num_rows, pa.string()))
            found[path] = _finish_sums(conn, sums)
        except Exception as exc:
            found[path] = exc
    return found


_HASH_SPREAD = np.uint64(0x9E3779B97F4A7C15)  # odd constant spreading group numbers over 64 bits


def _finish_sums(conn: "duckdb.DuckDBPyConnection", sums):
    """Scanned sums (of one or several files, column ``file``) with the ``qid_hashes`` lists replaced by
    ``n_distinct_qids``, the exact number of distinct qids of each group; the groups of a file holding rows
    without a qid are summed again without those rows (their number stays in ``n_null_qids``).

    The scan keeps the 64-bit hash of every qid (``count(DISTINCT qid)`` made it 6-10x slower); the hashes of
    all groups are sorted here at once, each mixed with its group's number: a group whose hashes all differ
    has distinct qids. Only a group with a repeated hash (a repeated qid, or a 64-bit collision) is counted
    exactly, by DuckDB, on its file and group.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    key = list(CONDITION_KEY)
    where = " AND ".join(f"{name}::{'BOOLEAN' if name == 'instruction' else 'VARCHAR'} IS NOT DISTINCT FROM ?"
                         for name in key)
    without_qid = pc.greater(sums["n_null_qids"], 0).to_numpy(zero_copy_only=False)
    if without_qid.any():  # rare: sum those files again without the rows lacking a qid
        files = sorted(set(pc.filter(sums["file"], pa.array(without_qid)).to_pylist()))
        kept = sums.filter(pc.invert(pc.is_in(sums["file"], pa.array(files, pa.string()))))
        parts = [kept]
        for file in files:
            named = conn.sql(_QUERY_SUMS_NAMED_SQL, params=[file]).to_arrow_table()
            missing_qids = conn.sql(
                f"SELECT {_QUERY_SUMS_KEY}, count(*)::BIGINT AS n FROM read_parquet(?) WHERE qid IS NULL "
                f"GROUP BY {_QUERY_SUMS_KEY}", params=[file]).df()
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
            distinct[index] = conn.execute(
                f"SELECT count(DISTINCT qid) FROM read_parquet(?) WHERE {where}",
                [rows[index]["file"]] + [rows[index][name] for name in key],
            ).fetchall()[0][0]
    position = sums.schema.get_field_index("qid_hashes")
    return sums.set_column(position, "n_distinct_qids", pa.array(distinct, pa.int64()))


def metric_bounded_by_one(metric: str) -> bool:
    """True for the metrics evalcore knows (nDCG, MRR, recall, precision, AP: all in [0, 1])."""
    from evalcore.metrics import METRIC_NAMES, parse_metric

    try:
        return parse_metric(metric).name in METRIC_NAMES
    except ValueError:
        return False


# why a task_scores row cannot be used (NULL when it can); ``bounded`` = the metric lies in [0, 1]
_TASK_ROW_PROBLEM_SQL = """CASE
  WHEN system IS NULL OR benchmark IS NULL OR task IS NULL OR setting IS NULL OR precision IS NULL
       OR metric IS NULL THEN 'no system, benchmark, task, setting, precision or metric name'
  WHEN value IS NULL THEN 'value is NULL'
  WHEN NOT (isfinite(value) AND coalesce(isfinite(expected), TRUE) AND coalesce(isfinite("min"), TRUE)
            AND coalesce(isfinite("max"), TRUE)) THEN 'value is not a finite number'
  WHEN least(value, coalesce(expected, value), coalesce("min", value), coalesce("max", value)) < 0
       THEN 'negative value'
  WHEN bounded AND greatest(value, coalesce(expected, value), coalesce("min", value), coalesce("max", value)) > 1
       THEN 'value above 1 for a metric bounded by 1 (a percentage?)'
  WHEN "min" > "max" + 1e-9 THEN 'min > max'
  WHEN value < "min" - 1e-9 OR value > "max" + 1e-9 OR expected < "min" - 1e-9 OR expected > "max" + 1e-9
       THEN 'value or expected outside [min, max]'
  WHEN n_queries < 0 THEN 'negative n_queries'
END"""


# "any" instruction state: per system, its with-instruction rows, else without, else unknown (NULL) ones
_INSTRUCTION_RANK = "coalesce(instruction::INTEGER, -1)"
# per-query rows that have every name (files with rows lacking one are read through this filter)
_NAMED_ROWS_SQL = "".join(f" AND {name} IS NOT NULL" for name in ("system", "benchmark", "task", "setting",
                                                                    "precision", "tie_policy", "metric", "qid"))


def _state(instruction_of: "pd.Series | dict | None", system: str) -> bool | None:
    """A system's resolved instruction state from a system -> state mapping: True, False or None (unknown)."""
    if instruction_of is None:
        return None
    value = instruction_of.get(system)
    return None if value is None or pd.isna(value) else bool(value)


def _vanished(path: Path) -> bool:
    """True when ``path`` is gone (removed or replaced by nothing since it was listed)."""
    return not os.path.lexists(path)


def _group_text(row) -> str:
    """'system 'x', task 'T', metric 'ndcg@10'' for messages about one per-query group."""
    return f"system {row['system']!r}, task {row['task']!r}, metric {row['metric']!r}"


@lru_cache(maxsize=256)
def _bounded(metric: str) -> bool:
    return metric_bounded_by_one(metric)


def _check_query_sums(table) -> tuple[object, str | None, list[str]]:
    """Check one file's scanned sums (:data:`_QUERY_SUMS_SELECT`, Arrow): (its usable groups as Arrow with the
    :data:`_QUERY_SUMS_COLUMNS`, why the whole file cannot be used or None, warnings about rows left out).

    Rows without a system/benchmark/task/setting/precision/tie-policy/metric name or without a qid are left out
    (a warning). A NULL, NaN, infinite or negative value, a value above 1 for a metric bounded by 1, min > max,
    oblivious or expected outside [min, max], or a qid repeated within one (system, condition, task, metric)
    make the whole file unusable: its task means would be wrong.
    """
    import pyarrow as pa

    def numbers(name: str) -> np.ndarray:
        return table[name].to_numpy(zero_copy_only=False).astype(np.float64)  # NULL -> NaN

    warnings: list[str] = []
    n_without_qid = int(numbers("n_null_qids").sum()) if table.num_rows else 0
    no_name = np.zeros(table.num_rows, dtype=bool)
    missing = []
    for name in _KEY_NAMES:
        nulls = table[name].is_null().to_numpy(zero_copy_only=False)
        if nulls.any():
            missing.append(name)
            no_name |= nulls
    n_queries = numbers("n_queries")
    if no_name.any():
        warnings.append(f"skipped {int(n_queries[no_name].sum())} per-query row(s) without a "
                        f"{'/'.join(missing)} name")
    if n_without_qid:
        warnings.append(f"skipped {n_without_qid} per-query row(s) without a qid")
    with np.errstate(invalid="ignore"):
        # a NaN or an infinity anywhere in a group makes one of its sums or extremes not finite (NULL: n_null_values)
        extremes = np.stack([numbers(c) for c in ("sum_oblivious", "sum_expected", "sum_min", "sum_max", "lowest",
                                                   "highest")], axis=1)
        metrics = table["metric"].to_pylist()
        bounded = np.array([m is not None and _bounded(m) for m in metrics], dtype=bool)
        checks = [
            (numbers("n_null_values") > 0, "NULL per-query value"),
            (~np.isfinite(extremes).all(axis=1), "NaN or infinite per-query value"),
            (numbers("lowest") < 0, "negative per-query value"),
            ((numbers("highest") > 1 + 1e-9) & bounded, "per-query value above 1 for a metric bounded by 1"),
            (numbers("least_gap") < -1e-9, "min > max, or oblivious/expected outside [min, max]"),
            (numbers("n_distinct_qids") < n_queries, "qid repeated"),
        ]
    for failed, what in checks:
        failed &= ~no_name
        if failed.any():
            index = int(np.flatnonzero(failed)[0])
            row = {name: table[name][index].as_py() for name in ("system", "task", "metric", "n_queries",
                                                                  "n_distinct_qids")}
            detail = (f" ({row['n_queries']} rows for {row['n_distinct_qids']} qids)"
                      if what == "qid repeated" else "")
            more = f" and {int(failed.sum()) - 1} more" if failed.sum() > 1 else ""
            return None, f"cannot be used: {what}{detail} for {_group_text(row)}{more}", warnings
    keep = ~no_name & (n_queries > 0)
    return table.filter(pa.array(keep)).select(list(_QUERY_SUMS_COLUMNS)), None, warnings


_QUERY_KEY_COLUMNS = ", ".join(f"{name}::{'BOOLEAN' if name == 'instruction' else 'VARCHAR'} AS {name}"
                               for name in CONDITION_KEY)


def _repeating_files(conn: "duckdb.DuckDBPyConnection", files: list[str]) -> dict[str, str]:
    """Of ``files`` (which share a (system, condition, task, metric) group), those holding a (group, qid) key
    that a file earlier in path order holds too: {file: reason}. One scan of those files; every file that is
    not the first holder of a repeated key is left out (never counted twice). A file that cannot be read here
    (removed meanwhile) is simply not compared."""
    key = ", ".join(CONDITION_KEY)
    try:
        rows = conn.execute(
            f"""WITH per_query AS (
                  SELECT filename AS file, {_QUERY_KEY_COLUMNS}, qid::VARCHAR AS qid
                  FROM read_parquet(?::VARCHAR[], filename = true, union_by_name = true) WHERE qid IS NOT NULL
                ), repeated AS (
                  SELECT {key}, qid, list_sort(list(DISTINCT file)) AS files FROM per_query
                  GROUP BY ALL HAVING count(DISTINCT file) > 1
                ), later AS (
                  SELECT files[1] AS first_file, unnest(files[2:]) AS file, system, task, metric, qid FROM repeated
                )
                SELECT file, first(first_file ORDER BY first_file), count(*), first(system), first(task),
                       first(metric), first(qid) FROM later GROUP BY file ORDER BY file""",
            [files],
        ).fetchall()
    except Exception:  # a file with a 'filename' column of its own, or one removed meanwhile: pair by pair
        rows = []
        for i, first in enumerate(files):
            for second in files[i + 1:]:
                count, example = _shared_queries(conn, Path(first), Path(second))
                if count and second not in {row[0] for row in rows}:
                    rows.append((second, first, count, None, None, None, example))
    dropped = {}
    for file, first_file, count, system, task, metric, qid in rows:
        example = qid if system is None else (f"e.g. system {system!r}, task {task!r}, metric {metric!r}, "
                                              f"qid {qid!r}")
        dropped[file] = (f"duplicate per-query rows: {count} (system, condition, task, metric, qid) rows also in "
                         f"{first_file} ({example}); that file is used, this one skipped")
    return dropped


_PER_QUERY_KEY_SELECT = (
    "SELECT DISTINCT system::VARCHAR AS system, benchmark::VARCHAR AS benchmark, task::VARCHAR AS task, "
    "setting::VARCHAR AS setting, instruction::BOOLEAN AS instruction, precision::VARCHAR AS precision, "
    "tie_policy::VARCHAR AS tie_policy, metric::VARCHAR AS metric, qid::VARCHAR AS qid FROM read_parquet(?) "
    "WHERE qid IS NOT NULL"
)


def _shared_queries(conn: "duckdb.DuckDBPyConnection", first: Path, second: Path) -> tuple[int, str]:
    """(number of (system, condition, task, metric, qid) keys held by both files, an example); (0, '') when
    a file cannot be read (one removed meanwhile is simply not there)."""
    same = " AND ".join(f"a.{c} IS NOT DISTINCT FROM b.{c}" for c in CONDITION_KEY)
    try:
        count, system, task, metric, qid = conn.execute(
            f"WITH a AS ({_PER_QUERY_KEY_SELECT}), b AS ({_PER_QUERY_KEY_SELECT}) "
            f"SELECT count(*), first(a.system), first(a.task), first(a.metric), first(a.qid) "
            f"FROM a JOIN b ON {same} AND a.qid = b.qid",
            [str(first), str(second)],
        ).fetchall()[0]
    except Exception:
        return 0, ""
    return int(count), (f"e.g. system {system!r}, task {task!r}, metric {metric!r}, qid {qid!r}" if count else "")


def _as_list(values: Iterable[str] | None) -> list[str] | None:
    """A list of names for a parameter (a lone string is one name, not its characters)."""
    if values is None:
        return None
    if isinstance(values, str):
        return [values]
    return [str(v) for v in values]


class Store:
    """Views ``query_metrics``, ``task_scores``, ``systems`` over the parquet files under a data dir.

    ``data_dir`` defaults to ``$TIEBREAK_DATA`` or ``"data"``. Files are classified by schema; corrupt or
    foreign files are listed in :attr:`skipped` (and logged), never fatal. Files under ``<data_dir>/runs/``
    are raw run files (see :meth:`runs`), not results. Thread-safe: every method uses its own cursor.
    """

    data_dir: Path
    skipped: list[SkippedFile]

    def __init__(self, data_dir: str | Path | None = None) -> None:
        if data_dir is None:
            data_dir = os.environ.get(DATA_ENV) or "data"
        self.data_dir = Path(data_dir)
        self.skipped = []
        self.warnings: list[LoadWarning] = []
        self._overlap_cache: dict = {}  # (file version, file version) -> _shared_queries answer
        self._null_key_files: frozenset[str] = frozenset()  # files some of whose rows lack a name or qid
        self._lock = threading.Lock()  # guards the connection swap
        self._reload_lock = threading.Lock()  # one reload at a time (shares the per-file cache)
        # file version -> (its scanned sums, their _check_query_sums verdict)
        self._query_sums_cache: dict[tuple[str, int, int, int, int], tuple] = {}
        self._disk_cache = _SumsDiskCache()
        self._conn = None
        self._file_index_free = False
        self._fingerprint = ""
        self.reload()

    # -- connection & files -------------------------------------------------------------------------------
    def cursor(self) -> "duckdb.DuckDBPyConnection":
        """A new cursor on the shared in-memory connection (one per caller / thread)."""
        with self._lock:
            return self._conn.cursor()

    def _cursor_and_layout(self) -> tuple["duckdb.DuckDBPyConnection", bool]:
        """:meth:`cursor`, and whether DuckDB's ``file_index`` virtual column is usable on the per-query files
        of that same load (a data column of that name would shadow it)."""
        with self._lock:
            return self._conn.cursor(), self._file_index_free

    def fingerprint(self) -> str:
        """Cheap hash of the version (path, size, mtime, inode) of every parquet file under the data dir (no file is read)."""
        digest = hashlib.blake2b(digest_size=16)
        for runs in (False, True):
            for path in _parquet_files(self.data_dir, runs=runs):
                try:
                    digest.update(repr(_file_key(path)).encode())
                except OSError:
                    continue
        return digest.hexdigest()

    @property
    def loaded_fingerprint(self) -> str:
        """:meth:`fingerprint` of the files as they were when the tables now served were loaded."""
        with self._lock:
            return self._fingerprint

    def is_stale(self) -> bool:
        """True when :meth:`fingerprint` differs from the one at the last load (then call :meth:`reload`)."""
        return self.fingerprint() != self.loaded_fingerprint

    def reload(self) -> None:
        """Rescan the data dir and rebuild the views (new/removed/changed files take effect)."""
        with self._reload_lock:
            self._reload()

    def _reload(self) -> None:
        """Classify files, sum query_metrics per file (cached), check them, build tables and views, swap
        connections. Files or rows that cannot be used go to :attr:`skipped` / :attr:`warnings`."""
        import duckdb
        import pyarrow as pa

        fingerprint = self.fingerprint()
        warnings: list[LoadWarning] = []
        files, skipped = _walk_parquet(self.data_dir, runs=False)
        by_kind: dict[str, list[Path]] = {"query_metrics": [], "task_scores": [], "systems": []}
        for path in files:
            kind, reason = classify_parquet(path)
            if kind is None:
                if not _vanished(path):  # a file removed since it was listed is simply not there
                    skipped.append(SkippedFile(str(path), reason))
            else:
                by_kind[kind].append(path)

        conn = duckdb.connect(":memory:")
        try:  # footers of the per-query files are re-read by every per-query query otherwise
            conn.execute("SET parquet_metadata_cache = true")
        except duckdb.Error:  # pragma: no cover - parquet extension not loadable
            pass
        conn.execute("SET enable_progress_bar = false")  # a long first scan must not draw on the CLI's stderr
        # query_metrics: per-file sums (validates data pages; cached per file version)
        versions: dict[Path, tuple[str, int, int, int, int] | OSError] = {}
        for path in by_kind["query_metrics"]:
            try:
                versions[path] = _file_key(path)
            except OSError as exc:  # removed while scanning
                versions[path] = exc
        uncached = [path for path, version in versions.items()
                    if not isinstance(version, OSError) and version not in self._query_sums_cache]
        new_sums = {}
        for path in uncached:  # sums another process already computed for this very file version
            table = self._disk_cache.get(path, versions[path])
            if table is not None:
                new_sums[path] = table
        scanned = _query_sums(conn, [path for path in uncached if path not in new_sums])
        for path, table in scanned.items():
            if not isinstance(table, Exception):
                self._disk_cache.put(path, versions[path], table)
        new_sums.update(scanned)
        checked: dict[Path, object] = {}  # path -> its usable sums (Arrow, _QUERY_SUMS_COLUMNS)
        cache, null_key_files = {}, set()
        for path, version in versions.items():
            if isinstance(version, OSError):
                if not _vanished(path):
                    skipped.append(SkippedFile(str(path), f"unreadable: {_one_line(version)}"))
                continue
            entry = (new_sums[path], None) if path in new_sums else self._query_sums_cache[version]
            table, verdict = entry
            if isinstance(table, Exception):
                if not _vanished(path):  # a file removed since it was listed is simply not there
                    skipped.append(SkippedFile(str(path), f"unreadable query_metrics data: {_one_line(table)}"))
                continue
            if verdict is None:  # checked once per file version
                verdict = _check_query_sums(table)
            cache[version] = (table, verdict)
            sums, problem, file_warnings = verdict
            if problem is not None:
                skipped.append(SkippedFile(str(path), problem))
                continue
            warnings.extend(LoadWarning(str(path), message) for message in file_warnings)
            if file_warnings:
                null_key_files.add(str(path))
            checked[path] = sums
        self._query_sums_cache = cache
        for path, reason in self._duplicate_query_files(conn, checked, versions).items():
            skipped.append(SkippedFile(str(path), reason))
            del checked[path]
        good_qm_files = [str(path) for path in checked]
        while good_qm_files:
            try:
                relation = conn.read_parquet(good_qm_files, union_by_name=True)
                break
            except Exception:  # a file removed after its sums were read (or cached): it is simply not there
                gone = [f for f in good_qm_files if _vanished(Path(f))]
                if not gone:
                    raise
                good_qm_files = [f for f in good_qm_files if f not in gone]
                checked = {path: sums for path, sums in checked.items() if str(path) not in gone}
        if checked:
            tables = list(checked.values())
            conn.from_arrow(pa.concat_tables([t.cast(tables[0].schema) for t in tables])).create("query_task_sums")
        else:
            conn.execute(
                "CREATE TABLE query_task_sums (system VARCHAR, benchmark VARCHAR, task VARCHAR, setting VARCHAR,"
                " instruction BOOLEAN, precision VARCHAR, tie_policy VARCHAR, metric VARCHAR, n_queries BIGINT,"
                " sum_oblivious DOUBLE, sum_expected DOUBLE, sum_min DOUBLE, sum_max DOUBLE, n_tied BIGINT,"
                " source VARCHAR, file VARCHAR)"
            )
        file_index_free = False
        if good_qm_files:
            file_index_free = "file_index" not in relation.columns
            relation.project(", ".join(f'"{c}"' for c in QUERY_METRICS_COLUMNS)).create_view("query_metrics")
        else:
            conn.execute(_EMPTY_QUERY_METRICS_SQL)

        self._load_task_scores(conn, by_kind["task_scores"], skipped, warnings)
        self._load_systems(conn, by_kind["systems"], skipped, warnings)
        conn.execute(_TASK_RESULTS_SQL)

        for item in skipped:
            log.warning("skipped %s: %s", item.path, item.reason)
        for item in warnings:
            log.warning("%s: %s", item.path, item.message)
        with self._lock:
            self._conn = conn
            self._file_index_free = file_index_free
            self._null_key_files = frozenset(null_key_files)
            self.skipped = skipped
            self.warnings = warnings
            self._fingerprint = fingerprint

    def _duplicate_query_files(
        self, conn: "duckdb.DuckDBPyConnection", checked: dict, versions: dict
    ) -> dict[Path, str]:
        """Files whose per-query rows repeat those of an earlier file (path order): {later file: reason}.

        Two files holding the same (system, condition, task, metric) may split its queries between them; they
        conflict when they share a qid there (a copied file, a re-run dropped next to the original). The
        earlier file is kept, the later one skipped whole (never counted twice). Only the files sharing a group
        are read again, in one scan (:func:`_repeating_files`), and the answer is kept until one of them changes.
        """
        import pyarrow as pa

        key = list(CONDITION_KEY)
        if len(checked) < 2:
            self._overlap_cache = {}
            return {}
        schema = next(iter(checked.values())).select(key + ["file"]).schema
        groups = pa.concat_tables([t.select(key + ["file"]).cast(schema) for t in checked.values()]).to_pandas()
        shared = groups[groups.duplicated(key, keep=False)]
        involved = sorted(set(shared["file"]))
        if not involved:
            self._overlap_cache = {}
            return {}
        cache_key = tuple((file, versions[Path(file)]) for file in involved)
        dropped = self._overlap_cache.get(cache_key)
        if dropped is None:
            dropped = _repeating_files(conn, involved)
        self._overlap_cache = {cache_key: dropped}
        return {Path(file): reason for file, reason in dropped.items()}

    @staticmethod
    def _load_task_scores(conn: "duckdb.DuckDBPyConnection", files: list[Path], skipped: list[SkippedFile],
                          warnings: list[LoadWarning]) -> None:
        """Materialise task_scores (small) with contract types; tie_policy defaults to docid-desc. Rows
        without a name, with a value that cannot be right or repeating another row's key are left out, with a
        warning per file (identical repeats: one copy kept; conflicting ones: none)."""
        import pyarrow.parquet as pq

        columns = (
            "system::VARCHAR AS system, benchmark::VARCHAR AS benchmark, task::VARCHAR AS task, "
            "setting::VARCHAR AS setting, instruction::BOOLEAN AS instruction, precision::VARCHAR AS precision, "
            "metric::VARCHAR AS metric, value::DOUBLE AS value, expected::DOUBLE AS expected, "
            '"min"::DOUBLE AS "min", "max"::DOUBLE AS "max", n_queries::BIGINT AS n_queries, '
            "source::VARCHAR AS source"
        )
        conn.execute(
            "CREATE TEMP TABLE task_scores_raw (system VARCHAR, benchmark VARCHAR, task VARCHAR, setting VARCHAR, "
            "instruction BOOLEAN, precision VARCHAR, metric VARCHAR, value DOUBLE, expected DOUBLE, "
            '"min" DOUBLE, "max" DOUBLE, n_queries BIGINT, source VARCHAR, tie_policy VARCHAR, file VARCHAR, '
            "file_order INTEGER, row_order BIGINT)"
        )
        for order, path in enumerate(files):
            try:
                has_policy = "tie_policy" in pq.read_schema(path).names
                policy = "tie_policy::VARCHAR" if has_policy else "NULL::VARCHAR"
                conn.execute(
                    f"INSERT INTO task_scores_raw SELECT {columns}, coalesce({policy}, ?) AS tie_policy, ?, ?, "
                    "file_row_number FROM read_parquet(?, file_row_number = true)",
                    [DEFAULT_TIE_POLICY, str(path), order, str(path)],
                )
            except Exception as exc:
                if not _vanished(path):
                    skipped.append(SkippedFile(str(path), f"unreadable task_scores data: {_one_line(exc)}"))
        bounded = [m for (m,) in conn.execute("SELECT DISTINCT metric FROM task_scores_raw").fetchall()
                   if m is not None and metric_bounded_by_one(m)]
        conn.execute(
            f"CREATE TEMP TABLE task_scores_checked AS SELECT * EXCLUDE (bounded), {_TASK_ROW_PROBLEM_SQL} AS problem "
            "FROM (SELECT *, list_contains(?::VARCHAR[], metric) AS bounded FROM task_scores_raw)", [bounded]
        )
        conn.execute("DROP TABLE task_scores_raw")
        for file, reason, count, system, task, metric in conn.execute(
            "SELECT file, problem, count(*), first(system), first(task), first(metric) FROM task_scores_checked "
            "WHERE problem IS NOT NULL GROUP BY file, problem ORDER BY file, problem"
        ).fetchall():
            warnings.append(LoadWarning(file, f"skipped {count} task_scores row(s): {reason} "
                                              f"(e.g. system {system!r}, task {task!r}, metric {metric!r})"))
        key = "system, benchmark, task, setting, instruction, precision, tie_policy, metric"
        duplicates = conn.execute(
            f"""WITH keyed AS (
                  SELECT {key}, count(DISTINCT (value, expected, "min", "max")) AS n_values,
                         list_sort(list(file)) AS files
                  FROM task_scores_checked WHERE problem IS NULL GROUP BY ALL HAVING count(*) > 1
                )
                SELECT files, n_values > 1 AS conflicting, count(*) AS n_keys, first(system), first(task),
                       first(metric) FROM keyed GROUP BY files, conflicting ORDER BY files, conflicting"""
        ).fetchall()
        for files_of_key, conflicting, n_keys, system, task, metric in duplicates:
            names = list(dict.fromkeys(files_of_key))
            where = " and ".join(names) + (" (repeated within the file)" if len(names) < len(files_of_key) else "")
            outcome = ("their values differ, so none of them is used" if conflicting
                       else "their values are identical, so one copy is used")
            message = (f"{n_keys} (system, condition, task, metric) key(s) have several task_scores rows in "
                       f"{where}: {outcome} (e.g. system {system!r}, task {task!r}, metric {metric!r})")
            warnings.extend(LoadWarning(file, message) for file in names)
        conn.execute(
            f"""CREATE TABLE task_scores AS
                SELECT * EXCLUDE (file_order, row_order, n_values, problem) FROM (
                  SELECT *, count(DISTINCT (value, expected, "min", "max")) OVER (PARTITION BY {key}) AS n_values
                  FROM task_scores_checked WHERE problem IS NULL
                  QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY file_order, row_order) = 1
                ) WHERE n_values = 1"""
        )
        conn.execute("DROP TABLE task_scores_checked")

    @staticmethod
    def _load_systems(conn: "duckdb.DuckDBPyConnection", files: list[Path], skipped: list[SkippedFile],
                      warnings: list[LoadWarning]) -> None:
        """Materialise systems: one row per system (first file in path order wins per column). Rows without a
        system name are left out and a size that is not a count (negative, NaN, inf) is dropped, with a
        warning per file."""
        import pyarrow.parquet as pq

        column_defs = ", ".join(f"{name} {sql_type}" for name, sql_type in SYSTEMS_SQL_TYPES.items())
        conn.execute(f"CREATE TEMP TABLE systems_raw ({column_defs}, file_order INTEGER, file VARCHAR)")
        for order, path in enumerate(files):
            try:
                names = set(pq.read_schema(path).names)
                select = ", ".join(
                    (f"{name}::{sql_type}" if name in names else f"NULL::{sql_type}") + f" AS {name}"
                    for name, sql_type in SYSTEMS_SQL_TYPES.items()
                )
                conn.execute(f"INSERT INTO systems_raw SELECT {select}, ?, ? FROM read_parquet(?)",
                             [order, str(path), str(path)])
            except Exception as exc:
                if not _vanished(path):
                    skipped.append(SkippedFile(str(path), f"unreadable systems data: {_one_line(exc)}"))
        for file, n_rows in conn.execute(
            "SELECT file, count(*) FROM systems_raw WHERE system IS NULL GROUP BY file ORDER BY file"
        ).fetchall():
            warnings.append(LoadWarning(file, f"skipped {n_rows} systems row(s) without a system name"))
        for file, n_rows, example, value in conn.execute(
            "SELECT file, count(*), first(system), first(n_parameters) FROM systems_raw "
            "WHERE system IS NOT NULL AND NOT (isfinite(n_parameters) AND n_parameters >= 0) "
            "GROUP BY file ORDER BY file"
        ).fetchall():
            warnings.append(LoadWarning(file, f"ignored n_parameters of {n_rows} system(s): expected a parameter "
                                              f"count >= 0 (e.g. {value} for {example!r})"))
        conn.execute("DELETE FROM systems_raw WHERE system IS NULL")
        conn.execute("UPDATE systems_raw SET n_parameters = NULL WHERE NOT (isfinite(n_parameters) "
                     "AND n_parameters >= 0)")
        first_values = ", ".join(
            f"first({name} ORDER BY file_order) FILTER (WHERE {name} IS NOT NULL) AS {name}"
            for name in SYSTEMS_SQL_TYPES if name != "system"
        )
        conn.execute(f"CREATE TABLE systems AS SELECT system, {first_values} FROM systems_raw GROUP BY system")
        conn.execute("DROP TABLE systems_raw")

    # -- SQL helpers ----------------------------------------------------------------------------------------
    def _query(self, sql: str, params: list | None = None) -> pd.DataFrame:
        """Run one parameterised statement on a fresh cursor."""
        cursor = self.cursor()
        try:
            return cursor.execute(sql, params or []).df()
        finally:
            cursor.close()

    @staticmethod
    def _where(
        cond: Condition,
        systems: list[str] | None = None,
        *,
        skip: tuple[str, ...] = (),
        tasks: list[str] | None = None,
    ) -> tuple[str, list]:
        """WHERE text (fixed column names, ``?`` placeholders) and its parameters for a condition."""
        clauses, params = [], []
        for column in ("benchmark", "metric", "setting", "instruction", "precision", "tie_policy"):
            value = getattr(cond, column)
            if column in skip or value is None:
                continue
            clauses.append(f"{column} = ?")
            params.append(value)
        if systems is not None:
            clauses.append("list_contains(?::VARCHAR[], system)")
            params.append(systems)
        if tasks is not None:
            clauses.append("list_contains(?::VARCHAR[], task)")
            params.append(tasks)
        return (" AND ".join(clauses) or "TRUE"), params

    # -- catalogue ----------------------------------------------------------------------------------------
    def facets(self) -> dict:
        """What exists, for building controls.

        Keys: ``benchmarks`` (list[str]); ``by_benchmark`` {benchmark: {metrics, settings, instructions
        (list[bool]), precisions, tie_policies, tasks (lists, sorted)}}; ``families`` (list[str]);
        ``size_range`` ((min, max) n_parameters or None); ``conditions`` (DataFrame: benchmark, setting,
        instruction, precision, tie_policy, metric, n_systems, n_tasks, has_query_data).
        """
        conditions = self._query(
            "SELECT benchmark, setting, instruction, precision, tie_policy, metric, "
            "count(DISTINCT system) AS n_systems, count(DISTINCT task) AS n_tasks, "
            "bool_or(has_query_data) AS has_query_data FROM task_results GROUP BY ALL "
            "ORDER BY benchmark, setting, instruction, precision, tie_policy, metric"
        )
        tasks = self._query("SELECT DISTINCT benchmark, task FROM task_results ORDER BY benchmark, task")
        by_benchmark = {}
        for benchmark, rows in conditions.groupby("benchmark", sort=True):
            by_benchmark[benchmark] = {
                "metrics": sorted(rows["metric"].unique().tolist()),
                "settings": sorted(rows["setting"].unique().tolist()),
                "instructions": sorted(bool(v) for v in rows["instruction"].dropna().unique()),
                "precisions": sorted(rows["precision"].unique().tolist()),
                "tie_policies": sorted(rows["tie_policy"].unique().tolist()),
                "tasks": tasks.loc[tasks["benchmark"] == benchmark, "task"].tolist(),
            }
        systems = self.systems()
        sizes = systems["n_parameters"].dropna()
        return {
            "benchmarks": sorted(by_benchmark),
            "by_benchmark": by_benchmark,
            "families": sorted(systems["family"].dropna().unique().tolist()),
            "size_range": (float(sizes.min()), float(sizes.max())) if len(sizes) else None,
            "conditions": conditions,
        }

    def systems(
        self,
        search: str | None = None,
        families: Iterable[str] | None = None,
        min_parameters: float | None = None,
        max_parameters: float | None = None,
        open_weights: bool | None = None,
        uses_instructions: bool | None = None,
        benchmark: str | None = None,
    ) -> pd.DataFrame:
        """Systems matching the filters (None = no filter; a size bound excludes unknown sizes).

        Columns: system, display_name, family, n_parameters, license, open_weights, uses_instructions,
        release_date, reference, source, revision, has_query_data. Includes systems that only appear in results
        (metadata NULL). ``search`` is a case-insensitive substring of system or display_name.
        """
        clauses, params = [], []
        if search:
            clauses.append(
                "(contains(lower(s.system), lower(?)) OR contains(lower(coalesce(s.display_name, '')), lower(?)))"
            )
            params += [search, search]
        if families is not None:
            clauses.append("list_contains(?::VARCHAR[], s.family)")
            params.append(_as_list(families))
        if min_parameters is not None:
            clauses.append("s.n_parameters >= ?")
            params.append(float(min_parameters))
        if max_parameters is not None:
            clauses.append("s.n_parameters <= ?")
            params.append(float(max_parameters))
        if open_weights is not None:
            clauses.append("s.open_weights = ?")
            params.append(bool(open_weights))
        if uses_instructions is not None:
            clauses.append("s.uses_instructions = ?")
            params.append(bool(uses_instructions))
        result_filter, result_params = "TRUE", []
        if benchmark is not None:
            result_filter, result_params = "benchmark = ?", [benchmark]
        sql = f"""
        WITH in_results AS (
          SELECT system, bool_or(has_query_data) AS has_query_data FROM task_results
          WHERE {result_filter} GROUP BY system
        ), s AS (
          SELECT coalesce(m.system, r.system) AS system, coalesce(m.display_name, coalesce(m.system, r.system))
                 AS display_name, m.family, m.n_parameters, m.license, m.open_weights, m.uses_instructions,
                 m.release_date, m.reference, m.source, m.revision,
                 coalesce(r.has_query_data, FALSE) AS has_query_data
          FROM systems m {'RIGHT' if benchmark is not None else 'FULL OUTER'} JOIN in_results r ON m.system = r.system
        )
        SELECT * FROM s WHERE {' AND '.join(clauses) or 'TRUE'} ORDER BY system
        """
        return self._query(sql, result_params + params)

    # -- results ------------------------------------------------------------------------------------------
    def task_table(self, cond: Condition, systems: Iterable[str] | None = None) -> pd.DataFrame:
        """One row per system × task under ``cond``.

        Columns: system, task, instruction, value, expected, min, max, n_queries, tied_share, source,
        has_query_data.
        """
        where, params = self._where(cond, _as_list(systems))
        partition = "" if cond.instruction is not None else (
            f" QUALIFY {_INSTRUCTION_RANK} = max({_INSTRUCTION_RANK}) OVER (PARTITION BY system)"
        )
        table = self._query(
            f"SELECT {_TASK_RESULT_COLUMNS} FROM task_results WHERE {where}{partition} ORDER BY system, task",
            params,
        )
        return table.drop_duplicates(["system", "task"]).reset_index(drop=True)

    def leaderboard(
        self,
        cond: Condition,
        systems: Iterable[str] | None = None,
        tasks: Iterable[str] | None = None,
        bootstrap: int = 1000,
        seed: int = 0,
        aggregate: str | None = None,
    ) -> Leaderboard:
        """Systems ranked by ``aggregate`` (competition 'min' ranks) over ``tasks`` (None = every task of the
        benchmark under ``cond``): ``G`` or ``mean``; None = the benchmark's own
        (:func:`evalcore.aggregate.official_aggregate`: G for RAR-b, mean for R2MED). Systems missing a task go
        to ``incomplete``. ``bootstrap=0`` skips intervals. ``policy_swaps`` lists the pairs whose order by
        ``cond.tie_policy`` differs from their order by expected values."""
        ranked_by = aggregate or _aggregate.official_aggregate(cond.benchmark)
        table = self.task_table(cond, systems)
        task_list = sorted(table["task"].dropna().unique().tolist()) if tasks is None else _as_list(tasks)
        table = table[table["task"].isin(task_list)]
        ranked, incomplete = _aggregate.leaderboard_frames(table, task_list, ranked_by)
        if cond.instruction is None and len(incomplete):
            incomplete["reason"] = self._other_state_reasons(cond, table, incomplete, task_list)
        has_data = table.groupby("system")["has_query_data"].all()
        ranked.insert(
            ranked.columns.get_loc("zero_task") + 1, "has_query_data",
            ranked["system"].map(has_data).fillna(False).astype(bool),
        )
        interval_columns = {c: np.full(len(ranked), np.nan)
                            for c in ("G_lo", "G_hi", "mean_lo", "mean_hi", "rank_lo", "rank_hi")}
        used_resamples = 0
        with_data = ranked.loc[ranked["has_query_data"], "system"].tolist()
        if bootstrap > 0 and with_data and task_list:
            instruction_of = table.groupby("system")["instruction"].first()
            intervals = self._g_intervals(cond, with_data, task_list, instruction_of, bootstrap, seed)
            position = ranked.set_index("system").index.get_indexer(with_data)
            for name, (lo, hi) in intervals.items():
                interval_columns[f"{name}_lo"][position] = lo
                interval_columns[f"{name}_hi"][position] = hi
            # rank intervals from the ranking aggregate's; systems without per-query data count as points
            point = ranked[ranked_by].to_numpy(dtype=np.float64)
            lo = np.where(np.isnan(interval_columns[f"{ranked_by}_lo"]), point, interval_columns[f"{ranked_by}_lo"])
            hi = np.where(np.isnan(interval_columns[f"{ranked_by}_hi"]), point, interval_columns[f"{ranked_by}_hi"])
            rank_lo, rank_hi = _aggregate.rank_intervals(lo, hi)
            known = ~np.isnan(interval_columns[f"{ranked_by}_lo"])
            interval_columns["rank_lo"][known] = rank_lo[known]
            interval_columns["rank_hi"][known] = rank_hi[known]
            used_resamples = bootstrap
        insert_at = ranked.columns.get_loc("has_query_data") + 1
        for offset, (name, values) in enumerate(interval_columns.items()):
            ranked.insert(insert_at + offset, name, values)
        swaps = _aggregate.order_swaps(ranked["system"].to_numpy(dtype=object), ranked[ranked_by].to_numpy(),
                                       ranked[f"{ranked_by}_expected"].to_numpy())
        return Leaderboard(
            ranked=ranked,
            incomplete=incomplete,
            tasks=_aggregate.task_column_labels(task_list),
            zero_task_systems=ranked.loc[ranked["zero_task"], "system"].tolist(),
            bootstrap=used_resamples,
            ranked_by=ranked_by,
            task_names=list(task_list),
            policy_swaps=swaps,
            tie_policy=cond.tie_policy,
        )

    def _other_state_reasons(
        self, cond: Condition, table: pd.DataFrame, incomplete: pd.DataFrame, tasks: list[str]
    ) -> list[str]:
        """``incomplete``'s reasons, each followed by the missing tasks the system has under another instruction
        state ('any' takes one state per system: with, else without, else unknown)."""
        from dataclasses import replace

        where, params = self._where(replace(cond, instruction=None), incomplete["system"].tolist(), tasks=tasks)
        found = self._query(f"SELECT DISTINCT system, task, instruction FROM task_results WHERE {where}", params)
        state_of = table.groupby("system")["instruction"].first()
        labels = {True: "with instruction", False: "without instruction", None: "with unknown instruction use"}
        reasons = []
        for system, missing, reason in zip(incomplete["system"], incomplete["missing_tasks"], incomplete["reason"]):
            rows = found[(found["system"] == system) & found["task"].isin(missing)]
            chosen = _state(state_of, system)
            elsewhere: dict[str, list[str]] = {}
            for task, state in zip(rows["task"], rows["instruction"]):
                state = None if pd.isna(state) else bool(state)
                if state != chosen:
                    elsewhere.setdefault(labels[state], []).append(task)
            notes = [f"{len(names)} of them only {label} ({', '.join(sorted(names)[:3])}"
                     f"{' …' if len(names) > 3 else ''})" for label, names in elsewhere.items()]
            reasons.append(reason + ("; " + "; ".join(notes) + " — 'any' uses one instruction state per system"
                                     if notes else ""))
        return reasons

    def _per_query(
        self,
        cond: Condition,
        systems: list[str],
        tasks: list[str] | None,
        instruction_of: pd.Series | None = None,
        columns: str = "system, task, qid, oblivious",
        column_params: list | None = None,
        numpy: bool = False,
    ):
        """Per-query rows of ``systems`` under ``cond`` (with instruction=None: each system's resolved state).

        Only the parquet files known (from the load-time sums) to hold matching rows are read.
        ``column_params`` bind the ``?`` placeholders of ``columns`` (a fixed expression list).
        """
        column_params = list(column_params or [])
        if cond.instruction is None and instruction_of is not None:
            where, params = self._where(cond, None, tasks=tasks)
            states = {s: _state(instruction_of, s) for s in systems}
            where += (
                " AND ((instruction AND list_contains(?::VARCHAR[], system))"
                " OR (NOT instruction AND list_contains(?::VARCHAR[], system))"
                " OR (instruction IS NULL AND list_contains(?::VARCHAR[], system)))"
            )
            params += [[s for s, state in states.items() if state is flag] for flag in (True, False, None)]
        else:
            where, params = self._where(cond, systems, tasks=tasks)
        files_where, files_params = where, list(params)
        if self._null_key_files:
            where += _NAMED_ROWS_SQL
        cursor = self.cursor()
        try:
            files = [row[0] for row in cursor.execute(
                f"SELECT DISTINCT file FROM query_task_sums WHERE {files_where} ORDER BY file", files_params
            ).fetchall()]
            if not files:  # same columns, no rows
                sql, params = f"SELECT {columns} FROM query_metrics WHERE FALSE", column_params
            else:
                sql = f"SELECT {columns} FROM read_parquet(?::VARCHAR[], union_by_name = true) WHERE {where}"
                params = column_params + [files] + params
            if numpy:
                return _arrays(cursor, sql, params)
            return cursor.execute(sql, params).df()
        finally:
            cursor.close()

    def _g_intervals(
        self, cond: Condition, systems: list[str], tasks: list[str], instruction_of: pd.Series, n: int, seed: int
    ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The 95% percentile bootstrap intervals of G and of the mean over tasks of each of ``systems``
        (:meth:`_bootstrap`; {"G": (lo, hi), "mean": (lo, hi)}), read from the on-disk cache when a process has
        computed them for these very files and this very code.

        The key holds the data dir, :attr:`loaded_fingerprint` (path, size, mtime and inode of every parquet
        file under it), the condition, the systems with their instruction states, the tasks, resamples and
        seed, and :func:`_interval_code_version` (the source of the modules that compute the interval and the
        numpy / DuckDB / pyarrow versions), so a changed file or a changed computation never hits an old
        entry. The full key is stored in the entry and compared on read. On 10M per-query rows the computation
        is ~0.4 s of a new process's first Leaderboard (reading 1.25M rows, 1,000 resamples)."""
        states = [_state(instruction_of, s) for s in systems]
        code = _interval_code_version()
        key = repr((str(self.data_dir.resolve()), self.loaded_fingerprint, cond.benchmark, cond.metric,
                    cond.setting, cond.instruction, cond.precision, cond.tie_policy, list(systems), states,
                    list(tasks), int(n), int(seed), code))
        entry = None if code is None else disk_cache.entry_path("intervals", _INTERVALS_CACHE_FOLDER, key, ".json")
        stored = disk_cache.read_json(entry, key)
        names = ("g_lo", "g_hi", "mean_lo", "mean_hi")
        if stored is not None:
            found = {name: np.asarray(stored.get(name, []), dtype=np.float64) for name in names}
            if stored.get("systems") == list(systems) and all(v.shape == (len(systems),) for v in found.values()):
                return {"G": (found["g_lo"], found["g_hi"]), "mean": (found["mean_lo"], found["mean_hi"])}
        task_samples, g_samples, _ = self._bootstrap(cond, systems, tasks, instruction_of, n, seed)  # `systems` order
        mean_samples = np.mean(np.stack(task_samples, axis=-1), axis=-1)
        intervals = {}
        for name, samples in (("G", g_samples), ("mean", mean_samples)):
            lo, hi = aggregate.percentile_interval(samples, axis=0)
            intervals[name] = (np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64))
        disk_cache.write_json(entry, key, {"systems": list(systems),
                                           "g_lo": intervals["G"][0].tolist(), "g_hi": intervals["G"][1].tolist(),
                                           "mean_lo": intervals["mean"][0].tolist(),
                                           "mean_hi": intervals["mean"][1].tolist()},
                              keep=disk_cache.KEEP["intervals"])
        return intervals

    def _bootstrap(
        self, cond: Condition, systems: list[str], tasks: list[str], instruction_of: pd.Series, n: int, seed: int
    ) -> tuple[list[np.ndarray], np.ndarray, list[str]]:
        """Paired bootstrap of task means and G for ``systems`` (rows in the returned system order)."""
        rows = self._per_query_codes(cond, systems, tasks, instruction_of)
        all_queries, key_task = query_matrix(
            rows["system_code"], rows["task_code"], rows["query_key"], rows["oblivious"], len(systems)
        )
        matrices = [all_queries[:, key_task == t] for t in range(len(tasks))]
        counts = disk_cache.resample_counts(tuple(int(m.shape[1]) for m in matrices), n, seed)
        task_means, g = aggregate.bootstrap_task_and_g(matrices, n_resamples=n, seed=seed, counts=counts)
        return task_means, g, systems

    def _per_query_codes(
        self, cond: Condition, systems: list[str], tasks: list[str], instruction_of: pd.Series | None
    ) -> dict[str, np.ndarray]:
        """The per-query rows :meth:`_bootstrap` needs, as arrays in scan order: ``system_code`` (index into
        ``systems``), ``task_code`` (index into ``tasks``), ``query_key`` (hash of task, qid), ``oblivious``.

        When every file holding rows of the condition holds a single system (one file per system, as
        ``evalcore ingest`` writes them), the system comes from the file (DuckDB's ``file_index``) and the
        per-system filters (the system list, each system's instruction state) become per-file ones, which
        spares comparing every scanned row with the system list; otherwise the rows carry their system.
        """
        cursor, file_index_free = self._cursor_and_layout()
        try:
            plan = None
            if file_index_free and (cond.instruction is not None or instruction_of is not None):
                plan = self._one_system_files(cursor, cond, systems, tasks, instruction_of)
        finally:
            cursor.close()
        if plan is None:
            return self._per_query(
                cond, systems, tasks, instruction_of, numpy=True,
                columns=(
                    "list_position(?::VARCHAR[], system)::INTEGER - 1 AS system_code, "
                    "list_position(?::VARCHAR[], task)::INTEGER - 1 AS task_code, "
                    "hash(task, qid) AS query_key, oblivious"
                ),
                column_params=[systems, tasks],
            )
        files, file_system_code, file_instruction, filter_tasks = plan
        if not files:
            return {"system_code": np.empty(0, np.int64), "task_code": np.empty(0, np.int32),
                    "query_key": np.empty(0, np.uint64), "oblivious": np.empty(0, np.float64)}
        where, params = self._where(cond, None, skip=("instruction",) if cond.instruction is None else ())
        if cond.instruction is None:
            where += " AND instruction IS NOT DISTINCT FROM list_extract(?::BOOLEAN[], file_index::BIGINT + 1)"
            params.append(file_instruction)
        if self._null_key_files & set(files):
            where += _NAMED_ROWS_SQL
        if filter_tasks:
            where += " AND list_contains(?::VARCHAR[], task)"
            params.append(tasks)
        cursor = self.cursor()
        try:
            rows = _arrays(
                cursor,
                "SELECT file_index::BIGINT AS file_index, list_position(?::VARCHAR[], task)::INTEGER - 1 AS task_code,"
                f" hash(task, qid) AS query_key, oblivious FROM read_parquet(?::VARCHAR[], union_by_name = true)"
                f" WHERE {where}",
                [tasks, files] + params,
            )
        finally:
            cursor.close()
        file_index = np.asarray(rows.pop("file_index"), dtype=np.int64)
        rows["system_code"] = np.asarray(file_system_code, dtype=np.int64)[file_index]
        return rows

    def _one_system_files(
        self, cursor, cond: Condition, systems: list[str], tasks: list[str], instruction_of: pd.Series | None
    ) -> tuple[list[str], list[int], list[bool | None], bool] | None:
        """For :meth:`_per_query_codes`: (files to read, system code of each, instruction state to keep in
        each, whether rows of other tasks must be filtered out), or None when some file holds several
        systems under ``cond`` (from the load-time sums; no file is read)."""
        where, params = self._where(cond, None)
        held = cursor.execute(
            f"SELECT file, list(DISTINCT system) AS systems, list(DISTINCT task) AS tasks FROM query_task_sums"
            f" WHERE {where} GROUP BY file ORDER BY file",
            params,
        ).fetchall()
        if any(len(file_systems) != 1 for _, file_systems, _ in held):
            return None
        code = {system: i for i, system in enumerate(systems)}
        files, system_codes, instruction_states, held_tasks = [], [], [], set()
        for file, (system,), file_tasks in held:
            if system not in code:
                continue
            files.append(file)
            system_codes.append(code[system])
            state = cond.instruction if cond.instruction is not None else _state(instruction_of, system)
            instruction_states.append(state)
            held_tasks.update(file_tasks)
        return files, system_codes, instruction_states, not held_tasks <= set(tasks)

    def tie_summary(
        self, cond: Condition, systems: Iterable[str] | None = None, task: str | None = None
    ) -> pd.DataFrame:
        """Per system × precision (``cond.precision`` is ignored), from per-query data only.

        Columns: system, precision, oblivious, expected, min, max, range, bias, tied_share, n_tasks,
        n_queries. Values are means over tasks of task means (``task`` restricts to one task);
        tied_share = share of queries with ``tied_at_cutoff``.
        """
        only_task = None if task is None else [task]
        where, params = self._where(cond, _as_list(systems), skip=("precision",), tasks=only_task)
        partition = "" if cond.instruction is not None else (
            f" QUALIFY {_INSTRUCTION_RANK} = max({_INSTRUCTION_RANK}) OVER (PARTITION BY system, precision)"
        )
        return self._query(
            f"""
            WITH rows AS (
              SELECT system, precision, task, value, expected, "min", "max", n_queries, tied_share
              FROM task_results WHERE has_query_data AND {where}{partition}
            )
            SELECT system, precision, avg(value) AS oblivious, avg(expected) AS expected, avg("min") AS "min",
                   avg("max") AS "max", avg("max") - avg("min") AS "range", avg(value) - avg(expected) AS bias,
                   sum(tied_share * n_queries) / sum(n_queries) AS tied_share, count(*) AS n_tasks,
                   sum(n_queries)::BIGINT AS n_queries
            FROM rows GROUP BY system, precision ORDER BY system, precision
            """,
            params,
        )

    def rank_flips(
        self,
        cond_a: Condition,
        cond_b: Condition,
        systems: Iterable[str] | None = None,
        tasks: Iterable[str] | None = None,
    ) -> RankFlips:
        """Ranks by G under two conditions (same tasks for both), flipped pairs, Kendall τ-b, overlaps."""
        table_a = self.task_table(cond_a, systems)
        table_b = self.task_table(cond_b, systems)
        if tasks is None:
            task_list = sorted(set(table_a["task"]) & set(table_b["task"]))
        else:
            task_list = _as_list(tasks)
        ranked_a, _ = aggregate.leaderboard_frames(table_a[table_a["task"].isin(task_list)], task_list)
        ranked_b, _ = aggregate.leaderboard_frames(table_b[table_b["task"].isin(task_list)], task_list)
        both = ranked_a[["system", "G", "G_min", "G_max"]].merge(
            ranked_b[["system", "G", "G_min", "G_max"]], on="system", suffixes=("_a", "_b")
        ).sort_values("system").reset_index(drop=True)
        both["rank_a"] = aggregate.competition_ranks(both["G_a"].to_numpy()).astype(np.int64)
        both["rank_b"] = aggregate.competition_ranks(both["G_b"].to_numpy()).astype(np.int64)
        both["rank_change"] = both["rank_b"] - both["rank_a"]
        ranks = both[["system", "G_a", "G_b", "G_min_a", "G_max_a", "G_min_b", "G_max_b", "rank_a", "rank_b",
                      "rank_change"]].sort_values(["rank_a", "system"]).reset_index(drop=True)
        names = both["system"].to_numpy(dtype=object)
        flips = aggregate.flipped_pairs(names, both["G_a"].to_numpy(), both["G_b"].to_numpy())
        overlap_frames = []
        position = pd.Index(names)
        first = position.get_indexer(flips["system_1"].to_numpy(dtype=object))
        second = position.get_indexer(flips["system_2"].to_numpy(dtype=object))
        intervals_overlap = np.zeros(len(flips), dtype=bool)
        for label in ("a", "b"):
            lo, hi = both[f"G_min_{label}"].to_numpy(), both[f"G_max_{label}"].to_numpy()
            pairs = aggregate.overlapping_pairs(names, lo, hi)
            pairs.insert(0, "condition", label)
            overlap_frames.append(pairs)
            intervals_overlap |= (lo[first] <= hi[second]) & (lo[second] <= hi[first])
        flips["intervals_overlap"] = intervals_overlap
        return RankFlips(
            ranks=ranks,
            flipped_pairs=flips,
            kendall_tau_b=aggregate.kendall_tau_b(both["G_a"].to_numpy(), both["G_b"].to_numpy()),
            overlapping_pairs=pd.concat(overlap_frames, ignore_index=True),
            tasks=task_list,
        )

    def instruction_gap(self, cond: Condition, systems: Iterable[str] | None = None) -> Gap:
        """With − without instruction per system × task and in G (``cond.instruction`` ignored).
        a = without, b = with."""
        from dataclasses import replace

        without = self.task_table(replace(cond, instruction=False), systems)
        with_instruction = self.task_table(replace(cond, instruction=True), systems)
        per_task, per_system = aggregate.condition_gap(without, with_instruction)
        return Gap(per_task, per_system, "without instruction", "with instruction")

    def mcr_vs_full(
        self, cond: Condition, systems: Iterable[str] | None = None, mcr_metric: str | None = None,
        full_setting: str = "full",
    ) -> Gap:
        """Full vs MCR per system × task and in G (``cond.setting`` ignored). a = ``full_setting``
        ('full' = the official corpus, 'full-pooled' = every candidate answer of the task pooled) with
        ``cond.metric``, b = mcr (``mcr_metric``, default ``cond.metric``)."""
        from dataclasses import replace

        full = self.task_table(replace(cond, setting=full_setting), systems)
        mcr = self.task_table(replace(cond, setting="mcr", metric=mcr_metric or cond.metric), systems)
        per_task, per_system = aggregate.condition_gap(full, mcr)
        return Gap(per_task, per_system, f"{full_setting} ({cond.metric})", f"mcr ({mcr_metric or cond.metric})")

    def compare(self, systems: Iterable[str], cond: Condition) -> pd.DataFrame:
        """Per-task values of a few systems: the :meth:`task_table` columns for those systems."""
        return self.task_table(cond, _as_list(systems))

    def query_diff(self, systems: Iterable[str], cond: Condition, task: str) -> pd.DataFrame:
        """Per-query values of a few systems on one task (long format).

        Columns: qid, system, oblivious, expected, min, max, n_candidates, tied_at_cutoff, spread
        (max − min of oblivious across the systems for that qid), differs (spread > 0).
        Only qids present for every requested system that has per-query data.
        """
        names = _as_list(systems)
        instruction_of = None
        if cond.instruction is None:
            instruction_of = self.task_table(cond, names).groupby("system")["instruction"].first()
        rows = self._per_query(
            cond, names, [task], instruction_of,
            columns='qid, system, oblivious, expected, "min", "max", n_candidates, tied_at_cutoff',
        )
        if rows.empty:
            return rows.assign(spread=pd.Series(dtype=float), differs=pd.Series(dtype=bool))
        n_systems = rows["system"].nunique()
        per_qid = rows.groupby("qid")["system"].transform("nunique")
        rows = rows[per_qid == n_systems].copy()
        grouped = rows.groupby("qid")["oblivious"]
        rows["spread"] = grouped.transform("max") - grouped.transform("min")
        rows["differs"] = rows["spread"] > 0
        return rows.sort_values(["qid", "system"]).reset_index(drop=True)

    def paired_test(
        self,
        system_a: str,
        system_b: str,
        cond: Condition,
        task: str | None = None,
        n_resamples: int = 10000,
        seed: int = 0,
    ) -> PairedTest:
        """Paired randomization (sign-flip) test on per-query oblivious values; raises ValueError when
        the two systems share no per-query data under ``cond``."""
        names = [system_a, system_b]
        instruction_of = None
        if cond.instruction is None:
            instruction_of = self.task_table(cond, names).groupby("system")["instruction"].first()
        rows = self._per_query(cond, names, None if task is None else [task], instruction_of)
        wide = rows.pivot_table(index=["task", "qid"], columns="system", values="oblivious", aggfunc="mean")
        if system_a not in wide.columns or system_b not in wide.columns:
            raise ValueError(f"no per-query data for both {system_a!r} and {system_b!r} under {cond}")
        wide = wide.dropna(subset=[system_a, system_b])
        if wide.empty:
            raise ValueError(f"{system_a!r} and {system_b!r} share no queries under {cond}")
        differences = (wide[system_a] - wide[system_b]).groupby(level="task")
        per_task = [group.to_numpy() for _, group in differences]
        observed, p_value = aggregate.paired_randomization_test(per_task, n_resamples=n_resamples, seed=seed)
        return PairedTest(system_a, system_b, task, observed, p_value, len(wide), len(per_task), n_resamples)

    # -- raw runs -----------------------------------------------------------------------------------------
    def runs(self) -> pd.DataFrame:
        """Raw run files shipped under ``<data_dir>/runs/`` (for the live what-if panel).

        Columns: path, system, benchmark, task, setting, instruction, precision, qrels_path, n_rows.
        Metadata comes from a sidecar ``<file>.json`` / ``<stem>.json`` or the parquet key-value metadata
        (keys system, benchmark, task, setting, instruction, precision); qrels files (qid, docid, relevance)
        are matched by benchmark + task (+ setting when the qrels file names one).
        """
        import pyarrow.parquet as pq

        run_rows, qrels_rows = [], []
        for path in _parquet_files(self.data_dir, runs=True):
            try:
                metadata = pq.read_metadata(path)
                names = set(metadata.schema.to_arrow_schema().names)
            except Exception as exc:
                log.warning("skipped run file %s: %s", path, exc)
                continue
            info = _run_metadata(path, metadata.metadata or {})
            info.update(path=str(path), n_rows=metadata.num_rows)
            if {"qid", "docid", "score"} <= names:
                run_rows.append(info)
            elif {"qid", "docid", "relevance"} <= names:
                qrels_rows.append(info)
        columns = ["path", "system", "benchmark", "task", "setting", "instruction", "precision", "qrels_path", "n_rows"]
        for info in run_rows:
            matches = [
                q["path"] for q in qrels_rows
                if q.get("benchmark") == info.get("benchmark") and q.get("task") == info.get("task")
                and q.get("setting") in (None, info.get("setting"))
            ]
            info["qrels_path"] = matches[0] if matches else None
        return pd.DataFrame([{c: info.get(c) for c in columns} for info in run_rows], columns=columns)


_RUN_METADATA_KEYS = ("system", "benchmark", "task", "setting", "instruction", "precision")


def _arrays(cursor: "duckdb.DuckDBPyConnection", sql: str, params: list) -> dict[str, np.ndarray]:
    """Result columns as numpy arrays, through Arrow: a streamed relation's Arrow table converts without
    copies (null-free numbers), where ``execute(...).fetchnumpy()`` materialises the result first and then
    converts it (1.25M per-query rows: ~0.065 s against ~0.10 s)."""
    from evalcore.arrow_np import to_numpy

    table = cursor.sql(sql, params=params).to_arrow_table()
    return {name: to_numpy(table.column(name)) for name in table.column_names}


def query_matrix(
    system_code: np.ndarray, task_code: np.ndarray, query_key: np.ndarray, values: np.ndarray, n_systems: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-query rows → (systems × queries matrix, NaN where a system lacks a query; task code of each column).

    Columns are the distinct ``query_key`` values in order of first appearance. When the rows come as one
    block per system, every block holding the same keys in the same order (one file per system, written
    in one order), the blocks are stacked as they are; otherwise the keys are factorised. Both give the
    same matrix.
    """
    system_code = np.asarray(system_code)
    query_key = np.asarray(query_key)
    values = np.asarray(values, dtype=np.float64)
    task_code = np.asarray(task_code)
    n_rows = len(query_key)
    if n_rows:
        starts = np.concatenate(([0], np.flatnonzero(system_code[1:] != system_code[:-1]) + 1))
        width = n_rows // len(starts)
        block_systems = system_code[starts]
        if (width * len(starts) == n_rows and np.array_equal(np.diff(starts), np.full(len(starts) - 1, width))
                and len(np.unique(block_systems)) == len(block_systems)):
            keys = query_key.reshape(len(starts), width)
            if (keys == keys[0]).all() and len(np.unique(keys[0])) == width:
                matrix = np.full((n_systems, width), np.nan)
                matrix[block_systems] = values.reshape(len(starts), width)
                return matrix, task_code[:width].astype(np.int64)
    key_codes, keys = pd.factorize(query_key)
    key_task = np.empty(len(keys), dtype=np.int64)
    key_task[key_codes] = task_code
    matrix = np.full((n_systems, len(keys)), np.nan)
    matrix[system_code, key_codes] = values
    return matrix, key_task


def _run_metadata(path: Path, kv_metadata: dict[bytes, bytes]) -> dict:
    """Run/qrels metadata from a sidecar JSON (``x.parquet.json`` or ``x.json``) or parquet key-value pairs."""
    info: dict = {}
    for sidecar in (path.with_name(path.name + ".json"), path.with_suffix(".json")):
        if sidecar.is_file():
            try:
                loaded = json.loads(sidecar.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(loaded, dict):
                info = {k: loaded.get(k) for k in _RUN_METADATA_KEYS if k in loaded}
                break
    if not info:
        decoded = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in kv_metadata.items()}
        if "tiebreak" in decoded:
            try:
                loaded = json.loads(decoded["tiebreak"])
                if isinstance(loaded, dict):
                    decoded.update({k: loaded[k] for k in _RUN_METADATA_KEYS if k in loaded})
            except ValueError:
                pass
        info = {k: decoded[k] for k in _RUN_METADATA_KEYS if k in decoded}
    if isinstance(info.get("instruction"), str):
        info["instruction"] = info["instruction"].strip().lower() in ("true", "yes", "1", "with")
    return info
