"""Tests for evalcore.metrics: metric names are case-insensitive, every alias has one canonical name, and a
bad name or cutoff is a readable ValueError (never an OverflowError or int()'s message)."""
from __future__ import annotations

import pytest

from evalcore.metrics import Metric, canonical_metric, parse_metric, parse_metrics


@pytest.mark.parametrize("spelling, canonical", [
    ("ndcg@10", "ndcg@10"), ("NDCG@10", "ndcg@10"), ("nDCG@10", "ndcg@10"), (" Ndcg @ 10 ", "ndcg@10"),
    ("ndcg_cut_10", "ndcg@10"), ("NDCG_CUT.10", "ndcg@10"), ("ndcg_at_10", "ndcg@10"),  # trec_eval, MTEB
    ("MRR@10", "mrr@10"), ("recip_rank", "mrr"), ("RR@10", "mrr@10"),
    ("Recall@100", "recall@100"), ("recall_at_100", "recall@100"),
    ("P@1", "p@1"), ("P_5", "p@5"), ("precision_at_1", "p@1"), ("Accuracy", "p@1"),
    ("MAP@100", "ap@100"), ("map_cut_100", "ap@100"), ("map_at_10", "ap@10"), ("AP", "ap"),
])
def test_every_spelling_and_case_has_one_canonical_name(spelling, canonical):
    assert canonical_metric(spelling) == canonical
    assert str(parse_metric(spelling)) == canonical


def test_parse_metrics_drops_case_variants_as_duplicates():
    assert parse_metrics("ndcg@10,NDCG@10,ndcg_at_10,mrr@10") == [Metric("ndcg", 10), Metric("mrr", 10)]


@pytest.mark.parametrize("text, says", [
    ("bogus", "unknown metric 'bogus'"),
    ("ndcg@0", "cutoff k from 1"),
    ("ndcg@99999999999999999999", "cutoff k from 1"),  # was accepted as a 20-digit int
    ("ndcg@²", "unknown metric"),  # str.isdigit() / \d accept '²'; int() then fails with its own message
    ("ndcg@١٠", "unknown metric"),  # Arabic-Indic digits: not a cutoff here
])
def test_bad_names_and_cutoffs_are_one_readable_line(text, says):
    with pytest.raises(ValueError) as error:
        canonical_metric(text)
    message = str(error.value)
    assert says in message and "\n" not in message and "invalid literal" not in message
