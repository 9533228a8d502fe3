"""The tie-aware engine on Apache Spark, for runs that outgrow one machine (optional dependency ``pyspark``).

Spark only moves rows: run and qrels are co-partitioned by a hash of ``qid`` (plus the label columns they
share, e.g. ``task``) into *query buckets*, and every bucket is handed, as two Arrow tables, to
:func:`evalcore.engine.evaluate` inside a cogrouped ``applyInArrow`` UDF. There is no second
implementation of the metric maths, so per-query values are the single-machine engine's:

- each query's rows all sit in one bucket, and the engine's per-query values do not depend on which
  other queries share its chunk or block (expected / min / max are bitwise equal);
- ``input-order`` needs each query's rows in their source order: every run row carries a position
  (``pos`` if the data has it; for files, the file path and the row index inside the file; otherwise
  ``monotonically_increasing_id()`` taken before any shuffle), and each bucket is sorted by it before the
  engine sees it;
- ``random:SEED`` keys hash (seed, qid, docid) in the engine, and ``docid-*`` rank document ids, so
  neither depends on the partitioning.

A run DataFrame may hold many runs told apart by label columns (``system``, ``benchmark``, ``task``,
``setting``, ``instruction``, ``precision``): each distinct label combination is evaluated as its own run
against the qrels rows that agree on the labels the qrels have (e.g. ``task``).

Import cost: ``pyspark`` is imported by the functions, not at module import.
"""
from __future__ import annotations

import math
import os
import re
import sys
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np
import pandas as pd

from evalcore import progress
from evalcore.engine import parse_tie_policy
from evalcore.metrics import parse_metrics
from evalcore.schema import QUERY_METRICS

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

LABEL_COLUMNS = ("system", "benchmark", "task", "setting", "instruction", "precision")
QUERY_METRICS_ORDER = tuple(QUERY_METRICS)  # the data contract's column order
# output directory levels when the labels are there: <out>/by_system=<s>/by_task=<t>/part-*.parquet.
# Copies of the columns, because Spark drops partition columns from the files and the store classifies a
# file by its own columns (it needs system and task inside every file).
PARTITION_DIRS = {"system": "by_system", "task": "by_task"}
ROWS_PER_BUCKET = 2_000_000  # default bucket size for paths: bounds a Python worker's memory (~0.5 GB)
_POSITION = "_evalcore_pos"
_BUCKET = "_evalcore_bucket"


# --------------------------------------------------------------------------------------------- session

def spark_session(master: str = "local[2]", *, app_name: str = "evalcore", conf: dict | None = None) -> "SparkSession":
    """A SparkSession with small, quiet defaults for local mode (``conf`` overrides them).

    On a cluster (``spark-submit``), the master and resources come from spark-submit and ``master`` is
    only used when no session exists yet.
    """
    from pyspark.sql import SparkSession

    local = {  # small and quiet, for local mode only: on a cluster, spark-submit's settings stand
        "spark.ui.enabled": "false",
        "spark.driver.memory": "2g",
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.files.maxPartitionBytes": "32m",  # several read tasks even for one big local file
        "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
        "spark.ui.showConsoleProgress": "true" if progress.active() else "false",  # Spark's own stage bar
    }
    settings = {**(local if (master or "").startswith("local") else {}),
                "spark.sql.execution.arrow.pyspark.enabled": "true", **(conf or {})}
    if (master or "").startswith("local"):
        # Local Python workers run PYSPARK_PYTHON, else whatever `python3` is on PATH: that one may lack
        # pandas/pyarrow (a venv is not activated for subprocesses). This interpreter has them.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


# ------------------------------------------------------------------------------------------------ core

def evaluate_spark(
    run_df: "DataFrame",
    qrels_df: "DataFrame",
    metrics: str | Iterable[str] = ("ndcg@10",),
    tie_policy: str = "docid-desc",
    *,
    include_missing: bool = False,
    maxp: bool = False,
    partitions: int | None = None,
    order_by: str | Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
) -> "DataFrame":
    """Per-query tie-aware metrics of a Spark run against Spark qrels, computed by the single-machine engine.

    ``run_df`` has ``qid, docid, score`` (ids of any type are cast to strings, scores to double) and
    ``qrels_df`` has ``qid, docid, relevance``. Returns a Spark DataFrame with the label columns found in
    ``run_df`` (``labels``; default: those of :data:`LABEL_COLUMNS` present) followed by
    ``qid, metric, oblivious, expected, min, max, n_candidates, tied_at_cutoff`` — for each run, the rows
    :func:`evalcore.evaluate` returns (row order is not defined: sort if you need one).

    ``partitions``: number of query buckets (one engine call each; default Spark's default parallelism).
    A bucket is held in one Python worker, so choose about rows / 2M for big runs.
    ``order_by``: the run's row-order column(s) for ``input-order`` (default ``pos`` when present, else
    ``monotonically_increasing_id()`` of ``run_df`` as given, i.e. before any shuffle this function does).
    """
    from pyspark.sql import functions as F

    parsed = [str(m) for m in parse_metrics(metrics)]
    policy = str(parse_tie_policy(tie_policy))
    spark = run_df.sparkSession
    run_labels = [c for c in (LABEL_COLUMNS if labels is None else labels) if c in run_df.columns]
    missing_labels = set(labels or ()) - set(run_df.columns)
    if missing_labels:
        raise ValueError(f"label column(s) {sorted(missing_labels)} are not in the run")
    shared_labels = [c for c in run_labels if c in qrels_df.columns]
    n_buckets = int(partitions or spark.sparkContext.defaultParallelism)
    if n_buckets < 1:
        raise ValueError("partitions must be >= 1")

    if order_by is None:
        if "pos" in run_df.columns:
            order_by = ["pos"]
        else:
            run_df = run_df.withColumn(_POSITION, F.monotonically_increasing_id())
            order_by = [_POSITION]
    order_by = [order_by] if isinstance(order_by, str) else list(order_by)
    order_names = [f"{_POSITION}{i}" for i in range(len(order_by))]

    bucket = F.pmod(F.xxhash64(*[F.col(c) for c in shared_labels], F.col("qid")), F.lit(n_buckets))
    run = run_df.select(
        *run_labels, _as_id(run_df, "qid", "run"), _as_id(run_df, "docid", "run"),
        F.col("score").cast("double").alias("score"),
        *[F.col(c).alias(name) for c, name in zip(order_by, order_names)],
    ).withColumn(_BUCKET, bucket)
    qrels = qrels_df.select(  # relevance as stored: the engine checks grades (a cast here truncated 1.5 to 1)
        *shared_labels, _as_id(qrels_df, "qid", "qrels"), _as_id(qrels_df, "docid", "qrels"), F.col("relevance"),
    ).withColumn(_BUCKET, bucket)

    every_run = None  # None: the runs present in each bucket
    if include_missing:  # a run absent from a bucket still owes zeros for the bucket's qrels queries
        every_run = [tuple(row) for row in run_df.select(*run_labels).distinct().collect()] if run_labels else [()]
    schema = _result_schema(run_df, run_labels)
    evaluate_bucket = _bucket_evaluator(parsed, policy, include_missing, maxp, run_labels, shared_labels,
                                        order_names, every_run, schema)
    return run.groupBy(_BUCKET).cogroup(qrels.groupBy(_BUCKET)).applyInArrow(evaluate_bucket, schema)


_FLOAT_ID_LIMIT = 2.0**53


def _as_id(df: "DataFrame", column: str, what: str = "run"):
    """An id column as text the way ``evalcore.formats`` reads it (integral floats 1.0 -> "1"; a float id of
    magnitude 2^53 or more, NaN or infinite is an InputError, as in ``formats``: float64 cannot keep such
    ids apart, and the cast to long overflowed or merged them)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType

    col = F.col(column)
    if isinstance(df.schema[column].dataType, (DoubleType, FloatType)):
        refused = F.isnan(col) | (F.abs(col) >= F.lit(_FLOAT_ID_LIMIT))  # inf >= 2^53 too
        text = F.when(col == F.floor(col), col.cast("long").cast("string")).otherwise(col.cast("string"))
        message = F.concat(F.lit(f"{_ERROR_MARK}{what}: expected {column}s stored as text or integers: "),
                           col.cast("string"),
                           F.lit(" is a float beyond 2^53 (or not finite), where float64 no longer tells "
                                 "neighbouring integers apart"))
        return F.when(refused, F.raise_error(message)).otherwise(text).alias(column)
    return col.cast("string").alias(column)


def _result_schema(run_df: "DataFrame", run_labels: list[str]):
    from pyspark.sql.types import BooleanType, DoubleType, LongType, StringType, StructField, StructType

    fields = [StructField(c, run_df.schema[c].dataType, True) for c in run_labels]
    fields += [StructField("qid", StringType(), False), StructField("metric", StringType(), False)]
    fields += [StructField(c, DoubleType(), False) for c in ("oblivious", "expected", "min", "max")]
    fields += [StructField("n_candidates", LongType(), False), StructField("tied_at_cutoff", BooleanType(), False)]
    return StructType(fields)


def _bucket_evaluator(metrics: list[str], policy: str, include_missing: bool, maxp: bool, run_labels: list[str],
                      shared_labels: list[str], order_names: list[str], every_run: list[tuple] | None, schema):
    """The UDF body: (run rows, qrels rows) of one query bucket -> the engine's per-query rows.

    Everything it closes over is small and picklable; the engine is imported on the executor.
    """

    def evaluate_bucket(run: "pa.Table", qrels: "pa.Table") -> "pa.Table":
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyspark.sql.pandas.types import to_arrow_schema

        from evalcore.engine import evaluate_table

        arrow_schema = to_arrow_schema(schema)
        if run.num_rows:
            run = run.take(pc.sort_indices(run, sort_keys=[(name, "ascending") for name in order_names]))
        frames = []
        qrels_by_label = _row_groups(qrels, shared_labels)
        runs_here = _row_groups(run, run_labels)
        wanted = runs_here.keys() if every_run is None else every_run
        for label_values in wanted:
            rows = runs_here.get(label_values, np.zeros(0, dtype=np.int64))
            shared = tuple(v for c, v in zip(run_labels, label_values) if c in shared_labels)
            if shared not in qrels_by_label:  # no judged query of this run in this bucket
                continue
            qrels_rows = qrels_by_label[shared]
            run_part = _core(run, ["qid", "docid", "score"], rows)
            qrels_part = _core(qrels, ["qid", "docid", "relevance"], qrels_rows)
            result = evaluate_table(run_part, qrels_part, metrics, policy, include_missing=include_missing,
                                    maxp=maxp, threads=1)
            if result.num_rows == 0:
                continue
            for column, value in zip(run_labels, label_values):
                label_type = arrow_schema.field(column).type
                result = result.append_column(column, pa.array([_plain(value)] * result.num_rows, label_type))
            frames.append(result.select(arrow_schema.names).cast(arrow_schema))
        return pa.concat_tables(frames) if frames else arrow_schema.empty_table()

    return evaluate_bucket


def _plain(value):
    """A numpy scalar (from pandas group keys) as the Python value Arrow expects."""
    return value.item() if isinstance(value, np.generic) else value


def _row_groups(table: "pa.Table", columns: list[str]) -> dict[tuple, np.ndarray | None]:
    """Row indices per distinct value tuple of ``columns`` (in row order); ``{(): None}`` = all rows."""
    if not columns:
        return {(): None} if table.num_rows else {}
    keys = table.select(columns).to_pandas()
    groups = keys.groupby(columns, sort=False, dropna=False).indices
    return {(k if isinstance(k, tuple) else (k,)): v for k, v in groups.items()}


def _core(table: "pa.Table", columns: list[str], rows: np.ndarray | None) -> "pa.Table":
    import pyarrow as pa

    part = table.select(columns)
    return part if rows is None else part.take(pa.array(rows))


# ----------------------------------------------------------------------------------------------- paths

_SPARK_OUTPUT_NAMES = re.compile(r"^(part-.*|_SUCCESS|_committed_.*|_started_.*|\..*\.crc|by_(system|task)=.*)$")


def check_spark_inputs(run_glob: str | Sequence[str], qrels_path: str | Sequence[str],
                       per_query_out: str | None = None) -> None:
    """Checks made before a Spark session starts, so that a mistake is one line instead of a JVM stack trace
    and an overwrite never deletes what it should not:

    - every local run file the glob names (files inside a named folder too) is parquet: Spark reads runs
      as parquet only (a TREC text run is refused, with what to do instead);
    - ``per_query_out``, which Spark overwrites as a whole folder, is not a file, holds no input, and is
      either absent, empty or a previous per-query output (``part-*`` files, ``by_system=``/``by_task=``
      folders, ``_SUCCESS``): any other folder, a home directory say, is refused rather than emptied.

    Paths with a scheme (``s3a://``, ``hdfs://``) are left to Spark.
    """
    import glob as globbing
    from pathlib import Path

    from evalcore import formats
    from evalcore.errors import InputError, OutputError
    from evalcore.formats.detection import first_bytes

    def local_files(patterns: str | Sequence[str]) -> list[Path]:
        found: list[Path] = []
        for pattern in [patterns] if isinstance(patterns, str) else patterns:
            if "://" in str(pattern):
                continue
            for match in sorted(globbing.glob(str(pattern))) or []:
                match = Path(match)
                if match.is_dir():
                    found += [p for p in sorted(match.rglob("*")) if p.is_file()
                              and not p.name.startswith((".", "_"))]
                elif match.is_file():
                    found.append(match)
        return found

    runs = local_files(run_glob)
    for path in runs:
        head = first_bytes(path, 4)
        if not head.startswith(b"PAR1"):
            raise InputError(f"--engine spark reads parquet runs only, and this is {formats.detect_run_format(path)}"
                             " text: evaluate it without --engine spark, or convert it to parquet first", path)
    if per_query_out is None or "://" in str(per_query_out):
        return
    out = Path(per_query_out)
    if out.exists() and not out.is_dir():
        raise OutputError("cannot write per-query folder: --engine spark writes a folder, found a file", out)
    if not out.is_dir():
        return
    resolved = out.resolve()
    for source in runs + local_files(qrels_path):
        if resolved == source.resolve() or resolved in source.resolve().parents:
            raise OutputError(f"the per-query folder holds the input {source}: Spark empties the folder before "
                              "writing; choose another folder", out)
    foreign = [p for p in out.iterdir() if not _SPARK_OUTPUT_NAMES.match(p.name)]
    if foreign:
        raise OutputError(f"cannot write per-query folder: Spark empties it before writing, and it holds "
                          f"{foreign[0].name!r}, which no per-query output writes; choose an empty or new folder",
                          out)


def read_run_parquet(spark: "SparkSession", run_glob: str | Sequence[str]) -> "DataFrame":
    """Run parquet file(s) (globs, directories, any Hadoop-compatible path) with canonical ``qid, docid,
    score`` (the column aliases :mod:`evalcore.formats` accepts), the label columns it has, and ``pos``:
    the source order of every row (files in the order of their sorted URIs, then row order inside a file),
    whatever splits Spark reads the files in."""
    from evalcore import formats

    df = spark.read.parquet(*([run_glob] if isinstance(run_glob, str) else run_glob))
    df = _canonical_columns(df.drop("pos"), formats.RUN_COLUMN_NAMES, run_glob)
    return _with_file_positions(spark, df)


def read_qrels(spark: "SparkSession", qrels_path: str | Sequence[str]) -> "DataFrame":
    """Qrels with canonical ``qid, docid, relevance`` (plus any label columns): parquet through Spark, or
    one local file of any format :func:`evalcore.formats.read_qrels` reads (qrels are small)."""
    from pathlib import Path

    from evalcore import formats

    if isinstance(qrels_path, str) and Path(qrels_path).is_file() \
            and formats.detect_qrels_format(qrels_path) != "parquet":
        return spark.createDataFrame(formats.read_qrels(qrels_path).to_pandas())
    df = spark.read.parquet(*([qrels_path] if isinstance(qrels_path, str) else qrels_path))
    return _canonical_columns(df, formats.QRELS_COLUMN_NAMES, qrels_path)


def _canonical_columns(df: "DataFrame", names: dict[str, tuple[str, ...]], path) -> "DataFrame":
    from pyspark.sql import functions as F

    from evalcore.formats.columns import pick_columns

    picked = pick_columns(df.columns, names, str(path))
    renamed = {df.columns[index]: canonical for canonical, index in picked.items()}
    keep = [c for c in df.columns if c in LABEL_COLUMNS or c == "source"]
    return df.select(*[F.col(f"`{source}`").alias(target) for source, target in renamed.items()],
                     *[c for c in keep if c not in renamed])


def _with_file_positions(spark: "SparkSession", df: "DataFrame") -> "DataFrame":
    """``pos`` = file number << 40 | row index inside the file (one long per row: cheap to shuffle)."""
    from pyspark.sql import functions as F

    row_index = F.col("_metadata.row_index")
    files = sorted(_uri_key(f) for f in df.inputFiles())
    if len(files) <= 1:
        return df.select("*", row_index.alias("pos"))
    numbers = spark.createDataFrame([(f, i) for i, f in enumerate(files)], "_pos_file string, _pos_number long")
    key = F.regexp_replace(F.col("_metadata.file_path"), _URI_PREFIX, "")
    joined = df.select("*", key.alias("_pos_file"), row_index.alias("_pos_row")).join(
        F.broadcast(numbers), on="_pos_file", how="left")
    number = F.coalesce(F.col("_pos_number"), F.raise_error(F.lit("evalcore: a run row's file is not in the input")))
    return joined.withColumn("pos", F.shiftleft(number, 40) + F.col("_pos_row")) \
        .drop("_pos_file", "_pos_row", "_pos_number")


_URI_PREFIX = r"^[A-Za-z][A-Za-z0-9+.-]*:/*"  # file:/x and file:///x name the same file


def _uri_key(uri: str) -> str:
    return re.sub(_URI_PREFIX, "", uri)


def default_partitions(spark: "SparkSession", run_glob: str | Sequence[str]) -> int:
    """Query buckets for a run: about 2M rows each, at least one per core (a count reads no column data)."""
    rows = spark.read.parquet(*([run_glob] if isinstance(run_glob, str) else run_glob)).count()
    return max(int(spark.sparkContext.defaultParallelism), math.ceil(rows / ROWS_PER_BUCKET))


def evaluate_spark_paths(
    run_glob: str | Sequence[str],
    qrels_path: str | Sequence[str],
    metrics: str | Iterable[str] = ("ndcg@10",),
    tie_policy: str = "docid-desc",
    master: str = "local[2]",
    per_query_out: str | None = None,
    partitions: int | None = None,
    *,
    include_missing: bool = False,
    maxp: bool = False,
    labels: dict | None = None,
    spark_conf: dict | None = None,
    spark: "SparkSession | None" = None,
) -> pd.DataFrame:
    """Evaluate parquet run file(s) against parquet qrels on Spark; return :func:`evalcore.summarize`'s table
    (per metric and, for multi-run inputs, per label combination).

    ``per_query_out``: a directory to write per-query rows to as parquet (overwritten; refused when it holds an
    input or files a per-query output does not write, see :func:`check_spark_inputs`). With the
    ``query_metrics`` labels (columns of the run, or constants in ``labels``: system, benchmark, task,
    setting, instruction, precision, source) the files are ``query_metrics`` files that
    :class:`evalcore.store.Store` and the dashboard read as they are; when ``system``/``task`` are known the
    directory is partitioned ``by_system=<s>/by_task=<t>/`` (the files keep both columns). Without labels
    the columns are those of ``evaluate --per-query``.
    """
    from evalcore.errors import InputError

    policy = str(parse_tie_policy(tie_policy))
    parsed = [str(m) for m in parse_metrics(metrics)]
    check_spark_inputs(run_glob, qrels_path, per_query_out)  # before a session starts: one line, nothing emptied
    try:
        from pyspark.errors import AnalysisException, PySparkException
        from pyspark.sql import functions as F
    except ImportError:
        raise InputError("--engine spark needs pyspark: pip install -r requirements-spark.txt") from None
    own_session = spark is None
    spark = spark or spark_session(master, conf=spark_conf)
    try:
        run_df = read_run_parquet(spark, run_glob)
        qrels_df = read_qrels(spark, qrels_path)
        n_buckets = partitions or default_partitions(spark, run_glob)
        if own_session:  # one shuffle partition per bucket; a caller's session keeps its settings
            spark.conf.set("spark.sql.shuffle.partitions", str(n_buckets))
        per_query = evaluate_spark(run_df, qrels_df, parsed, policy, include_missing=include_missing, maxp=maxp,
                                   partitions=n_buckets, order_by="pos")
        per_query = _with_labels(per_query, labels or {}, policy)
        if per_query_out:
            dirs = [PARTITION_DIRS[c] for c in PARTITION_DIRS if c in per_query.columns]
            for column, directory in PARTITION_DIRS.items():
                if column in per_query.columns:
                    per_query = per_query.withColumn(directory, F.col(column))
            per_query.write.mode("overwrite").partitionBy(*dirs).parquet(str(per_query_out))
            per_query = spark.read.parquet(str(per_query_out)).drop(*PARTITION_DIRS.values())
        return _summary(per_query, parsed)
    except AnalysisException as exc:  # e.g. no file matches the glob (Spark's message names the path)
        raise InputError(str(exc).splitlines()[0]) from None
    except PySparkException as exc:
        message = _input_error_message(str(exc))
        if message is None:
            raise
        raise InputError(message) from None
    finally:
        if own_session:
            spark.stop()


def _with_labels(per_query: "DataFrame", labels: dict, policy: str) -> "DataFrame":
    """Constant labels + tie_policy, columns in ``query_metrics`` order (unknown labels left out)."""
    from pyspark.sql import functions as F

    for column, value in labels.items():
        if column not in per_query.columns:
            per_query = per_query.withColumn(column, F.lit(value))
    per_query = per_query.withColumn("tie_policy", F.lit(policy))
    ordered = [c for c in QUERY_METRICS_ORDER if c in per_query.columns]
    return per_query.select(*ordered, *[c for c in per_query.columns if c not in ordered])


def _summary(per_query: "DataFrame", metrics: list[str]) -> pd.DataFrame:
    """:func:`evalcore.summarize` computed by Spark (means may differ from pandas' in the last bits)."""
    from pyspark.sql import functions as F

    group = [c for c in LABEL_COLUMNS if c in per_query.columns] + ["metric"]
    rows = per_query.groupBy(*group).agg(
        F.count("*").alias("n_queries"), F.avg("oblivious").alias("oblivious"), F.avg("expected").alias("expected"),
        F.avg("min").alias("min"), F.avg("max").alias("max"),
        F.avg(F.col("tied_at_cutoff").cast("double")).alias("tied_share"),
    ).toPandas()
    rows["range"] = rows["max"] - rows["min"]
    rows["bias"] = rows["oblivious"] - rows["expected"]
    order = {m: i for i, m in enumerate(metrics)}
    rows = rows.sort_values(group[:-1] + ["metric"], key=lambda s: s.map(order) if s.name == "metric" else s,
                            ignore_index=True)
    return rows[group + ["n_queries", "oblivious", "expected", "min", "max", "range", "bias", "tied_share"]]


_ERROR_MARK = "evalcore.errors.InputError: "  # what a Spark SQL raise_error says, to be read as an InputError


def _input_error_message(text: str) -> str | None:
    """The message of an ``InputError`` raised inside a Spark task (by the engine, or by ``raise_error`` with
    :data:`_ERROR_MARK`), if that is what failed."""
    found = re.search(re.escape(_ERROR_MARK) + r"(.*)", text)
    if not found:
        return None
    message = re.sub(r"\s*SQLSTATE: \w+\s*$", "", found.group(1).strip())  # raise_error's suffix
    return re.sub(r"^<?(run|qrels)(?: table>)?(?: row \d+|:\d+)?: ", r"\1: ", message)  # bucket rows, not file lines
