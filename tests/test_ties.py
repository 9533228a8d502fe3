"""Tie kernels against brute-force enumeration of every ordering of tied documents.

The reference enumerates all distinct arrangements of the gain labels inside every tie group (a
uniformly random permutation of documents induces a uniform distribution over those arrangements), scores
each complete ranking with a plain-Python metric implementation, and takes mean / min / max. The oblivious
value is checked against an explicit sort under each tie policy.
"""
from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import evalcore
from evalcore.metrics import parse_metric

METRICS = ["ndcg@1", "ndcg@3", "ndcg@10", "mrr@1", "mrr@3", "mrr@10", "recall@2", "recall@10",
           "p@1", "p@5", "ap@3", "ap@10", "ndcg", "ap"]


def reference_value(metric: str, ranked_gains: list[float], judged_grades: list[int]) -> float:
    """One metric of one concrete ranking, written the plain way (trec_eval definitions)."""
    m = parse_metric(metric)
    k = len(ranked_gains) if m.k is None else m.k
    top = ranked_gains[:k]
    n_rel = sum(1 for g in judged_grades if g >= 1)
    if m.name == "ndcg":
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(top))
        ideal = sorted(judged_grades, reverse=True)
        ideal = ideal if m.k is None else ideal[:k]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        return dcg / idcg if idcg > 0 else 0.0
    if m.name == "mrr":
        for i, g in enumerate(top):
            if g >= 1:
                return 1.0 / (i + 1)
        return 0.0
    hits = sum(1 for g in top if g >= 1)
    if m.name == "recall":
        return hits / n_rel if n_rel else 0.0
    if m.name == "p":
        return hits / k
    if m.name == "ap":
        total, seen = 0.0, 0
        for i, g in enumerate(top):
            if g >= 1:
                seen += 1
                total += seen / (i + 1)
        return total / n_rel if n_rel else 0.0
    raise AssertionError(metric)


def multiset_arrangements(labels: list[float]):
    """Every distinct ordering of a multiset (each equally likely under a random permutation)."""
    counts = Counter(labels)

    def rec(remaining: int):
        if remaining == 0:
            yield []
            return
        for label in sorted(counts):
            if counts[label]:
                counts[label] -= 1
                for rest in rec(remaining - 1):
                    yield [label, *rest]
                counts[label] += 1

    yield from rec(len(labels))


def brute_force(docs: list[tuple[str, float, float]], judged: list[int], metric: str, policy: str):
    """(oblivious, expected, min, max) for one query; docs = (docid, score, gain) in input order."""
    scores = sorted({s for _, s, _ in docs}, reverse=True)
    groups = [[g for _, s, g in docs if s == score] for score in scores]
    values = []
    for arrangement in itertools.product(*(list(multiset_arrangements(g)) for g in groups)):
        ranked = [g for group in arrangement for g in group]
        values.append(reference_value(metric, ranked, judged))
    position = {d: i for i, (d, _, _) in enumerate(docs)}
    if policy == "docid-desc":
        ordered = sorted(docs, key=lambda d: d[0].encode(), reverse=True)
    elif policy == "docid-asc":
        ordered = sorted(docs, key=lambda d: d[0].encode())
    else:
        ordered = sorted(docs, key=lambda d: position[d[0]])
    ordered = sorted(ordered, key=lambda d: -d[1])  # stable: ties keep the policy order
    oblivious = reference_value(metric, [g for _, _, g in ordered], judged)
    return oblivious, float(np.mean(values)), min(values), max(values)


@st.composite
def queries(draw, max_docs: int = 12):
    """A few queries with heavy ties, graded labels and relevant documents left unretrieved."""
    result = []
    for q in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, max_docs))
        n_levels = draw(st.integers(1, 4))
        docids = draw(st.lists(st.text("abcxyz019", min_size=1, max_size=3), min_size=n, max_size=n, unique=True))
        docs = []
        for d in docids:
            score = float(draw(st.integers(0, n_levels - 1))) / 2
            grade = draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3]))
            docs.append((d, score, grade))
        unretrieved = draw(st.lists(st.integers(0, 3), max_size=3))
        result.append((f"q{q}", docs, unretrieved))
    return result


def _as_inputs(data):
    run = {qid: {d: s for d, s, _ in docs} for qid, docs, _ in data}
    qrels = {}
    for qid, docs, unretrieved in data:
        judged = {d: g for d, _, g in docs if g > 0 or d.startswith("a")}
        for i, grade in enumerate(unretrieved):
            judged[f"unretrieved-{i}"] = grade
        qrels[qid] = judged if judged else {"unretrieved-0": 0}
    return run, qrels


def _n_arrangements(docs) -> int:
    """Distinct label arrangements the brute force enumerates (product of multinomials)."""
    total = 1
    for score in {s for _, s, _ in docs}:
        labels = Counter(g for _, s, g in docs if s == score)
        total *= math.factorial(sum(labels.values())) // math.prod(math.factorial(c) for c in labels.values())
    return total


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=queries(), policy=st.sampled_from(["docid-desc", "docid-asc", "input-order"]))
def test_all_values_match_brute_force(data, policy):
    assume(all(_n_arrangements(docs) <= 2000 for _, docs, _ in data))
    run, qrels = _as_inputs(data)
    result = evalcore.evaluate(run, qrels, METRICS, tie_policy=policy)
    result = result.set_index(["qid", "metric"])
    for qid, docs, _ in data:
        judged_grades = list(qrels[qid].values())
        gains = [(d, s, float(qrels[qid].get(d, 0))) for d, s, _ in docs]
        for metric in METRICS:
            expected = brute_force(gains, judged_grades, metric, policy)
            row = result.loc[(qid, metric)]
            got = (row["oblivious"], row["expected"], row["min"], row["max"])
            assert got == pytest.approx(expected, abs=1e-12), (qid, metric, policy, docs)


@settings(max_examples=60, deadline=None)
@given(data=queries(max_docs=30))
def test_min_expected_max_are_ordered_and_bracket_the_oblivious(data):
    run, qrels = _as_inputs(data)
    result = evalcore.evaluate(run, qrels, METRICS, tie_policy="random:7")
    assert (result["min"] <= result["expected"]).all()  # exact: expected is clipped into [min, max]
    assert (result["expected"] <= result["max"]).all()
    assert (result["min"] <= result["oblivious"] + 1e-12).all()
    assert (result["oblivious"] <= result["max"] + 1e-12).all()


def test_tied_at_cutoff_means_rank_k_and_k_plus_1_share_a_score():
    rng = np.random.default_rng(3)
    run, qrels = {}, {}
    for q in range(200):
        n = int(rng.integers(1, 30))
        scores = rng.integers(0, 6, size=n) / 4
        run[f"q{q}"] = {f"d{i}": float(s) for i, s in enumerate(scores)}
        qrels[f"q{q}"] = {"d0": 1}
    result = evalcore.evaluate(run, qrels, ["ndcg@5", "p@1", "recall@20"])
    for row in result.itertuples():
        k = parse_metric(row.metric).k
        ranked = sorted(run[row.qid].values(), reverse=True)
        assert row.tied_at_cutoff == (len(ranked) > k and ranked[k - 1] == ranked[k])
        assert row.n_candidates == len(ranked)


def test_large_tie_groups_use_the_partition_path_exactly():
    """Big straddling groups (BM25's zeros, binary codes): exact against the multiset enumeration."""
    docs = [(f"d{i:02d}", 1.0 if i < 3 else 0.0, 0.0) for i in range(20)]
    docs[5] = ("d05", 0.0, 1.0)
    docs[11] = ("d11", 0.0, 2.0)
    docs[1] = ("d01", 1.0, 1.0)
    run = {"q": {d: s for d, s, _ in docs}}
    qrels = {"q": {"d05": 1, "d11": 2, "d01": 1}}
    result = evalcore.evaluate(run, qrels, ["ndcg@5", "mrr@10", "ap@4", "recall@3"]).set_index("metric")
    for metric in ["ndcg@5", "mrr@10", "ap@4", "recall@3"]:
        expected = brute_force(docs, [1, 2, 1], metric, "docid-desc")
        row = result.loc[metric]
        assert (row["oblivious"], row["expected"], row["min"], row["max"]) == pytest.approx(expected, abs=1e-12)


def test_random_policy_is_seeded_per_query_and_document():
    rng = np.random.default_rng(0)
    run = {f"q{q}": {f"d{i}": float(rng.integers(0, 3)) for i in range(40)} for q in range(50)}
    qrels = {q: {"d1": 1, "d7": 1} for q in run}
    a = evalcore.evaluate(run, qrels, ["ndcg@10"], tie_policy="random:5")
    b = evalcore.evaluate(run, qrels, ["ndcg@10"], tie_policy="random:5", chunk_rows=100)
    c = evalcore.evaluate(run, qrels, ["ndcg@10"], tie_policy="random:6")
    only_q3 = evalcore.evaluate({"q3": run["q3"]}, {"q3": qrels["q3"]}, ["ndcg@10"], tie_policy="random:5")
    pd_a = a.sort_values("qid").reset_index(drop=True)
    pd_b = b.sort_values("qid").reset_index(drop=True)
    assert pd_a.equals(pd_b)
    assert not np.array_equal(pd_a["oblivious"], c.sort_values("qid")["oblivious"])
    assert only_q3["oblivious"].iloc[0] == a.set_index("qid").loc["q3", "oblivious"]


@settings(max_examples=40, deadline=None)
@given(data=queries(max_docs=30), policy=st.sampled_from(["docid-desc", "input-order"]))
def test_each_metric_alone_equals_all_together(data, policy):
    """The kernels only build the running sums the requested metrics need: asking for one metric at a
    time must give exactly the values of asking for all of them."""
    run, qrels = _as_inputs(data)
    together = evalcore.evaluate(run, qrels, METRICS, tie_policy=policy).set_index(["qid", "metric"])
    for metric in METRICS:
        alone = evalcore.evaluate(run, qrels, [metric], tie_policy=policy).set_index(["qid", "metric"])
        assert alone.equals(together.loc[alone.index])
