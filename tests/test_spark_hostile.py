"""Hostile values on the Spark path (the siblings of the single-machine fixes): float
ids beyond 2^53 and grades that are no int64 are InputErrors with one line, as ``evalcore.formats`` makes them,
instead of a CAST_OVERFLOW stack trace, a silent merge (1e20 and 1e20 + 2^14 are one long) or a silent
truncation (a grade of 1.5 evaluated as 1). One local[2] session for the module (slow: Spark starts once)."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from needs import require_module  # noqa: E402

require_module("pyspark")

from evalcore.errors import InputError  # noqa: E402
from evalcore.spark import evaluate_spark_paths, spark_session  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")]


@pytest.fixture(scope="module")
def spark():
    session = spark_session("local[2]", app_name="evalcore-hostile-tests",
                            conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
    yield session
    session.stop()


def write(path: Path, **columns) -> str:
    pq.write_table(pa.table(columns), path)
    return str(path)


def evaluate(spark, run: str, qrels: str):
    return evaluate_spark_paths(run, qrels, ["mrr@10"], partitions=1, spark=spark)


@pytest.mark.parametrize("which", ["run", "qrels"])
@pytest.mark.parametrize("bad", [1e20, 2.0**53, float("inf"), float("nan")])
def test_float_ids_beyond_two_to_the_53_are_one_line(spark, tmp_path, which, bad):
    ids = pa.array([1.0, bad], pa.float64())
    run = write(tmp_path / "run.parquet", qid=ids if which == "run" else ["1", "2"], docid=["a", "a"],
                score=[1.0, 1.0])
    qrels = write(tmp_path / "qrels.parquet", qid=ids if which == "qrels" else ["1", "2"], docid=["a", "a"],
                  relevance=[1, 1])
    with pytest.raises(InputError) as error:
        evaluate(spark, run, qrels)
    message = str(error.value)
    assert message.startswith(f"{which}: expected qids stored as text or integers"), message
    assert "\n" not in message and "SQLSTATE" not in message


def test_float_ids_below_two_to_the_53_match_text_ids(spark, tmp_path):
    run = write(tmp_path / "run.parquet", qid=pa.array([1.0, 2.0, 2.0]), docid=["a", "b", "c"], score=[1.0, 2.0, 1.0])
    qrels = write(tmp_path / "qrels.parquet", qid=["1", "2"], docid=["a", "c"], relevance=[1, 1])
    summary = evaluate(spark, run, qrels)
    assert summary["n_queries"].tolist() == [2] and summary["oblivious"].tolist() == [0.75]


@pytest.mark.parametrize("grade, arrow_type, says", [
    (1.5, pa.float64(), "1.5"), (1e30, pa.float64(), "fits in 64 bits"), (-1, pa.int64(), "-1"),
])
def test_grades_the_engine_refuses_are_not_cast_first(spark, tmp_path, grade, arrow_type, says):
    run = write(tmp_path / "run.parquet", qid=["q"], docid=["a"], score=[1.0])
    qrels = write(tmp_path / "qrels.parquet", qid=["q"], docid=["a"], relevance=pa.array([grade], arrow_type))
    with pytest.raises(InputError) as error:
        evaluate(spark, run, qrels)
    message = str(error.value)
    assert message.startswith("qrels: expected a non-negative integer relevance grade") and says in message, message
