"""The queries: every question the store answers in SQL, over one loaded data folder (:class:`Database`).

All SQL is parameterised: filter values are bound parameters; the only identifiers put into SQL text come from
fixed tuples in this package. Conventions:

- ``cond`` is a :class:`~evalcore.store.answers.Condition`. ``instruction=None`` means "any": per system, its
  with-instruction rows are used when it has any under the rest of the condition, else its
  without-instruction rows, else its rows whose instruction is NULL (unknown) — one state per system, never
  mixed. ``instruction=True/False`` never matches an unknown state. Other fields set to ``None`` are not
  filtered on.
- ``systems=None`` means all systems; otherwise a list of system names.
- Task values come from ``query_metrics`` (mean over queries, from the per-file sums) when per-query data
  exists for that (system, task, condition), else from published ``task_scores``; ``source`` says which.
- Published rows have ``expected``/``min``/``max`` NULL (unknown).
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Iterable

import numpy as np
import pandas as pd

from evalcore import schema
from evalcore.store.answers import Condition

if TYPE_CHECKING:  # pragma: no cover
    import duckdb

# per (system, condition, task, metric), once: the per-query mean when some file holds its rows (one group per
# key), else the published task score (task_scores holds one row per key; an anti-join on the key, NULL
# instruction states matching each other, drops a published score the per-query rows replace). Floating sums
# run in a fixed order (files by name, rows by key): the same data gives the same bits whichever way it was
# loaded (derived sums, a scan, an overlay)
_SAME_KEY = " AND ".join(f"p.{name} IS NOT DISTINCT FROM c.{name}" for name in schema.CONDITION_KEY)
TASK_RESULTS_SQL = f"""
CREATE OR REPLACE TABLE task_results AS
WITH computed AS (
  SELECT system, benchmark, task, setting, instruction, precision, tie_policy, metric,
         sum(sum_oblivious ORDER BY file) / sum(n_queries) AS value,
         sum(sum_expected ORDER BY file) / sum(n_queries) AS expected,
         sum(sum_min ORDER BY file) / sum(n_queries) AS "min", sum(sum_max ORDER BY file) / sum(n_queries) AS "max",
         sum(n_queries)::BIGINT AS n_queries, sum(n_tied) / sum(n_queries) AS tied_share,
         min(source) AS source, TRUE AS has_query_data
  FROM query_task_sums GROUP BY system, benchmark, task, setting, instruction, precision, tie_policy, metric
)
SELECT * FROM (
  SELECT * FROM computed
  UNION ALL BY NAME
  SELECT system, benchmark, task, setting, instruction, precision, tie_policy, metric,
         value, expected, "min", "max", n_queries, NULL::DOUBLE AS tied_share, source, FALSE AS has_query_data
  FROM task_scores p ANTI JOIN computed c ON {_SAME_KEY}
)
ORDER BY system, benchmark, task, setting, instruction, precision, tie_policy, metric
"""
TASK_RESULT_COLUMNS = (
    'system, task, instruction, value, expected, "min", "max", n_queries, tied_share, source, has_query_data'
)
OVERLAY_TABLE = "overlay_query_metrics"
"""The table holding an overlay's per-query rows (:meth:`Database.with_overlay`); its rows' ``file`` in
``query_task_sums`` is this name."""
# "any" instruction state: per system, its with-instruction rows, else without, else unknown (NULL) ones
INSTRUCTION_RANK = "coalesce(instruction::INTEGER, -1)"
# per-query rows that have every name (files with rows lacking one are read through this filter)
_NAMED_ROWS_SQL = "".join(f" AND {name} IS NOT NULL" for name in ("system", "benchmark", "task", "setting",
                                                                    "precision", "tie_policy", "metric", "qid"))


class Database:
    """One loaded data folder in DuckDB: the tables ``query_task_sums`` (per-query files' sums per group, with
    their ``file``), ``task_scores``, ``systems``, ``task_results`` (the value of every (system, condition,
    task, metric)) and the view ``query_metrics``; and what per-query reads need to know about the files.
    Thread-safe: every statement runs on a cursor of its own."""

    def __init__(self, conn: "duckdb.DuckDBPyConnection", query_files: list[str], null_key_files: frozenset[str],
                 file_index_free: bool, file_sha256: dict[str, str] | None = None) -> None:
        conn.execute(TASK_RESULTS_SQL)
        self.conn = conn
        self.query_files = list(query_files)
        self.null_key_files = frozenset(null_key_files)
        self.file_index_free = file_index_free
        self.file_sha256 = dict(file_sha256 or {})  # per-query file -> sha256 of its bytes, where known

    def cursor(self) -> "duckdb.DuckDBPyConnection":
        return self.conn.cursor()

    def run(self, sql: str, params: list | None = None, *, fetch: str = "frame"):
        """Run one parameterised statement on a fresh cursor — every statement of a question goes through here
        — and fetch its result: ``frame`` (a DataFrame), ``arrays`` (numpy arrays by column, through Arrow: a
        streamed relation's Arrow table converts without copies, where ``fetchnumpy()`` materialises the result
        first; 1.25M per-query rows: ~0.065 s against ~0.10 s) or ``rows`` (a list of tuples)."""
        from evalcore.arrow_np import to_numpy

        cursor = self.cursor()
        try:
            if fetch == "frame":
                return cursor.execute(sql, params or []).df()
            if fetch == "rows":
                return cursor.execute(sql, params or []).fetchall()
            if fetch == "arrays":
                table = cursor.sql(sql, params=params or []).to_arrow_table()
                return {name: to_numpy(table.column(name)) for name in table.column_names}
            raise ValueError(f"unknown fetch {fetch!r}")
        finally:
            cursor.close()

    def frame(self, sql: str, params: list | None = None) -> pd.DataFrame:
        return self.run(sql, params, fetch="frame")

    def arrays(self, sql: str, params: list | None = None) -> dict[str, np.ndarray]:
        return self.run(sql, params, fetch="arrays")

    def rows(self, sql: str, params: list | None = None) -> list[tuple]:
        return self.run(sql, params, fetch="rows")

    def with_overlay(self, rows, sums) -> "Database":
        """A new database holding this one's tables plus in-memory per-query ``rows`` (Arrow, the contract's
        columns) whose checked ``sums`` (Arrow, :data:`evalcore.store.catalogue.SUMS_COLUMNS`) join
        ``query_task_sums`` under the file name :data:`OVERLAY_TABLE`. This database is not changed."""
        import duckdb
        import pyarrow as pa

        conn = duckdb.connect(":memory:")
        conn.execute("SET enable_progress_bar = false")
        conn.execute("SET parquet_metadata_cache = true")
        source = self.cursor()
        try:
            for table in ("task_scores", "systems"):
                conn.from_arrow(source.table(table).to_arrow_table()).create(table)
            base_sums = source.table("query_task_sums").to_arrow_table()
        finally:
            source.close()
        extra = sums.append_column("file", pa.array([OVERLAY_TABLE] * sums.num_rows, pa.string()))
        conn.from_arrow(pa.concat_tables([base_sums, extra.cast(base_sums.schema)])).create("query_task_sums")
        conn.from_arrow(rows.select(list(schema.QUERY_METRICS))).create(OVERLAY_TABLE)
        columns = ", ".join(f'"{c}"' for c in schema.QUERY_METRICS)
        view = conn.table(OVERLAY_TABLE).project(columns)
        if self.query_files:  # files as a Python list, never SQL text
            view = conn.read_parquet(self.query_files, union_by_name=True).project(columns).union(view)
        view.create_view("query_metrics")
        return Database(conn, self.query_files, self.null_key_files, self.file_index_free, self.file_sha256)

    def per_query_source(self, files: list[str]) -> tuple[str, list]:
        """(FROM clause, its parameters) reading the per-query rows of ``files`` (some of which may be the
        overlay table)."""
        on_disk = [f for f in files if f != OVERLAY_TABLE]
        if len(on_disk) == len(files):
            return "read_parquet(?::VARCHAR[], union_by_name = true)", [files]
        columns = ", ".join(f'"{c}"' for c in schema.QUERY_METRICS)
        if not on_disk:
            return OVERLAY_TABLE, []
        return (f"(SELECT {columns} FROM read_parquet(?::VARCHAR[], union_by_name = true) "
                f"UNION ALL SELECT {columns} FROM {OVERLAY_TABLE})", [on_disk])


def as_list(values: Iterable[str] | None) -> list[str] | None:
    """A list of names for a parameter (a lone string is one name, not its characters)."""
    if values is None:
        return None
    if isinstance(values, str):
        return [values]
    return [str(v) for v in values]


def where(cond: Condition, systems: list[str] | None = None, *, skip: tuple[str, ...] = (),
          tasks: list[str] | None = None) -> tuple[str, list]:
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


def state(instruction_of: "pd.Series | dict | None", system: str) -> bool | None:
    """A system's resolved instruction state from a system -> state mapping: True, False or None (unknown)."""
    if instruction_of is None:
        return None
    value = instruction_of.get(system)
    return None if value is None or pd.isna(value) else bool(value)


# -- catalogue questions ------------------------------------------------------------------------------------
def facets(db: Database) -> dict:
    """What exists, for building controls (see :meth:`evalcore.store.Store.facets`)."""
    conditions = db.frame(
        "SELECT benchmark, setting, instruction, precision, tie_policy, metric, "
        "count(DISTINCT system) AS n_systems, count(DISTINCT task) AS n_tasks, "
        "bool_or(has_query_data) AS has_query_data FROM task_results GROUP BY ALL "
        "ORDER BY benchmark, setting, instruction, precision, tie_policy, metric"
    )
    tasks = db.frame("SELECT DISTINCT benchmark, task FROM task_results ORDER BY benchmark, task")
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
    found = systems(db)
    sizes = found["n_parameters"].dropna()
    return {
        "benchmarks": sorted(by_benchmark),
        "by_benchmark": by_benchmark,
        "families": sorted(found["family"].dropna().unique().tolist()),
        "size_range": (float(sizes.min()), float(sizes.max())) if len(sizes) else None,
        "conditions": conditions,
    }


def coverage(db: Database) -> pd.DataFrame:
    """Per (benchmark, setting, metric, instruction, precision, tie_policy, system): how many tasks have a value
    (``n_tasks``) and how many of them from per-query rows (``n_query_tasks``) — what a view needs to know to
    offer only conditions that can answer it (see :meth:`evalcore.store.Store.coverage`)."""
    # task_results holds one row per (system, condition, task, metric) (TASK_RESULTS_SQL: one group per key, plus
    # the published rows no group replaces), so within these groups a row is a task: count(*), not
    # count(DISTINCT task) (~0.02 s less)
    return db.frame(
        "SELECT benchmark, setting, metric, instruction, precision, tie_policy, system, "
        "count(*) AS n_tasks, count(*) FILTER (WHERE has_query_data) AS n_query_tasks "
        "FROM task_results GROUP BY ALL ORDER BY ALL"
    )


def precision_kinds(db: Database) -> pd.DataFrame:
    """Distinct (benchmark, setting, system, precision, precision_kind) of the per-query files that carry the
    optional ``precision_kind`` column (see :meth:`evalcore.store.Store.precision_kinds`). Only those files are
    read (their footers say which), three dictionary columns each."""
    import pyarrow.parquet as pq

    columns = ["benchmark", "setting", "system", "precision", "precision_kind"]
    files = []
    for file in db.query_files:
        try:
            if "precision_kind" in pq.read_schema(file).names:
                files.append(file)
        except (OSError, ValueError):  # gone or damaged since the load: the loaded sums still answer the rest
            continue
    if not files:
        return pd.DataFrame({name: pd.Series(dtype=object) for name in columns})
    return db.frame(
        f"SELECT {', '.join(columns)} FROM read_parquet(?::VARCHAR[], union_by_name = true) "
        "WHERE precision_kind IS NOT NULL GROUP BY ALL ORDER BY ALL", [files]
    )


def systems(db: Database, search: str | None = None, families: Iterable[str] | None = None,
            min_parameters: float | None = None, max_parameters: float | None = None,
            open_weights: bool | None = None, uses_instructions: bool | None = None,
            benchmark: str | None = None) -> pd.DataFrame:
    """Systems matching the filters (see :meth:`evalcore.store.Store.systems`)."""
    clauses, params = [], []
    if search:
        clauses.append(
            "(contains(lower(s.system), lower(?)) OR contains(lower(coalesce(s.display_name, '')), lower(?)))"
        )
        params += [search, search]
    for clause, value, kind in (("list_contains(?::VARCHAR[], s.family)", families, as_list),
                                ("s.n_parameters >= ?", min_parameters, float),
                                ("s.n_parameters <= ?", max_parameters, float),
                                ("s.open_weights = ?", open_weights, bool),
                                ("s.uses_instructions = ?", uses_instructions, bool)):
        if value is not None:
            clauses.append(clause)
            params.append(kind(value))
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
    return db.frame(sql, result_params + params)


# -- task-level questions ------------------------------------------------------------------------------------
def task_table(db: Database, cond: Condition, systems: list[str] | None = None) -> pd.DataFrame:
    """One row per system × task under ``cond`` (columns :data:`TASK_RESULT_COLUMNS`)."""
    clause, params = where(cond, systems)
    partition = "" if cond.instruction is not None else (
        f" QUALIFY {INSTRUCTION_RANK} = max({INSTRUCTION_RANK}) OVER (PARTITION BY system)"
    )
    table = db.frame(
        f"SELECT {TASK_RESULT_COLUMNS} FROM task_results WHERE {clause}{partition} ORDER BY system, task", params
    )
    return table.drop_duplicates(["system", "task"]).reset_index(drop=True)


def states_of_tasks(db: Database, cond: Condition, systems: list[str], tasks: list[str]) -> pd.DataFrame:
    """(system, task, instruction) of every instruction state the ``systems`` have ``tasks`` under (the rest
    of ``cond``), sorted: a reason that names several other states names them in the same order every time."""
    from dataclasses import replace

    clause, params = where(replace(cond, instruction=None), systems, tasks=tasks)
    return db.frame(f"SELECT DISTINCT system, task, instruction FROM task_results WHERE {clause} ORDER BY ALL",
                    params)


def tie_summary(db: Database, cond: Condition, systems: list[str] | None = None,
                task: str | None = None) -> pd.DataFrame:
    """Per system × precision (``cond.precision`` is ignored), from per-query data only (see
    :meth:`evalcore.store.Store.tie_summary`)."""
    only_task = None if task is None else [task]
    clause, params = where(cond, systems, skip=("precision",), tasks=only_task)
    partition = "" if cond.instruction is not None else (
        f" QUALIFY {INSTRUCTION_RANK} = max({INSTRUCTION_RANK}) OVER (PARTITION BY system, precision)"
    )
    return db.frame(
        f"""
        WITH rows AS (
          SELECT system, precision, task, value, expected, "min", "max", n_queries, tied_share
          FROM task_results WHERE has_query_data AND {clause}{partition}
        )
        SELECT system, precision, avg(value ORDER BY task) AS oblivious, avg(expected ORDER BY task) AS expected,
               avg("min" ORDER BY task) AS "min", avg("max" ORDER BY task) AS "max",
               avg("max" ORDER BY task) - avg("min" ORDER BY task) AS "range",
               avg(value ORDER BY task) - avg(expected ORDER BY task) AS bias,
               sum(tied_share * n_queries ORDER BY task) / sum(n_queries) AS tied_share, count(*) AS n_tasks,
               sum(n_queries)::BIGINT AS n_queries
        FROM rows GROUP BY system, precision ORDER BY system, precision
        """,
        params,
    )


def mcr_chance(db: Database, cond: Condition, tasks: list[str] | None = None) -> pd.DataFrame:
    """Per task under ``cond``'s benchmark, setting and precision (any system, any instruction state): the
    accuracy of a uniform pick among each question's candidates, ``chance`` = mean over the task's questions of
    1 / n_candidates (one correct choice per question), and ``n_queries``. A question's candidate count is
    its largest over the systems' rows (a system never ranks more candidates than the question has). From
    per-query rows only; empty without them."""
    rows = per_query(db, replace(cond, instruction=None, metric="p@1", tie_policy=None), None, tasks,
                     columns="task, qid, n_candidates")
    rows = rows[rows["n_candidates"] > 0]
    if rows.empty:
        return pd.DataFrame({"task": pd.Series(dtype=object), "chance": pd.Series(dtype=float),
                             "n_queries": pd.Series(dtype="int64")})
    per_question = rows.groupby(["task", "qid"], sort=True)["n_candidates"].max()
    chance = (1.0 / per_question).groupby(level="task").agg(["mean", "size"])
    return pd.DataFrame({"task": chance.index.astype(object), "chance": chance["mean"].to_numpy(),
                         "n_queries": chance["size"].to_numpy(dtype="int64")})


# -- per-query rows ------------------------------------------------------------------------------------------
def files_of(db: Database, cond: Condition, systems: list[str]) -> list[str]:
    """The per-query files (or the overlay table) holding rows of ``systems`` under ``cond`` (any instruction
    state when ``cond.instruction`` is None), from the load-time sums."""
    clause, params = where(cond, systems)
    return [row[0] for row in db.rows(f"SELECT DISTINCT file FROM query_task_sums WHERE {clause} ORDER BY file",
                                      params)]


def per_query(db: Database, cond: Condition, systems: list[str], tasks: list[str] | None,
              instruction_of: pd.Series | None = None, columns: str = "system, task, qid, oblivious",
              column_params: list | None = None, numpy: bool = False):
    """Per-query rows of ``systems`` under ``cond`` (with instruction=None: each system's resolved state), as a
    DataFrame (or numpy arrays). Only the files known (from the load-time sums) to hold matching rows are
    read. ``column_params`` bind the ``?`` placeholders of ``columns`` (a fixed expression list)."""
    column_params = list(column_params or [])
    if cond.instruction is None and instruction_of is not None:
        clause, params = where(cond, None, tasks=tasks)
        states = {s: state(instruction_of, s) for s in systems}
        clause += (
            " AND ((instruction AND list_contains(?::VARCHAR[], system))"
            " OR (NOT instruction AND list_contains(?::VARCHAR[], system))"
            " OR (instruction IS NULL AND list_contains(?::VARCHAR[], system)))"
        )
        params += [[s for s, found in states.items() if found is flag] for flag in (True, False, None)]
    else:
        clause, params = where(cond, systems, tasks=tasks)
    files = [row[0] for row in db.rows(f"SELECT DISTINCT file FROM query_task_sums WHERE {clause} ORDER BY file",
                                       params)]
    if db.null_key_files & set(files):
        clause += _NAMED_ROWS_SQL
    if not files:  # same columns, no rows
        sql, params = f"SELECT {columns} FROM query_metrics WHERE FALSE", column_params
    else:
        source, source_params = db.per_query_source(files)
        sql = f"SELECT {columns} FROM {source} WHERE {clause}"
        params = column_params + source_params + params
    return db.arrays(sql, params) if numpy else db.frame(sql, params)


PER_QUERY_VALUES = ("oblivious", "expected")
"""The per-query values :func:`per_query_codes` can return (a fixed list: the name becomes SQL)."""


def per_query_codes(db: Database, cond: Condition, systems: list[str], tasks: list[str],
                    instruction_of: pd.Series | None, value: str = "oblivious") -> dict[str, np.ndarray]:
    """The per-query rows a bootstrap needs, as arrays in scan order: ``system_code`` (index into
    ``systems``), ``task_code`` (index into ``tasks``), ``query_key`` (hash of task, qid), and ``value`` (one
    of :data:`PER_QUERY_VALUES`, under its own name).

    When every file holding rows of the condition holds a single system (one file per system, as
    ``evalcore ingest`` writes them), the system comes from the file (DuckDB's ``file_index``) and the
    per-system filters (the system list, each system's instruction state) become per-file ones, which
    spares comparing every scanned row with the system list; otherwise the rows carry their system.
    """
    if value not in PER_QUERY_VALUES:
        raise ValueError(f"value must be one of {', '.join(PER_QUERY_VALUES)}, not {value!r}")
    plan = None
    if db.file_index_free and (cond.instruction is not None or instruction_of is not None):
        plan = _one_system_files(db, cond, systems, tasks, instruction_of)
    if plan is None:
        return per_query(
            db, cond, systems, tasks, instruction_of, numpy=True,
            columns=(
                "list_position(?::VARCHAR[], system)::INTEGER - 1 AS system_code, "
                "list_position(?::VARCHAR[], task)::INTEGER - 1 AS task_code, "
                f"hash(task, qid) AS query_key, {value}"
            ),
            column_params=[systems, tasks],
        )
    files, file_system_code, file_instruction, filter_tasks = plan
    if not files:
        return {"system_code": np.empty(0, np.int64), "task_code": np.empty(0, np.int32),
                "query_key": np.empty(0, np.uint64), value: np.empty(0, np.float64)}
    clause, params = where(cond, None, skip=("instruction",) if cond.instruction is None else ())
    if cond.instruction is None:
        clause += " AND instruction IS NOT DISTINCT FROM list_extract(?::BOOLEAN[], file_index::BIGINT + 1)"
        params.append(file_instruction)
    if db.null_key_files & set(files):
        clause += _NAMED_ROWS_SQL
    if filter_tasks:
        clause += " AND list_contains(?::VARCHAR[], task)"
        params.append(tasks)
    rows = db.arrays(
        "SELECT file_index::BIGINT AS file_index, list_position(?::VARCHAR[], task)::INTEGER - 1 AS task_code,"
        f" hash(task, qid) AS query_key, {value} FROM read_parquet(?::VARCHAR[], union_by_name = true)"
        f" WHERE {clause}",
        [tasks, files] + params,
    )
    file_index = np.asarray(rows.pop("file_index"), dtype=np.int64)
    rows["system_code"] = np.asarray(file_system_code, dtype=np.int64)[file_index]
    return rows


def _one_system_files(db: Database, cond: Condition, systems: list[str], tasks: list[str],
                      instruction_of: pd.Series | None) -> tuple[list[str], list[int], list[bool | None], bool] | None:
    """For :func:`per_query_codes`: (files to read, system code of each, instruction state to keep in each,
    whether rows of other tasks must be filtered out), or None when some file holds several systems under
    ``cond`` or rows of the condition are in memory (from the load-time sums; no file is read)."""
    clause, params = where(cond, None)
    held = db.rows(
        f"SELECT file, list(DISTINCT system) AS systems, list(DISTINCT task) AS tasks FROM query_task_sums"
        f" WHERE {clause} GROUP BY file ORDER BY file",
        params,
    )
    if any(len(file_systems) != 1 or file == OVERLAY_TABLE for file, file_systems, _ in held):
        return None
    code = {system: i for i, system in enumerate(systems)}
    files, system_codes, instruction_states, held_tasks = [], [], [], set()
    for file, (system,), file_tasks in held:
        if system not in code:
            continue
        files.append(file)
        system_codes.append(code[system])
        instruction_states.append(cond.instruction if cond.instruction is not None else state(instruction_of, system))
        held_tasks.update(file_tasks)
    return files, system_codes, instruction_states, not held_tasks <= set(tasks)
