"""Every metric name a user can type, checked against an expectation written here, not derived from
``evalcore.metrics``: the table below is transcribed from the trec_eval / ir_measures / MTEB spellings, and
for the trec_eval names the value the engine computes under that name must equal pytrec_eval's value of the
same trec_eval measure (a name mapped to the wrong metric cannot pass both).
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import evalcore
from evalcore import metrics
from evalcore.metrics import parse_metric
from needs import require_module

# spelling -> (metric, cutoff); every alias family in upper, lower and mixed case
EXPECTED = {
    # nDCG
    "ndcg": ("ndcg", None), "NDCG": ("ndcg", None), "ndcg@10": ("ndcg", 10), "nDCG@10": ("ndcg", 10),
    "NDCG@3": ("ndcg", 3), "ndcg_cut_10": ("ndcg", 10), "ndcg_cut.10": ("ndcg", 10), "NDCG_CUT_5": ("ndcg", 5),
    "ndcg_at_10": ("ndcg", 10), "ndcg_cut": ("ndcg", None), " ndcg @ 20 ": ("ndcg", 20),
    # reciprocal rank
    "mrr": ("mrr", None), "MRR@10": ("mrr", 10), "mrr_at_10": ("mrr", 10), "rr@10": ("mrr", 10),
    "RR@5": ("mrr", 5), "recip_rank": ("mrr", None), "RECIP_RANK": ("mrr", None),
    "recip_rank_cut_10": ("mrr", 10), "recip_rank_cut.3": ("mrr", 3),
    # recall
    "recall@100": ("recall", 100), "Recall@10": ("recall", 10), "recall_100": ("recall", 100),
    "recall.5": ("recall", 5), "recall_at_100": ("recall", 100), "R@100": ("recall", 100),
    "r@10": ("recall", 10), "recall": ("recall", None),
    # precision
    "p@5": ("p", 5), "P@5": ("p", 5), "P_5": ("p", 5), "P.5": ("p", 5), "P.1": ("p", 1),
    "precision@10": ("p", 10), "Precision@10": ("p", 10), "precision_at_1": ("p", 1), "p": ("p", None),
    # average precision
    "ap@10": ("ap", 10), "AP@100": ("ap", 100), "map@100": ("ap", 100), "MAP@10": ("ap", 10),
    "map_cut_10": ("ap", 10), "map_cut.10": ("ap", 10), "MAP_CUT_100": ("ap", 100), "map_at_10": ("ap", 10),
    "map": ("ap", None), "map_cut": ("ap", None), "ap": ("ap", None),
    # RAR-b's multiple-choice accuracy = the correct candidate ranked first
    "accuracy": ("p", 1), "Accuracy": ("p", 1), "ACCURACY": ("p", 1),
}


@pytest.mark.parametrize("spelling", sorted(EXPECTED))
def test_each_spelling_parses_to_the_metric_written_out_here(spelling):
    name, k = EXPECTED[spelling]
    parsed = parse_metric(spelling)
    assert (parsed.name, parsed.k) == (name, k)
    assert str(parsed) == (name if k is None else f"{name}@{k}")


def test_every_alias_the_parser_knows_has_an_expectation_here():
    """A new alias must come with its expected meaning in the table above (the stems are read from the parser
    only to find untested ones; what each means is never taken from it)."""
    tested = {re.match(r"\s*([a-z_]+?)(?:\s*(?:@|_at_|_|\.)\s*\d+)?\s*$", s.lower()).group(1) for s in EXPECTED}
    assert set(metrics._ALIASES) <= tested, sorted(set(metrics._ALIASES) - tested)


@pytest.mark.parametrize("spelling", ["ndcg@0", "ndcg@-1", "ndgc@10", "map_cutt_10", "mrr@", "@10", "", "p@1.5",
                                      "accuracy@1", "precision at 10", "ndcg@10,mrr@10"])
def test_malformed_names_are_refused(spelling):
    with pytest.raises(ValueError):
        parse_metric(spelling)


# trec_eval measure (as pytrec_eval names it in its output) -> a spelling a user would type for it
TREC_EVAL_NAMES = {
    "ndcg_cut_10": ["ndcg_cut_10", "ndcg_cut.10", "NDCG@10", "ndcg_at_10"],
    "ndcg_cut_3": ["ndcg_cut.3", "nDCG@3"],
    "ndcg": ["ndcg", "NDCG"],
    "map_cut_10": ["map_cut_10", "map_cut.10", "MAP@10", "map_at_10", "ap@10"],
    "map_cut_5": ["map_cut.5", "AP@5"],
    "map": ["map", "ap"],
    "P_5": ["P.5", "P_5", "p@5", "precision@5"],
    "P_1": ["P.1", "accuracy", "ACCURACY", "precision_at_1"],
    "recall_10": ["recall.10", "recall_10", "R@10", "recall_at_10"],
    "recip_rank": ["recip_rank", "RECIP_RANK", "mrr"],
}


def _tied_run(seed: int = 11, n_queries: int = 40):
    """Graded qrels, heavy ties (scores are multiples of 1/8, exact in pytrec_eval's float32), relevant
    documents left unretrieved: the metrics disagree with each other on almost every query."""
    rng = np.random.default_rng(seed)
    run, qrels = {}, {}
    for q in range(n_queries):
        n = int(rng.integers(2, 40))
        docids = [f"d{x}" for x in rng.choice(500, size=n, replace=False)]
        run[f"q{q}"] = {d: float(rng.integers(0, 6)) / 8 for d in docids}
        judged = {d: int(rng.choice([0, 1, 2], p=[0.5, 0.35, 0.15])) for d in docids if rng.random() < 0.6}
        judged[f"unretrieved{q}"] = 1
        qrels[f"q{q}"] = judged
    return run, qrels


@pytest.fixture(scope="module")
def reference():
    pytrec_eval = require_module("pytrec_eval")
    run, qrels = _tied_run()
    measures = {"ndcg_cut.3,10", "ndcg", "map_cut.5,10", "map", "P.1,5", "recall.10", "recip_rank"}
    return run, qrels, pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


@pytest.mark.parametrize("measure, spelling",
                         [(measure, s) for measure, spellings in TREC_EVAL_NAMES.items() for s in spellings])
def test_a_trec_eval_name_computes_what_pytrec_eval_computes_under_it(reference, measure, spelling):
    run, qrels, by_query = reference
    ours = evalcore.evaluate(run, qrels, [spelling], tie_policy="docid-desc").set_index("qid")["oblivious"]
    assert set(ours.index) == set(by_query)
    expected = np.array([by_query[q][measure] for q in ours.index])
    np.testing.assert_allclose(ours.to_numpy(), expected, rtol=0, atol=1e-12, err_msg=f"{spelling} vs {measure}")


def test_the_reference_values_tell_the_metrics_apart(reference):
    """The value check above only catches a wrong mapping if the measures differ on this data."""
    _, _, by_query = reference
    columns = {m: np.array([v[m] for v in by_query.values()]) for m in TREC_EVAL_NAMES}
    names = sorted(columns)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not np.allclose(columns[a], columns[b]), (a, b)


def test_parse_metrics_keeps_parsed_metrics_and_the_largest_cutoff_is_accepted():
    from evalcore.metrics import MAX_CUTOFF, Metric, parse_metrics

    assert parse_metrics([Metric("ap", 5), "AP@5", "ndcg_cut.10"]) == [Metric("ap", 5), Metric("ndcg", 10)]
    assert parse_metric(f"recall@{MAX_CUTOFF}") == Metric("recall", MAX_CUTOFF)
    with pytest.raises(ValueError, match="cutoff k from 1"):
        parse_metric(f"recall@{MAX_CUTOFF + 1}")


def test_messages_say_what_was_expected():
    from evalcore.metrics import parse_metrics

    with pytest.raises(ValueError, match=r"^metric must be a string, got int$"):
        parse_metric(10)
    with pytest.raises(ValueError, match=r"^no metric given: expected e\.g\. ndcg@10,mrr@10,recall@100$"):
        parse_metrics([])
