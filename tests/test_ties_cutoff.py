"""``tied_at_cutoff`` against brute-force enumeration: a query is tied at cutoff k exactly when some reordering
of its tied documents changes which documents make the top k. Every ordering of every tie group is listed
(document identities, not just labels), so this is the definition itself rather than a restatement of the
kernel's "the group at rank k runs past k" shortcut.
"""
from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import evalcore
from evalcore.metrics import parse_metric

# cutoffs below, at and above the list lengths drawn; one whole-list metric (no cutoff: never tied)
METRICS = ["p@1", "mrr@2", "ndcg@3", "recall@4", "ap@5", "ndcg@7", "p@9", "ndcg"]


def top_k_sets(docs: dict[str, float], k: int | None) -> set[frozenset[str]]:
    """Every set of documents that can form the top k under some ordering of the ties."""
    groups = [[d for d, s in docs.items() if s == score] for score in sorted(set(docs.values()), reverse=True)]
    cut = len(docs) if k is None else k
    found = set()
    for orderings in itertools.product(*(itertools.permutations(g) for g in groups)):
        ranked = [d for ordering in orderings for d in ordering]
        found.add(frozenset(ranked[:cut]))
    return found


def _orderings(docs: dict[str, float]) -> int:
    return math.prod(math.factorial(list(docs.values()).count(s)) for s in set(docs.values()))


@st.composite
def tied_runs(draw):
    run = {}
    for q in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, 9))
        levels = draw(st.integers(1, 4))
        run[f"q{q}"] = {f"d{i}": draw(st.integers(0, levels - 1)) / 4 for i in range(n)}
    return run


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(run=tied_runs(), policy=st.sampled_from(["docid-desc", "input-order", "random:3"]),
       # the largest cutoff asked for sets how much of each list the kernel keeps: vary it
       metrics=st.lists(st.sampled_from(METRICS), min_size=1, max_size=4, unique=True))
@example(run={"q0": {"d0": 1.0, "d1": 0.5, "d2": 0.5, "d3": 0.0}}, policy="docid-desc", metrics=METRICS)
@example(run={"q0": {f"d{i}": 0.5 for i in range(9)}}, policy="docid-desc", metrics=METRICS)  # one group
@example(run={"q0": {"d0": 0.75, "d1": 0.75, "d2": 0.5, "d3": 0.5, "d4": 0.5}}, policy="input-order",
         metrics=["mrr@2"])  # the only cutoff ends the kept top 2 inside a group
@example(run={"q0": {"d0": 0.75, "d1": 0.5, "d2": 0.5, "d3": 0.5, "d4": 0.5}}, policy="docid-desc",
         metrics=["ndcg@3", "p@1"])
def test_tied_at_cutoff_is_true_exactly_when_the_top_k_set_can_change(run, policy, metrics):
    assume(all(_orderings(docs) <= 3000 for docs in run.values()))
    qrels = {qid: {"d0": 1} for qid in run}
    result = evalcore.evaluate(run, qrels, metrics, tie_policy=policy)
    assert len(result) == len(run) * len(metrics)
    for row in result.itertuples():
        k = parse_metric(row.metric).k
        expected = len(top_k_sets(run[row.qid], k)) > 1
        assert bool(row.tied_at_cutoff) == expected, (row.qid, row.metric, run[row.qid])


@pytest.mark.parametrize("metric, expected", [("p@1", False), ("p@2", True), ("p@3", True), ("p@4", False),
                                              ("p@5", False), ("p", False)])
def test_tied_at_cutoff_worked_by_hand(metric, expected):
    # ranks: d0 alone at 1, {d1, d2, d3} share ranks 2-4
    run = {"q": {"d0": 0.9, "d1": 0.5, "d2": 0.5, "d3": 0.5}}
    result = evalcore.evaluate(run, {"q": {"d1": 1}}, [metric])
    assert bool(result["tied_at_cutoff"].iloc[0]) is expected


@pytest.mark.parametrize("policy, first", [("docid-desc", ["doc00019", "doc00018", "doc00017"]),
                                           ("docid-asc", ["doc00000", "doc00001", "doc00002"])])
def test_ids_that_differ_only_in_their_last_byte_keep_their_order_inside_a_group_cut_by_k(policy, first):
    """8-byte ids are ordered by one 64-bit key each: keys that differ in the lowest bits only must not collapse
    (a float64 key would: 2**-62 apart) when the group at rank k is cut."""
    docids = [f"doc{i:05d}" for i in range(20)]
    run = {"q": {d: 0.5 for d in docids} | {"top": 0.9}}
    relevant = {"doc00019", "doc00017", "doc00001"}
    result = evalcore.evaluate(run, {"q": {d: 1 for d in relevant}}, ["p@4"], tie_policy=policy)
    assert result["oblivious"].iloc[0] == len(relevant & set(first)) / 4
    assert bool(result["tied_at_cutoff"].iloc[0])
