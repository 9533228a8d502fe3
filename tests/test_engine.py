"""Differential tests of the engine against independent evaluators.

- pytrec_eval (trec_eval semantics): the ``docid-desc`` oblivious value must equal ``ndcg_cut_k``,
  ``recall_k``, ``P_k``, ``map_cut_k`` and ``recip_rank`` per query. pytrec_eval narrows scores to
  float32, so the random scores here are float32-representable (multiples of 1/8).
- scikit-learn ``ndcg_score(..., ignore_ties=False)`` averages gains inside tie groups: it must equal our
  *expected* nDCG when both see the same candidate list (all judged documents retrieved).
- the ``trm`` package (the paper's reference code): binary relevance, every relevant document retrieved,
  index-preserving tie-break (our ``input-order``) and at least k candidates.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evalcore
from needs import require_module


def random_run(seed: int, n_queries: int = 60, max_docs: int = 60, levels: int = 6, graded: bool = True,
               id_prefix: str = ""):
    """Runs with heavy ties (few distinct scores), graded qrels, unretrieved relevant documents,
    queries only in the run and only in the qrels."""
    rng = np.random.default_rng(seed)
    run, qrels = {}, {}
    for q in range(n_queries):
        n = int(rng.integers(1, max_docs))
        docids = [f"{id_prefix}d{int(x)}" for x in rng.choice(10_000, size=n, replace=False)]
        run[f"q{q}"] = {d: float(rng.integers(0, levels)) / 8 for d in docids}
        judged = {d: int(rng.choice([0, 1, 2] if graded else [0, 1], p=[0.6, 0.3, 0.1] if graded else [0.7, 0.3]))
                  for d in docids if rng.random() < 0.5}
        judged.update({f"missing{i}": int(rng.integers(1, 3 if graded else 2)) for i in range(int(rng.integers(0, 3)))})
        if q % 10 != 9:  # every tenth query is absent from the qrels
            qrels[f"q{q}"] = judged or {"missing0": 1}
    qrels["only-in-qrels"] = {"dx": 1}
    return run, qrels


# ids of 1 word, several 8-byte words, and past the word-key limit (arrow sorts those)
@pytest.mark.parametrize("seed,id_prefix", [(s, "") for s in range(6)] + [(6, "doc/0123456789-"), (7, "x" * 70)])
def test_docid_desc_oblivious_equals_pytrec_eval(seed, id_prefix):
    pytrec_eval = require_module("pytrec_eval")
    run, qrels = random_run(seed, id_prefix=id_prefix)
    measures = {"ndcg_cut.1,5,10,20", "recall.5,10,100", "P.1,5,10", "map_cut.5,10,100", "recip_rank"}
    reference = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    ours = evalcore.evaluate(run, qrels, ["ndcg@1", "ndcg@5", "ndcg@10", "ndcg@20", "recall@5", "recall@10",
                                          "recall@100", "p@1", "p@5", "p@10", "ap@5", "ap@10", "ap@100", "mrr"])
    names = {"ndcg": "ndcg_cut_{k}", "recall": "recall_{k}", "p": "P_{k}", "ap": "map_cut_{k}"}
    assert set(ours["qid"]) == set(reference)
    for row in ours.itertuples():
        name, _, k = row.metric.partition("@")
        trec_name = "recip_rank" if name == "mrr" else names[name].format(k=k)
        assert row.oblivious == pytest.approx(reference[row.qid][trec_name], abs=1e-12), (row.qid, row.metric)


def test_include_missing_adds_qrels_queries_as_zeros():
    run, qrels = random_run(1)
    plain = evalcore.evaluate(run, qrels, ["ndcg@10"])
    with_missing = evalcore.evaluate(run, qrels, ["ndcg@10"], include_missing=True)
    added = set(with_missing["qid"]) - set(plain["qid"])
    assert added == set(qrels) - set(run)
    assert (with_missing[with_missing["qid"].isin(added)][["oblivious", "expected", "min", "max"]] == 0).all().all()


@pytest.mark.parametrize("seed", range(4))
def test_expected_ndcg_equals_sklearn_with_ties(seed):
    ndcg_score = require_module("sklearn.metrics").ndcg_score

    rng = np.random.default_rng(seed)
    for _ in range(30):
        n = int(rng.integers(2, 40))
        scores = rng.integers(0, 5, size=n) / 4
        grades = rng.choice([0, 0, 1, 2, 3], size=n)
        if grades.sum() == 0:
            grades[0] = 1
        k = int(rng.integers(1, 15))
        run = {"q": {f"d{i}": float(s) for i, s in enumerate(scores)}}
        qrels = {"q": {f"d{i}": int(g) for i, g in enumerate(grades)}}
        ours = evalcore.evaluate(run, qrels, [f"ndcg@{k}"])["expected"].iloc[0]
        reference = ndcg_score([grades], [scores], k=k, ignore_ties=False)
        assert ours == pytest.approx(reference, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_agrees_with_trm_where_conventions_match(seed):
    trm = require_module("trm")

    rng = np.random.default_rng(seed)
    k_list = [1, 3, 5, 10]
    scores_list, relevant_list = [], []
    for _ in range(40):
        n = int(rng.integers(10, 30))  # at least max(k) candidates
        scores_list.append(list(rng.integers(0, 4, size=n) / 4))
        relevant = rng.random(n) < 0.2
        relevant[int(rng.integers(0, n))] = True
        relevant_list.append(list(relevant))
    reference = trm.evaluate(scores_list, relevant_list, metrics=["ndcg", "mrr", "map", "recall", "precision"],
                             k_list=k_list)
    run = {f"q{i}": {f"d{j:03d}": s for j, s in enumerate(scores)} for i, scores in enumerate(scores_list)}
    qrels = {f"q{i}": {f"d{j:03d}": int(r) for j, r in enumerate(rel)} for i, rel in enumerate(relevant_list)}
    names = {"ndcg": "ndcg", "mrr": "mrr", "map": "ap", "recall": "recall", "precision": "p"}
    ours = evalcore.evaluate(run, qrels, [f"{names[m]}@{k}" for m in names for k in k_list],
                             tie_policy="input-order").set_index(["qid", "metric"])
    for trm_name, our_name in names.items():
        for k in k_list:
            for i, result in enumerate(reference.per_query[trm_name][k]):
                row = ours.loc[(f"q{i}", f"{our_name}@{k}")]
                got = (row["expected"], row["min"], row["max"], row["oblivious"])
                want = (result.expected, result.minimum, result.maximum, result.oblivious)
                assert got == pytest.approx(want, abs=1e-12), (trm_name, k, i)


def test_every_input_form_gives_the_same_result(tmp_path):
    run, qrels = random_run(7)
    frame = pd.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs.items()],
                         columns=["qid", "docid", "score"])
    qrels_frame = pd.DataFrame([(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
                               columns=["qid", "docid", "relevance"])
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "run.parquet")
    pq.write_table(pa.Table.from_pandas(qrels_frame, preserve_index=False), tmp_path / "qrels.parquet")
    with open(tmp_path / "run.trec", "w") as f:
        for i, row in enumerate(frame.itertuples()):
            f.write(f"{row.qid} Q0 {row.docid} {i} {row.score!r} sys\n")
    with open(tmp_path / "qrels.txt", "w") as f:
        for row in qrels_frame.itertuples():
            f.write(f"{row.qid} 0 {row.docid} {row.relevance}\n")
    metrics = ["ndcg@10", "mrr@10", "recall@20", "ap@10"]
    results = [
        evalcore.evaluate(run, qrels, metrics, tie_policy="input-order"),
        evalcore.evaluate(frame, qrels_frame, metrics, tie_policy="input-order"),
        evalcore.evaluate(str(tmp_path / "run.parquet"), tmp_path / "qrels.parquet", metrics, tie_policy="input-order"),
        evalcore.evaluate(tmp_path / "run.trec", tmp_path / "qrels.txt", metrics, tie_policy="input-order"),
        evalcore.evaluate(frame, qrels_frame, metrics, tie_policy="input-order", chunk_rows=13),
        # rows shuffled across queries: grouping must keep the input order inside each query
        evalcore.evaluate(frame.sample(frac=1.0, random_state=0).sort_values("qid", kind="stable")
                          .sample(frac=1.0, random_state=1).pipe(lambda f: f.loc[sorted(f.index)]),
                          qrels_frame, metrics, tie_policy="input-order"),
    ]
    canonical = [r.sort_values(["metric", "qid"]).reset_index(drop=True) for r in results]
    for other in canonical[1:]:
        pd.testing.assert_frame_equal(canonical[0], other)


@pytest.mark.parametrize("policy", ["docid-desc", "docid-asc", "input-order", "random:3"])
def test_streamed_parquet_in_small_row_groups_equals_in_memory(tmp_path, policy):
    """Streamed chunks (dictionary qids unified across row groups, queries crossing row groups and
    chunks) give exactly the in-memory result under every tie policy."""
    run, qrels = random_run(8, n_queries=80)
    frame = pd.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs.items()],
                         columns=["qid", "docid", "score"])
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "run.parquet", row_group_size=37)
    metrics = ["ndcg@10", "mrr@10", "recall@20", "ap@10", "p@5"]
    streamed = evalcore.evaluate(tmp_path / "run.parquet", qrels, metrics, tie_policy=policy, chunk_rows=50)
    in_memory = evalcore.evaluate(frame, qrels, metrics, tie_policy=policy)
    pd.testing.assert_frame_equal(streamed.sort_values(["metric", "qid"]).reset_index(drop=True),
                                  in_memory.sort_values(["metric", "qid"]).reset_index(drop=True))


def test_interleaved_queries_keep_input_order_within_each_query():
    frame = pd.DataFrame({"qid": ["a", "b", "a", "b"], "docid": ["x", "x", "y", "y"], "score": [1.0, 1.0, 1.0, 1.0]})
    qrels = {"a": {"y": 1}, "b": {"x": 1}}
    result = evalcore.evaluate(frame, qrels, ["mrr@1"], tie_policy="input-order").set_index("qid")
    assert result.loc["a", "oblivious"] == 0.0  # x came first for query a
    assert result.loc["b", "oblivious"] == 1.0


def test_summary_range_and_bias():
    run, qrels = random_run(3)
    per_query = evalcore.evaluate(run, qrels, ["ndcg@10", "p@1"])
    summary = evalcore.summarize(per_query).set_index("metric")
    for metric, rows in per_query.groupby("metric"):
        assert summary.loc[metric, "range"] == pytest.approx(rows["max"].mean() - rows["min"].mean())
        assert summary.loc[metric, "bias"] == pytest.approx(rows["oblivious"].mean() - rows["expected"].mean())
        assert summary.loc[metric, "tied_share"] == pytest.approx(rows["tied_at_cutoff"].mean())
        assert summary.loc[metric, "n_queries"] == len(rows)


@pytest.mark.parametrize("bad, message", [
    ({"q": {"a": float("nan")}}, "finite"),
    ({"q": {"a": float("inf")}}, "finite"),
])
def test_in_memory_bad_scores_raise_input_error(bad, message):
    with pytest.raises(evalcore.InputError, match=message):
        evalcore.evaluate(bad, {"q": {"a": 1}})


def test_in_memory_duplicates_and_negative_grades_raise_input_error():
    frame = pd.DataFrame({"qid": ["q", "q"], "docid": ["a", "a"], "score": [1.0, 2.0]})
    with pytest.raises(evalcore.InputError, match="duplicate"):
        evalcore.evaluate(frame, {"q": {"a": 1}})
    with pytest.raises(evalcore.InputError, match="grade"):
        evalcore.evaluate({"q": {"a": 1.0}}, {"q": {"a": -1}})


def test_unknown_metric_and_policy_are_rejected():
    with pytest.raises(ValueError, match="unknown metric"):
        evalcore.evaluate({"q": {"a": 1.0}}, {"q": {"a": 1}}, ["bleu@4"])
    with pytest.raises(ValueError, match="tie policy"):
        evalcore.evaluate({"q": {"a": 1.0}}, {"q": {"a": 1}}, ["ndcg@4"], tie_policy="alphabetical")


def test_arrow_summary_equals_pandas_summary():
    from evalcore.engine import evaluate_table, summary_rows

    run, qrels = random_run(4)
    table = evaluate_table(run, qrels, ["ndcg@10", "mrr@5", "p@1"])
    rows = pd.DataFrame(summary_rows(table))
    reference = evalcore.summarize(table.to_pandas())
    pd.testing.assert_frame_equal(rows, reference, check_dtype=False)


def test_read_ahead_keeps_order_reraises_and_stops_when_closed():
    import threading

    from evalcore.engine import _read_ahead

    def source(fail_at=None):
        for i in range(50):
            if i == fail_at:
                raise ValueError(f"bad chunk {i}")
            yield i

    assert list(_read_ahead(source())) == list(range(50))
    seen = []
    with pytest.raises(ValueError, match="bad chunk 7"):
        for item in _read_ahead(source(fail_at=7)):
            seen.append(item)
    assert seen == list(range(7))  # every chunk before the failure, in order

    pulled = []

    def counting():
        for i in range(10_000):
            pulled.append(i)
            yield i

    reader = _read_ahead(counting(), depth=1)
    assert next(reader) == 0
    reader.close()
    assert not any(t.name == "evalcore-read-ahead" for t in threading.enumerate())
    assert len(pulled) <= 4  # the reader stopped instead of draining the source
