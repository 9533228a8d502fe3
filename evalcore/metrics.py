"""Metric names and parsing: a tiny measure language in the spirit of ir_measures.

Canonical names are lower case: ``ndcg@10``, ``mrr@10``, ``recall@100``, ``p@1``, ``ap@100``.
Names are case-insensitive everywhere (``NDCG@10`` is ``ndcg@10``): :func:`canonical_metric` is the one
place a name becomes canonical, for the engine, the CLI and the store alike. Accepted aliases: ``nDCG@10``,
``ndcg_cut_10`` / ``ndcg_cut.10`` (trec_eval), ``ndcg_at_10`` / ``map_at_10`` / ``precision_at_1`` (MTEB),
``P@5`` / ``P_5``, ``map@100`` / ``map_cut_100`` (= ``ap@100``), ``rr@10`` / ``recip_rank`` (= ``mrr``),
``accuracy`` (= ``p@1``, the RAR-b multiple-choice setting). A name without ``@k`` means the whole
ranked list.

Definitions (docs/DESIGN.md; gains linear in the grade, ``relevant`` = grade >= 1):

- ``ndcg@k``  DCG@k / IDCG@k with DCG = sum_p gain_p / log2(p + 1); IDCG from the qrels (trec_eval).
- ``mrr@k``   reciprocal rank of the first relevant document if it is ranked <= k, else 0.
- ``recall@k``  relevant documents in the top k / relevant documents in the qrels.
- ``p@k``     relevant documents in the top k / k (trec_eval ``P_k``: always divides by k).
- ``ap@k``    trec_eval ``map_cut_k``: sum of precision at each relevant rank <= k, divided by the
  number of relevant documents in the qrels.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

METRIC_NAMES = ("ndcg", "mrr", "recall", "p", "ap")

_ALIASES = {
    "ndcg": "ndcg", "ndcg_cut": "ndcg",
    "mrr": "mrr", "rr": "mrr", "recip_rank": "mrr", "recip_rank_cut": "mrr",
    "recall": "recall", "r": "recall",
    "p": "p", "precision": "p",
    "ap": "ap", "map": "ap", "map_cut": "ap",
}

_PATTERN = re.compile(r"^\s*([a-z_]+?)(?:\s*(?:@|_at_|_|\.)\s*([0-9]+))?\s*$")
MAX_CUTOFF = 10**9  # far beyond any ranked list; keeps k an ordinary integer everywhere downstream


@dataclass(frozen=True, order=True)
class Metric:
    """A parsed metric: ``name`` in :data:`METRIC_NAMES`, cutoff ``k`` (None = whole list)."""

    name: str
    k: int | None

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}@{self.k}"


def parse_metric(text: str) -> Metric:
    """Parse one metric name (see module docstring for the accepted forms)."""
    if not isinstance(text, str):
        raise ValueError(f"metric must be a string, got {type(text).__name__}")
    lowered = text.strip().lower()
    if lowered == "accuracy":
        return Metric("p", 1)
    match = _PATTERN.match(lowered)
    if not match or match.group(1) not in _ALIASES:
        raise ValueError(
            f"unknown metric {text!r}: expected one of ndcg@k, mrr@k, recall@k, p@k, ap@k (e.g. ndcg@10)"
        )
    name = _ALIASES[match.group(1)]
    k = None if match.group(2) is None else int(match.group(2))
    if k is not None and not 1 <= k <= MAX_CUTOFF:
        raise ValueError(f"metric {text!r}: expected a cutoff k from 1 to {MAX_CUTOFF:,}")
    return Metric(name, k)


def canonical_metric(text: str) -> str:
    """The canonical name of a metric, whatever its spelling or case: ``canonical_metric("NDCG@10")`` and
    ``canonical_metric("ndcg_cut_10")`` are ``"ndcg@10"``. ValueError (a readable one-line message) for an
    unknown name."""
    return str(parse_metric(text))


def parse_metrics(metrics: str | Iterable[str | Metric]) -> list[Metric]:
    """Parse a comma-separated string or an iterable of names; duplicates are dropped, order kept."""
    items = metrics.split(",") if isinstance(metrics, str) else list(metrics)
    parsed: list[Metric] = []
    for item in items:
        metric = item if isinstance(item, Metric) else parse_metric(item)
        if metric not in parsed:
            parsed.append(metric)
    if not parsed:
        raise ValueError("no metric given: expected e.g. ndcg@10,mrr@10,recall@100")
    return parsed
