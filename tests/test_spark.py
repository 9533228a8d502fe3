"""The Spark engine (evalcore/spark.py) against the single-machine engine: per-query values must be
identical (bitwise, every value column) for every metric, tie policy and number of query buckets.

Skipped when pyspark is not installed (optional dependency: requirements-spark.txt). One local[2]
SparkSession is shared by the module; the whole file takes 1-3 minutes on two (busy) cores.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from needs import require_module  # noqa: E402

require_module("pyspark")

from evalcore.engine import evaluate  # noqa: E402
from evalcore.spark import evaluate_spark, evaluate_spark_paths, spark_session  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")]

METRICS = ["ndcg@10", "mrr@10", "recall@100", "p@1", "ap@10"]
POLICIES = ["docid-desc", "docid-asc", "input-order", "random:3"]
VALUE_COLUMNS = ["oblivious", "expected", "min", "max", "n_candidates", "tied_at_cutoff"]
N_QUERIES, N_DOCS = 2_000, 128


@pytest.fixture(scope="module")
def spark():
    session = spark_session("local[2]", app_name="evalcore-tests",
                            conf={"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"})
    yield session
    session.stop()


@pytest.fixture(scope="module")
def synthetic() -> tuple[pd.DataFrame, pd.DataFrame]:
    """~200k run rows with heavy ties (scores from 6 levels) and uneven depths (1-20 or 65-128
    candidates, so how queries share padded blocks changes with the bucketing), rows shuffled so queries
    are not contiguous (input order is neither docid nor score order); graded qrels with judged
    non-relevant and unretrieved relevant documents, queries without relevant documents and qrels queries
    absent from the run."""
    rng = np.random.default_rng(8)
    shallow = rng.random(N_QUERIES) < 0.1
    depth = np.where(shallow, rng.integers(1, 21, N_QUERIES), rng.integers(65, N_DOCS + 1, N_QUERIES))
    qids = np.repeat([f"q{i}" for i in range(N_QUERIES)], depth)
    docs = rng.integers(0, 10**6, size=(N_QUERIES, N_DOCS * 2))
    docids = np.array([f"d{d}" for row, n in zip(docs, depth) for d in pd.unique(row)[:n]])
    scores = rng.integers(0, 6, size=len(qids)) / 4.0
    run = pd.DataFrame({"qid": qids, "docid": docids, "score": scores})
    run = run.sample(frac=1.0, random_state=3, ignore_index=True)
    run = run.assign(pos=np.arange(len(run), dtype=np.int64))

    judged = run.sample(n=12 * N_QUERIES, random_state=4)[["qid", "docid"]]
    judged = judged.assign(relevance=rng.choice([0, 0, 1, 2, 3], size=len(judged)))
    unretrieved = pd.DataFrame({"qid": [f"q{i}" for i in range(0, N_QUERIES, 2)], "docid": "unretrieved",
                                "relevance": 2})
    absent = pd.DataFrame({"qid": [f"missing{i}" for i in range(5)], "docid": "x", "relevance": 1})
    qrels = pd.concat([judged, unretrieved, absent], ignore_index=True)
    qrels = qrels[~qrels["qid"].isin(["q11", "q12"]) | (qrels["relevance"] == 0)]  # no relevant doc
    return run, qrels.reset_index(drop=True)


def _by_query(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.sort_values(["qid", "metric"], ignore_index=True)
    return frame.astype({"qid": str, "metric": str})[["qid", "metric", *VALUE_COLUMNS]]


def _assert_identical(expected: pd.DataFrame, actual: pd.DataFrame) -> None:
    expected, actual = _by_query(expected), _by_query(actual)
    assert len(expected) == len(actual)
    pd.testing.assert_frame_equal(expected, actual, check_exact=True)
    for column in ("oblivious", "expected", "min", "max"):  # to the bit, not just ==
        assert (expected[column].to_numpy().view(np.int64) == actual[column].to_numpy().view(np.int64)).all()


@pytest.fixture(scope="module")
def single_machine(synthetic) -> dict[str, pd.DataFrame]:
    run, qrels = synthetic
    return {policy: evaluate(run[["qid", "docid", "score"]], qrels, METRICS, policy) for policy in POLICIES}


@pytest.fixture(scope="module")
def spark_inputs(spark, synthetic):
    run, qrels = synthetic
    return spark.createDataFrame(run).cache(), spark.createDataFrame(qrels).cache()


@pytest.mark.parametrize("partitions", [1, 3, 7])
def test_every_policy_and_metric_matches_the_engine(spark_inputs, single_machine, partitions):
    run_df, qrels_df = spark_inputs
    if partitions == 7:  # rows reach the buckets in another order: only `pos` may define input order
        run_df = run_df.repartition(5)
    for policy in POLICIES:
        actual = evaluate_spark(run_df, qrels_df, METRICS, policy, partitions=partitions).toPandas()
        _assert_identical(single_machine[policy], actual)


def test_synthetic_run_really_has_ties_and_the_policies_disagree(synthetic, single_machine):
    ndcg = {p: frame[frame["metric"] == "ndcg@10"] for p, frame in single_machine.items()}
    assert ndcg["docid-desc"]["tied_at_cutoff"].mean() > 0.8
    assert 150_000 < len(synthetic[0]) < 250_000
    assert (ndcg["docid-desc"]["max"] > ndcg["docid-desc"]["min"]).mean() > 0.5
    assert all(not ndcg[a]["oblivious"].equals(ndcg[b]["oblivious"]) for a in POLICIES for b in POLICIES if a < b)


def test_include_missing_and_default_position(spark, synthetic):
    """Without a ``pos`` column the row order is taken before the shuffle; missing queries score 0."""
    run, qrels = synthetic
    run = run[["qid", "docid", "score"]]
    expected = evaluate(run, qrels, ["ndcg@10", "recall@100"], "input-order", include_missing=True)
    actual = evaluate_spark(spark.createDataFrame(run), spark.createDataFrame(qrels), ["ndcg@10", "recall@100"],
                            "input-order", include_missing=True, partitions=3).toPandas()
    _assert_identical(expected, actual)
    assert actual["qid"].str.startswith("missing").sum() == 5 * 2


def test_many_runs_in_one_dataframe(spark, synthetic):
    """Label columns split a DataFrame into runs; qrels with a ``task`` column are matched per task."""
    run, qrels = synthetic
    run = run[run["qid"].isin([f"q{i}" for i in range(300)])][["qid", "docid", "score"]]
    qrels = qrels[qrels["qid"].isin([f"q{i}" for i in range(300)] + ["missing0"])]
    other_qrels = qrels.assign(relevance=(qrels["relevance"] + 1) % 4)
    runs = pd.concat([run.assign(system="a", task="t1"), run.assign(system="b", task="t1", score=-run["score"]),
                      run.assign(system="a", task="t2")], ignore_index=True)
    all_qrels = pd.concat([qrels.assign(task="t1"), other_qrels.assign(task="t2")], ignore_index=True)
    actual = evaluate_spark(spark.createDataFrame(runs), spark.createDataFrame(all_qrels), ["ndcg@10", "ap@10"],
                            "docid-asc", include_missing=True, partitions=3).toPandas()
    for (system, task), part in actual.groupby(["system", "task"]):
        one_run = runs[(runs["system"] == system) & (runs["task"] == task)][["qid", "docid", "score"]]
        one_qrels = all_qrels[all_qrels["task"] == task].drop(columns="task")
        _assert_identical(evaluate(one_run, one_qrels, ["ndcg@10", "ap@10"], "docid-asc", include_missing=True), part)
    assert sorted(actual.groupby(["system", "task"]).groups) == [("a", "t1"), ("a", "t2"), ("b", "t1")]


def test_paths_write_query_metrics_the_store_reads(spark, synthetic, tmp_path: Path):
    """Parquet globs in, store-ready query_metrics out (partitioned by system/task); input order = file
    order (files sorted by path, then row order inside each file)."""
    from evalcore.store import Condition, Store, classify_parquet

    run, qrels = synthetic
    run = run[["qid", "docid", "score"]].rename(columns={"qid": "query_id"})  # a column alias formats accepts
    (tmp_path / "run").mkdir()
    half = len(run) // 2
    pq.write_table(pa.Table.from_pandas(run.iloc[:half], preserve_index=False), tmp_path / "run" / "part-0.parquet",
                   row_group_size=20_000)
    pq.write_table(pa.Table.from_pandas(run.iloc[half:], preserve_index=False), tmp_path / "run" / "part-1.parquet",
                   row_group_size=20_000)
    pq.write_table(pa.Table.from_pandas(qrels, preserve_index=False), tmp_path / "qrels.parquet")
    out = tmp_path / "data" / "spark-run"
    labels = {"system": "sys/one", "benchmark": "bench", "task": "task-a", "setting": "full", "instruction": False,
              "precision": "bf16", "source": "spark-test"}
    summary = evaluate_spark_paths(str(tmp_path / "run" / "*.parquet"), str(tmp_path / "qrels.parquet"),
                                   ["ndcg@10", "mrr@10"], "input-order", per_query_out=str(out), partitions=3,
                                   labels=labels, spark=spark)

    reference = evaluate(run.rename(columns={"query_id": "qid"}), qrels, ["ndcg@10", "mrr@10"], "input-order")
    files = sorted(out.rglob("*.parquet"))
    assert files and all(classify_parquet(f) == ("query_metrics", "") for f in files)
    assert all("by_system=" in str(f) and "by_task=task-a" in str(f) for f in files)
    written = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    _assert_identical(reference, written)
    assert set(written["tie_policy"]) == {"input-order"} and set(written["system"]) == {"sys/one"}

    store = Store(tmp_path / "data")
    table = store.task_table(Condition("bench", "ndcg@10", "full", False, "bf16", "input-order"))
    ndcg = reference[reference["metric"] == "ndcg@10"]
    assert table["n_queries"].tolist() == [len(ndcg)]
    assert table["value"].iloc[0] == pytest.approx(ndcg["oblivious"].mean(), rel=1e-12)
    assert summary["metric"].tolist() == ["ndcg@10", "mrr@10"]
    assert summary["expected"].iloc[0] == pytest.approx(ndcg["expected"].mean(), rel=1e-12)


def test_input_errors_are_reported_as_input_errors(spark, tmp_path: Path):
    from evalcore.errors import InputError

    run = pd.DataFrame({"qid": ["q1", "q1"], "docid": ["d1", "d1"], "score": [1.0, 2.0]})
    run.to_parquet(tmp_path / "run.parquet")
    pd.DataFrame({"qid": ["q1"], "docid": ["d1"], "relevance": [1]}).to_parquet(tmp_path / "qrels.parquet")
    with pytest.raises(InputError, match="duplicate document"):
        evaluate_spark_paths(str(tmp_path / "run.parquet"), str(tmp_path / "qrels.parquet"), ["ndcg@10"],
                             partitions=1, spark=spark)
