"""The catalogue: which parquet files a data folder holds, what each is, which can be used, and why the others
cannot — loaded into one DuckDB connection (:class:`Catalogue.load` → :class:`Loaded`).

Every ``*.parquet`` under the folder (recursively, except ``runs/``, which holds raw runs: :func:`runs`) is
classified from its footer alone (:func:`classify`): ``query_metrics``, ``task_scores``, ``systems`` by their
columns (:mod:`evalcore.schema`), or a derived sums file by its footer record (:mod:`evalcore.store.derived`).

The folder is not trusted: rows without a name are left out with a warning; a per-query file with
a value that cannot be right or a repeated qid, or repeating an earlier file's rows, is skipped whole; each
task_scores row is checked, and repeated task_scores keys are kept once when identical and dropped when they
differ. Skipped files land in :attr:`Loaded.skipped` with the reason, warnings in :attr:`Loaded.warnings`.

Per-query files are never loaded whole: each is reduced to its per-group sums (what every task-level question
needs, and what the checks read). Those come from the file's derived sums file when it matches the file's
bytes, else from one scan in memory (logged, with the reason; ``evalcore derive`` writes them). Within one
process a file is not read again while its (path, size, mtime, inode) stays the same.
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
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from evalcore import schema
from evalcore.errors import one_line
from evalcore.store import derived
from evalcore.store.answers import LoadWarning, SkippedFile

if TYPE_CHECKING:  # pragma: no cover
    import duckdb

log = logging.getLogger("evalcore.store")

DATA_ENV = "TIEBREAK_DATA"
RUNS_DIR = "runs"
TASKS_DIR = "tasks"
"""``<data>/tasks/``: the texts and qrels of the tasks (``scripts/make_task_texts.py``), not results: never loaded."""
QUERY_METRICS, TASK_SCORES, SYSTEMS, QUERY_SUMS = "query_metrics", "task_scores", "systems", "query_sums"


def data_dir(chosen: str | Path | None = None, *, default: str | Path = "data", environ: dict | None = None) -> Path:
    """The data folder: ``chosen`` (``--data``), else ``$TIEBREAK_DATA``, else ``default`` (the CLI: ``data``
    in the working directory; the dashboard: the repository's ``data/``)."""
    environ = os.environ if environ is None else environ
    return Path(chosen or environ.get(DATA_ENV) or default).expanduser()


def checked_data_dir(chosen: str | Path | None = None) -> Path:
    """:func:`data_dir` for a command: one InputError naming it when it is missing, not a folder, or a folder
    this user cannot list or enter (where a PermissionError traceback came from ``Path.exists``)."""
    from evalcore.errors import InputError
    from evalcore.formats.detection import path_kind

    path = data_dir(chosen)
    kind = path_kind(path)
    if kind == "missing":
        raise InputError("data directory not found (expected a folder of result parquet files)", path)
    if kind != "folder":
        raise InputError("not a folder: --data expects the data directory that holds the parquet files", path)
    try:
        os.listdir(path)
        os.stat(path / os.curdir)  # looking a name up inside needs the right to enter it
    except OSError as exc:
        raise InputError(f"cannot read the data folder ({exc.strerror or one_line(exc)}): the user running "
                         "evalcore needs the right to list and enter it (r-x)", path) from None
    return path


# -- finding and classifying files ------------------------------------------------------------------------

DUCKDB_MEMORY_ENV = "TIEBREAK_DUCKDB_MEMORY_MB"
DUCKDB_MEMORY_MB = 512
"""DuckDB's memory limit for a store's connection (its loaded tables and every query's working memory), MB:
``$TIEBREAK_DUCKDB_MEMORY_MB``, else this. DuckDB's own default is 80 % of the machine's memory, per process;
the shipped data's tables take ~18 MB."""


def duckdb_memory_limit_bytes(environ: dict | None = None) -> int:
    """The memory limit a store sets on its DuckDB connection, bytes (see :data:`DUCKDB_MEMORY_MB`)."""
    text = (os.environ if environ is None else environ).get(DUCKDB_MEMORY_ENV, "").strip()
    megabytes = int(text) if text.isascii() and text.isdigit() and int(text) > 0 else DUCKDB_MEMORY_MB
    return megabytes << 20


def walk_parquet(root: Path, *, runs: bool) -> tuple[list[Path], list[SkippedFile]]:
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

    for folder, folders, names in os.walk(root, onerror=record):
        folders[:] = [name for name in folders if name != derived.FOLDER]  # derived data: found from its source
        folder_path = Path(folder)
        if folder_path == root:  # the tasks' texts and qrels are not results
            folders[:] = [name for name in folders if name != TASKS_DIR]
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


def fingerprint(root: Path) -> str:
    """Cheap hash of the version (path, size, mtime, inode) of every parquet file under ``root``, runs
    included (no file is read): it changes whenever a file is added, removed or rewritten."""
    digest = hashlib.blake2b(digest_size=16)
    for runs in (False, True):
        for path in walk_parquet(root, runs=runs)[0]:
            try:
                digest.update(repr(derived.FileStat.of(path)).encode())
            except OSError:
                continue
    return digest.hexdigest()


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


def schema_problem(arrow_schema, required: dict[str, str], optional: dict[str, str]) -> str | None:
    """None when ``arrow_schema`` holds every ``required`` column (name -> SQL type, :mod:`evalcore.schema`)
    with an arrow type of the same kind, and the ``optional`` ones it has too; else what is wrong."""
    names = set(arrow_schema.names)
    missing = [c for c in required if c not in names]
    if missing:
        return f"missing columns {missing}"
    for column, sql_type in {**required, **{k: v for k, v in optional.items() if k in names}}.items():
        arrow_type = arrow_schema.field(column).type
        actual, expected = _arrow_kind(arrow_type), schema.kind_of(sql_type)
        if column not in schema.ANY_ARROW_TYPE and actual != expected and not (actual == "num" and arrow_type.id == 0):
            return f"column {column!r} has type {arrow_type}, expected {expected}"
    return None


_KINDS = (
    (QUERY_METRICS, schema.QUERY_METRICS, {}),
    (TASK_SCORES, schema.TASK_SCORES, schema.TASK_SCORES_OPTIONAL),
    (SYSTEMS, schema.SYSTEMS, schema.SYSTEMS_OPTIONAL),
)


def classify(path: Path) -> tuple[str | None, str, derived.DerivedFrom | None]:
    """(kind, '', footer record of a derived file or None) or (None, why it cannot be used, None), from the
    footer alone. Kinds: ``query_metrics``, ``task_scores``, ``systems`` (by columns) and ``query_sums`` (a
    derived file, by its footer record)."""
    import pyarrow.parquet as pq

    try:
        arrow_schema = pq.read_schema(path)
    except Exception as exc:  # truncated / not parquet / unreadable
        return None, f"unreadable parquet: {type(exc).__name__}: {one_line(exc)}", None
    if arrow_schema.metadata and derived.METADATA_KEY.encode() in arrow_schema.metadata:
        info = derived.derived_from(arrow_schema)
        if info is None:
            return None, f"derived file whose footer record ({derived.METADATA_KEY}) cannot be read", None
        return QUERY_SUMS, "", info
    closest: tuple[int, str] | None = None
    for kind, required, optional in _KINDS:
        problem = schema_problem(arrow_schema, required, optional)
        if problem is None:
            return kind, "", None
        n_missing = sum(c not in arrow_schema.names for c in required)
        if closest is None or n_missing < closest[0]:
            closest = (n_missing, f"closest to {kind}: {problem}")
    return None, f"foreign schema ({closest[1]})", None


def classify_parquet(path: Path) -> tuple[str | None, str]:
    """:func:`classify` without the footer record: (kind, '') or (None, reason)."""
    kind, reason, _ = classify(path)
    return kind, reason


def _vanished(path: Path) -> bool:
    """True when ``path`` is gone (removed or replaced by nothing since it was listed)."""
    return not os.path.lexists(path)


# -- checking per-query sums -------------------------------------------------------------------------------
def metric_bounded_by_one(metric: str) -> bool:
    """True for the metrics evalcore knows (nDCG, MRR, recall, precision, AP: all in [0, 1])."""
    from evalcore.metrics import METRIC_NAMES, parse_metric

    try:
        return parse_metric(metric).name in METRIC_NAMES
    except ValueError:
        return False


@lru_cache(maxsize=256)
def _bounded(metric: str) -> bool:
    return metric_bounded_by_one(metric)


# a per-query or task-level row without one of these names cannot be placed (instruction NULL = unknown)
_KEY_NAMES = ("system", "benchmark", "task", "setting", "precision", "tie_policy", "metric")
# what the per-file sums keep once checked (the check columns are only read at load)
SUMS_COLUMNS = (
    "system", "benchmark", "task", "setting", "instruction", "precision", "tie_policy", "metric", "n_queries",
    "sum_oblivious", "sum_expected", "sum_min", "sum_max", "n_tied", "source",
)


def _group_text(row) -> str:
    """'system 'x', task 'T', metric 'ndcg@10'' for messages about one per-query group."""
    return f"system {row['system']!r}, task {row['task']!r}, metric {row['metric']!r}"


def check_sums(table) -> tuple[object, str | None, list[str]]:
    """Check one file's sums table (:func:`evalcore.store.derived.sums_schema`): (its usable groups as Arrow
    with the :data:`SUMS_COLUMNS`, why the whole file cannot be used or None, warnings about rows left out).

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
    return table.filter(pa.array(keep)).select(list(SUMS_COLUMNS)), None, warnings


# -- per-query rows repeated across files -------------------------------------------------------------------
_QUERY_KEY_COLUMNS = ", ".join(f"{name}::{'BOOLEAN' if name == 'instruction' else 'VARCHAR'} AS {name}"
                               for name in schema.CONDITION_KEY)


def repeating_files(conn: "duckdb.DuckDBPyConnection", files: list[str]) -> dict[str, str]:
    """Of ``files`` (which share a (system, condition, task, metric) group), those holding a (group, qid) key
    that a file earlier in path order holds too: {file: reason}. One scan of those files; every file that is
    not the first holder of a repeated key is left out (never counted twice). A file that cannot be read here
    (removed meanwhile) is simply not compared."""
    key = ", ".join(schema.CONDITION_KEY)
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
                SELECT file, min(first_file), count(*), first(system ORDER BY system, task, metric, qid),
                       first(task ORDER BY system, task, metric, qid), first(metric ORDER BY system, task, metric, qid),
                       first(qid ORDER BY system, task, metric, qid) FROM later GROUP BY file ORDER BY file""",
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
    same = " AND ".join(f"a.{c} IS NOT DISTINCT FROM b.{c}" for c in schema.CONDITION_KEY)
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


# -- task_scores and systems --------------------------------------------------------------------------------
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


def _load_task_scores(conn: "duckdb.DuckDBPyConnection", files: list[Path], skipped: list[SkippedFile],
                      warnings: list[LoadWarning]) -> None:
    """Materialise task_scores (small) with contract types; tie_policy defaults to docid-desc. Rows without a
    name, with a value that cannot be right or repeating another row's key are left out, with a warning per
    file (identical repeats: one copy kept; conflicting ones: none)."""
    import pyarrow.parquet as pq

    columns = ", ".join(f'"{name}"::{sql_type} AS "{name}"' for name, sql_type in schema.TASK_SCORES.items())
    conn.execute(
        f"CREATE TEMP TABLE task_scores_checked ({schema.column_definitions(schema.TASK_SCORES)}, "
        "tie_policy VARCHAR, file VARCHAR, file_order INTEGER, row_order BIGINT, problem VARCHAR)"
    )
    for order, path in enumerate(files):  # each file's rows with what is wrong with them, in one statement
        try:
            has_policy = "tie_policy" in pq.read_schema(path).names
            policy = "tie_policy::VARCHAR" if has_policy else "NULL::VARCHAR"
            metrics = conn.execute("SELECT DISTINCT metric::VARCHAR FROM read_parquet(?)", [str(path)]).fetchall()
            bounded = [m for (m,) in metrics if m is not None and metric_bounded_by_one(m)]
            conn.execute(
                f"INSERT INTO task_scores_checked SELECT * EXCLUDE (bounded), {_TASK_ROW_PROBLEM_SQL} AS problem "
                f"FROM (SELECT {columns}, coalesce({policy}, ?) AS tie_policy, ? AS file, ? AS file_order, "
                "file_row_number AS row_order, list_contains(?::VARCHAR[], metric::VARCHAR) AS bounded "
                "FROM read_parquet(?, file_row_number = true))",
                [schema.DEFAULT_TIE_POLICY, str(path), order, bounded, str(path)],
            )
        except Exception as exc:
            if not _vanished(path):
                skipped.append(SkippedFile(str(path), f"unreadable task_scores data: {one_line(exc)}"))
    for file, reason, count, system, task, metric in conn.execute(
        "SELECT file, problem, count(*), first(system), first(task), first(metric) FROM task_scores_checked "
        "WHERE problem IS NOT NULL GROUP BY file, problem ORDER BY file, problem"
    ).fetchall():
        warnings.append(LoadWarning(file, f"skipped {count} task_scores row(s): {reason} "
                                          f"(e.g. system {system!r}, task {task!r}, metric {metric!r})"))
    key = ", ".join(schema.CONDITION_KEY)
    same_key = " AND ".join(f"c.{name} IS NOT DISTINCT FROM r.{name}" for name in schema.CONDITION_KEY)
    # the usable rows whose key repeats (usually none): the checks below look at these few rows only, and every
    # other row is kept as it is (a window over all ~25k rows cost ~0.07 s of every store open)
    conn.execute(
        f"""CREATE TEMP TABLE task_scores_repeated AS
            SELECT c.* FROM task_scores_checked c SEMI JOIN (
              SELECT {key} FROM task_scores_checked WHERE problem IS NULL GROUP BY ALL HAVING count(*) > 1
            ) r ON {same_key}
            WHERE c.problem IS NULL"""
    )
    duplicates = conn.execute(
        f"""WITH keyed AS (
              SELECT {key}, count(DISTINCT (value, expected, "min", "max")) AS n_values,
                     list_sort(list(file)) AS files
              FROM task_scores_repeated GROUP BY ALL
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
            SELECT * EXCLUDE (file_order, row_order, problem) FROM task_scores_checked c
            WHERE problem IS NULL AND NOT EXISTS (SELECT 1 FROM task_scores_repeated r WHERE {same_key})
            UNION ALL
            SELECT * EXCLUDE (file_order, row_order, n_values, problem) FROM (
              SELECT *, count(DISTINCT (value, expected, "min", "max")) OVER (PARTITION BY {key}) AS n_values
              FROM task_scores_repeated
              QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY file_order, row_order) = 1
            ) WHERE n_values = 1"""
    )
    conn.execute("DROP TABLE task_scores_checked")
    conn.execute("DROP TABLE task_scores_repeated")


SYSTEMS_TYPES = {**schema.SYSTEMS, **schema.SYSTEMS_OPTIONAL}


def _load_systems(conn: "duckdb.DuckDBPyConnection", files: list[Path], skipped: list[SkippedFile],
                  warnings: list[LoadWarning]) -> None:
    """Materialise systems: one row per system (first file in path order wins per column). Rows without a
    system name are left out and a size that is not a count (negative, NaN, inf) is dropped, with a warning
    per file."""
    import pyarrow.parquet as pq

    conn.execute(f"CREATE TEMP TABLE systems_raw ({schema.column_definitions(SYSTEMS_TYPES)}, file_order INTEGER, "
                 "file VARCHAR)")
    for order, path in enumerate(files):
        try:
            names = set(pq.read_schema(path).names)
            select = ", ".join(
                (f"{name}::{sql_type}" if name in names else f"NULL::{sql_type}") + f" AS {name}"
                for name, sql_type in SYSTEMS_TYPES.items()
            )
            conn.execute(f"INSERT INTO systems_raw SELECT {select}, ?, ? FROM read_parquet(?)",
                         [order, str(path), str(path)])
        except Exception as exc:
            if not _vanished(path):
                skipped.append(SkippedFile(str(path), f"unreadable systems data: {one_line(exc)}"))
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
        for name in SYSTEMS_TYPES if name != "system"
    )
    conn.execute(f"CREATE TABLE systems AS SELECT system, {first_values} FROM systems_raw GROUP BY system")
    conn.execute("DROP TABLE systems_raw")


# -- the catalogue --------------------------------------------------------------------------------------------
@dataclass
class Loaded:
    """One load of a data folder. ``conn`` holds the tables ``query_task_sums`` (the usable per-query files'
    checked sums, column ``file`` naming the file), ``task_scores`` and ``systems`` and the view
    ``query_metrics`` over ``query_files``."""

    conn: "duckdb.DuckDBPyConnection"
    query_files: list[str]  # the per-query files used, in path order
    null_key_files: frozenset[str]  # those of them holding rows without a name or a qid (read filtered)
    file_index_free: bool  # DuckDB's file_index virtual column is usable on them (no data column of that name)
    skipped: list[SkippedFile]
    warnings: list[LoadWarning]
    fingerprint: str
    sums_read: int = 0  # per-query files whose sums came from their derived file
    file_sha256: dict[str, str] = field(default_factory=dict)  # per-query file -> sha256, where the load hashed it
    sums_computed: list[tuple[str, str]] = field(default_factory=list)  # (file, why its sums were computed)


@dataclass
class _FileSums:
    """A per-query file version's sums, how they were obtained, and the verdict of :func:`check_sums`."""

    sums: object  # Arrow table, or the exception that made the file unreadable
    derived: bool
    verdict: tuple | None = None
    sha256: str | None = None  # of the file's bytes, when the load hashed it (its sums came from a derived file)


_EMPTY_SUMS_SQL = (
    "CREATE TABLE query_task_sums (system VARCHAR, benchmark VARCHAR, task VARCHAR, setting VARCHAR,"
    " instruction BOOLEAN, precision VARCHAR, tie_policy VARCHAR, metric VARCHAR, n_queries BIGINT,"
    " sum_oblivious DOUBLE, sum_expected DOUBLE, sum_min DOUBLE, sum_max DOUBLE, n_tied BIGINT,"
    " source VARCHAR, file VARCHAR)"
)


class Catalogue:
    """Loads a data folder (:meth:`load`), remembering per file version what it read, so that a reload only
    reads what changed. One load at a time (:attr:`lock`)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.Lock()
        self._sums: dict[derived.FileStat, _FileSums] = {}
        self._overlap: dict = {}  # the files sharing a group, with their versions -> repeating_files answer

    def load(self) -> Loaded:
        """Classify files, get each per-query file's sums (derived file or scan) and check them, skip what
        cannot be used, load task_scores and systems: a new connection holding the result."""
        import duckdb
        import pyarrow as pa

        with self.lock:
            folder_fingerprint = fingerprint(self.root)
            warnings: list[LoadWarning] = []
            files, skipped = walk_parquet(self.root, runs=False)
            by_kind: dict[str, list[Path]] = {QUERY_METRICS: [], TASK_SCORES: [], SYSTEMS: []}
            for path in files:
                kind, reason, _ = classify(path)
                if kind == QUERY_SUMS:  # a derived file outside a _derived folder: its source is not known
                    skipped.append(SkippedFile(str(path), f"a derived sums file outside a {derived.FOLDER} folder"))
                elif kind is not None:
                    by_kind[kind].append(path)
                elif not _vanished(path):  # a file removed since it was listed is simply not there
                    skipped.append(SkippedFile(str(path), reason))
            conn = duckdb.connect(":memory:", config={"memory_limit": f"{duckdb_memory_limit_bytes() >> 20}MiB"})
            try:  # footers of the per-query files are re-read by every per-query query otherwise
                conn.execute("SET parquet_metadata_cache = true")
            except duckdb.Error:  # pragma: no cover - parquet extension not loadable
                pass
            conn.execute("SET enable_progress_bar = false")  # a long first scan must not draw on the CLI's stderr
            loaded = Loaded(conn, [], frozenset(), False, skipped, warnings, folder_fingerprint)

            def meanwhile() -> None:  # while the per-query files are hashed (hashlib lets go of the GIL)
                _load_task_scores(conn, by_kind[TASK_SCORES], skipped, warnings)
                _load_systems(conn, by_kind[SYSTEMS], skipped, warnings)

            checked, versions = self._query_sums(conn, by_kind[QUERY_METRICS], loaded, meanwhile)
            for path, reason in self._repeating(conn, checked, versions).items():
                skipped.append(SkippedFile(str(path), reason))
                del checked[path]
            query_files = [str(path) for path in checked]
            relation = None
            while query_files:
                try:
                    relation = conn.read_parquet(query_files, union_by_name=True)
                    break
                except Exception:  # a file removed after its sums were read: it is simply not there
                    gone = [f for f in query_files if _vanished(Path(f))]
                    if not gone:
                        raise
                    query_files = [f for f in query_files if f not in gone]
                    checked = {path: sums for path, sums in checked.items() if str(path) not in gone}
            if checked:
                tables = [table.append_column("file", pa.array([str(path)] * table.num_rows, pa.string()))
                          for path, table in checked.items()]
                conn.from_arrow(pa.concat_tables([t.cast(tables[0].schema) for t in tables])).create("query_task_sums")
            else:
                conn.execute(_EMPTY_SUMS_SQL)
            if relation is not None:
                loaded.file_index_free = "file_index" not in relation.columns
                relation.project(", ".join(f'"{c}"' for c in schema.QUERY_METRICS)).create_view("query_metrics")
            else:
                conn.execute(f"CREATE TABLE query_metrics ({schema.column_definitions(schema.QUERY_METRICS)})")
            loaded.query_files = query_files
            loaded.null_key_files = frozenset(loaded.null_key_files) & frozenset(query_files)
        for item in skipped:
            log.warning("skipped %s: %s", item.path, item.reason)
        for item in warnings:
            log.warning("%s: %s", item.path, item.message)
        if loaded.sums_computed:
            shown = "; ".join(f"{file}: {why}" for file, why in loaded.sums_computed[:5])
            more = f" and {len(loaded.sums_computed) - 5} more" if len(loaded.sums_computed) > 5 else ""
            log.warning("per-query sums of %d file(s) computed in memory, not read from derived files (%s%s); "
                     "`evalcore derive --data %s` writes them", len(loaded.sums_computed), shown, more, self.root)
        return loaded

    def _query_sums(self, conn, paths: list[Path], loaded: Loaded, meanwhile) -> tuple[dict, dict]:
        """({usable per-query file: its checked sums}, {file: its FileStat}); skipped files and warnings are
        added to ``loaded``. Each file's sums come from memory (same file version as at the last load), from
        its derived file (when it matches the file's sha256 and the format), or from one scan of all the rest.
        ``meanwhile()`` runs while the files are hashed (on another thread)."""
        from concurrent.futures import ThreadPoolExecutor

        versions: dict[Path, derived.FileStat] = {}
        found: dict[Path, _FileSums] = {}
        new: list[Path] = []
        for path in paths:
            try:
                stat = derived.FileStat.of(path)
            except OSError as exc:  # removed while scanning
                if not _vanished(path):
                    loaded.skipped.append(SkippedFile(str(path), f"unreadable: {one_line(exc)}"))
                continue
            versions[path] = stat
            if stat in self._sums:
                found[path] = self._sums[stat]
            else:
                new.append(path)
        why = {path: "no derived sums file" for path in new}
        with_sums = {path: derived.sums_path(path) for path in new if derived.sums_path(path).is_file()}
        footers = derived.read_footers(conn, list(with_sums.values()))
        candidates: dict[Path, Path] = {}  # per-query file -> its sums file, when the footer names it
        for path, sums_path in with_sums.items():
            info = footers[sums_path]
            if isinstance(info, Exception):
                why[path] = f"its sums file {sums_path.name} cannot be used ({one_line(info)})"
            elif info is None or info.source != path.name:
                why[path] = f"its sums file {sums_path.name} has no footer record naming {path.name}"
            elif info.format != derived.FORMAT:
                why[path] = f"its sums file {sums_path.name} has format {info.format}, expected {derived.FORMAT}"
            else:
                candidates[path] = sums_path

        def hash_all() -> dict:
            hashed = {}
            for path in candidates:
                try:
                    hashed[path] = derived.source_version(path)
                except OSError as exc:
                    hashed[path] = exc
            return hashed

        with ThreadPoolExecutor(max_workers=1) as pool:
            hashing = pool.submit(hash_all)
            tables = derived.read_many(conn, list(candidates.values()))
            meanwhile()
            hashed = hashing.result()
        for path, sums_path in candidates.items():
            table, version = tables[sums_path], hashed[path]
            problem = next((item for item in (version, table) if isinstance(item, Exception)), None)
            if problem is not None:  # unreadable source or sums file: computed from the source
                why[path] = f"its sums file {sums_path.name} cannot be used ({one_line(problem)})"
                continue
            version, versions[path] = version
            if footers[sums_path].matches(version):
                found[path] = _FileSums(table, True, sha256=version.sha256)
                loaded.sums_read += 1
            else:
                why[path] = f"its sums file {sums_path.name} was derived from other bytes (stale)"
        to_scan = [path for path in new if path not in found]
        loaded.sums_computed.extend((str(path), why[path]) for path in to_scan)
        for path, table in (derived.scan_sums(conn, to_scan) if to_scan else {}).items():
            found[path] = _FileSums(table, False)
        checked: dict[Path, object] = {}
        memo, null_key_files = {}, set()
        for path, entry in found.items():
            if isinstance(entry.sums, Exception):
                if not _vanished(path):  # a file removed since it was listed is simply not there
                    loaded.skipped.append(SkippedFile(str(path),
                                                      f"unreadable query_metrics data: {one_line(entry.sums)}"))
                continue
            if entry.verdict is None:  # checked once per file version
                entry.verdict = check_sums(entry.sums)
            memo[versions[path]] = entry
            if entry.sha256 is not None:
                loaded.file_sha256[str(path)] = entry.sha256
            sums, problem, file_warnings = entry.verdict
            if problem is not None:
                loaded.skipped.append(SkippedFile(str(path), problem))
                continue
            loaded.warnings.extend(LoadWarning(str(path), message) for message in file_warnings)
            if file_warnings:
                null_key_files.add(str(path))
            checked[path] = sums
        self._sums = memo
        loaded.null_key_files = frozenset(null_key_files)
        return dict(sorted(checked.items())), versions

    def _repeating(self, conn, checked: dict, versions: dict) -> dict[Path, str]:
        """Files whose per-query rows repeat those of an earlier file (path order): {later file: reason}.

        Two files holding the same (system, condition, task, metric) may split its queries between them; they
        conflict when they share a qid there (a copied file, a re-run dropped next to the original). The
        earlier file is kept, the later one skipped whole (never counted twice). Only the files sharing a group
        are read again, in one scan (:func:`repeating_files`), and the answer is kept until one of them changes.
        """
        import pyarrow as pa

        key = list(schema.CONDITION_KEY)
        if len(checked) < 2:
            self._overlap = {}
            return {}
        frames = [table.select(key).append_column("file", pa.array([str(path)] * table.num_rows, pa.string()))
                  for path, table in checked.items()]
        groups = pa.concat_tables([t.cast(frames[0].schema) for t in frames]).to_pandas()
        shared = groups[groups.duplicated(key, keep=False)]
        involved = sorted(set(shared["file"]))
        if not involved:
            self._overlap = {}
            return {}
        cache_key = tuple((file, versions[Path(file)]) for file in involved)
        dropped = self._overlap.get(cache_key)
        if dropped is None:
            dropped = repeating_files(conn, involved)
        self._overlap = {cache_key: dropped}
        return {Path(file): reason for file, reason in dropped.items()}


# -- raw runs ---------------------------------------------------------------------------------------------------
_RUN_METADATA_KEYS = ("system", "benchmark", "task", "setting", "instruction", "precision")
RUN_COLUMNS = ["path", "system", "benchmark", "task", "setting", "instruction", "precision", "qrels_path", "n_rows"]


def runs(root: Path) -> pd.DataFrame:
    """Raw run files shipped under ``<root>/runs/`` (for the live what-if panel).

    Columns: path, system, benchmark, task, setting, instruction, precision, qrels_path, n_rows.
    Metadata comes from a sidecar ``<file>.json`` / ``<stem>.json`` or the parquet key-value metadata
    (keys system, benchmark, task, setting, instruction, precision); qrels files (qid, docid, relevance)
    are matched by benchmark + task (+ setting when the qrels file names one).
    """
    import pyarrow.parquet as pq

    run_rows, qrels_rows = [], []
    for path in walk_parquet(root, runs=True)[0]:
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
    for info in run_rows:
        matches = [
            q["path"] for q in qrels_rows
            if q.get("benchmark") == info.get("benchmark") and q.get("task") == info.get("task")
            and q.get("setting") in (None, info.get("setting"))
        ]
        info["qrels_path"] = matches[0] if matches else None
    return pd.DataFrame([{c: info.get(c) for c in RUN_COLUMNS} for info in run_rows], columns=RUN_COLUMNS)


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
