"""The queries lens — "on this benchmark's tasks, is A better than B?"

The tasks are fixed; what is uncertain is each task score, a mean over a finite sample of n_t queries. The
population value of system i on task t is μ_it, its mean over all queries like the task's; the board's
aggregate of the μ_it (G or the mean over these T tasks) is what the lens speaks of.

**Rows with per-query values** use them: Var(x_it) = s²_it / n_it (the sample variance of the per-query values
over the row's n_it queries) and, for two such rows, Cov(x_it, x_jt) = s_ijt / n_t over the queries both have
(paired: the same queries) — the variance the per-query bootstrap estimates, taken in its normal limit, so no
Monte Carlo error enters the intervals.

**Published rows** (task scores only) are bounded: a per-query metric in [0, 1] with mean μ has variance at most
μ(1 − μ) (Bhatia–Davis; attained by a 0/1 metric), so::

    Var(x_it) ≤ μ̃(1 − μ̃) / n_t,      μ̃ = (n_t x_it + 2) / (n_t + 4)

with μ̃ the Agresti–Coull adjusted mean (two successes and two failures added), which keeps the bound away from
0 at x = 0 or 1 — the plug-in x(1 − x) would claim no uncertainty there. Their covariance with any other row is
taken as 0: **assumption** — two systems' per-query scores on a task are not negatively correlated (they face
the same queries, easy or hard for both), so Var(x_it − x_jt) ≤ Var(x_it) + Var(x_jt).

**Aggregate** (delta method for G)::

    mean:  θ̂_i = (1/T) Σ_t x_it          Σ_ij = (1/T²) Σ_t Cov(x_it, x_jt)
    G:     θ̂_i = (1/T) Σ_t log x_it      Σ_ij = (1/T²) Σ_t Cov(x_it, x_jt) / (x_it x_jt)

and the reference distribution is normal (hundreds to thousands of queries per task).

**Ties.** Where a row knows its tie range per task ([min, max] over tie orders), θ̂⁻ / θ̂⁺ are the aggregate of
the minima / maxima: tests use the least favourable tie order and intervals cover the tie range
(:mod:`evalcore.uncertainty.estimates`).

**Where it fails.** (1) The bound needs the metric in [0, 1] (every metric here is). (2) Negatively correlated
systems (one good exactly where the other is bad) would make published pairs' intervals too narrow; measured on
every pair of shipped per-query runs (docs/DESIGN.md § Uncertainty). (3) G with a task near 0: the delta method
is a poor approximation when x_it is within a few standard errors of 0 (its interval then spans orders of
magnitude, which is honest but approximate); a zero task under G leaves the row out of the model, tied at the
bottom — unless its tie range reaches above 0 (a score of 0 only because ties were broken against it): such a
row stays in, with θ̂ = −∞ (G = 0) and θ̂⁺ its G with every tie broken for it, so it can never be surely above
another row, and another is surely above it only if it stays so with the row's ties broken in its favour. (4) A task's query count must be known (data/query_counts.json); without it the lens says so.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalcore.uncertainty.estimates import Estimates, pair_standard_errors


@dataclass(frozen=True)
class PerQuery:
    """Per-query values of some rows: ``rows`` (row positions of the board), ``values`` (len(rows) × Q, NaN
    where a row lacks a query) and ``task`` (Q,: the board's task index of each column)."""

    rows: np.ndarray
    values: np.ndarray
    task: np.ndarray


def bhatia_davis_variance(scores: np.ndarray, n_queries: np.ndarray) -> np.ndarray:
    """The bound μ̃(1 − μ̃)/n of each task score's variance (module docstring); ``n_queries`` per task (column)."""
    scores = np.asarray(scores, dtype=np.float64)
    n = np.asarray(n_queries, dtype=np.float64)
    adjusted = (n * scores + 2.0) / (n + 4.0)
    return adjusted * (1.0 - adjusted) / n


def task_covariances(scores: np.ndarray, n_queries: np.ndarray, per_query: PerQuery | None) -> np.ndarray:
    """(T × S × S) covariance of the task scores: the bound on the diagonal of published rows, zero between a
    published row and any other, the per-query sample (co)variances among rows with per-query values."""
    n_systems, n_tasks = scores.shape
    cov = np.zeros((n_tasks, n_systems, n_systems))
    bound = bhatia_davis_variance(scores, n_queries[None, :])
    index = np.arange(n_systems)
    cov[:, index, index] = bound.T
    if per_query is None or len(per_query.rows) == 0:
        return cov
    rows = np.asarray(per_query.rows, dtype=np.int64)
    for t in range(n_tasks):
        block = per_query.values[:, per_query.task == t]  # (R, Q_t)
        present = ~np.isnan(block)
        counts = present.sum(axis=1).astype(np.float64)
        filled = np.where(present, block, 0.0)
        means = filled.sum(axis=1) / np.maximum(counts, 1.0)
        centred = np.where(present, block - means[:, None], 0.0)
        shared = present.astype(np.float64) @ present.T.astype(np.float64)  # queries both rows have
        products = centred @ centred.T
        with np.errstate(divide="ignore", invalid="ignore"):
            sample = products / np.maximum(shared - 1.0, 1.0)        # s_ij over the shared queries
            of_means = sample * shared / np.outer(counts, counts)     # Cov(x̄_i, x̄_j)
        of_means[shared < 2] = 0.0
        cov[t][np.ix_(rows, rows)] = of_means
    return cov


def estimates(scores: np.ndarray, n_queries: np.ndarray, aggregate: str, per_query: PerQuery | None = None,
              ties: tuple[np.ndarray, np.ndarray] | None = None) -> Estimates:
    """The queries lens' :class:`Estimates` of ``scores`` (systems × tasks, in [0, 1]) ranked by ``aggregate``
    ("G" or "mean"): ``n_queries`` per task (published rows' bound), ``per_query`` for the rows that have
    per-query values, ``ties`` = (min, max) task scores over tie orders (NaN where unknown)."""
    scores = np.asarray(scores, dtype=np.float64)
    n_queries = np.asarray(n_queries, dtype=np.float64)
    if scores.ndim != 2 or n_queries.shape != (scores.shape[1],):
        raise ValueError("scores must be systems × tasks with one query count per task")
    if not np.isfinite(scores).all() or (scores < 0).any() or (scores > 1).any():
        raise ValueError("the queries lens needs task scores in [0, 1]")
    if not (np.isfinite(n_queries).all() and (n_queries >= 1).all()):
        raise ValueError("every task needs a known query count (≥ 1)")
    if aggregate not in ("G", "mean"):
        raise ValueError(f"aggregate must be G or mean, not {aggregate!r}")
    n_systems, n_tasks = scores.shape
    low_scores, high_scores = scores, scores
    if ties is not None:
        low_scores = np.where(np.isnan(ties[0]), scores, np.minimum(ties[0], scores))
        high_scores = np.where(np.isnan(ties[1]), scores, np.maximum(ties[1], scores))
    cov_t = task_covariances(scores, n_queries, per_query)
    if aggregate == "G":
        # outside the model only when G is 0 under every tie order: a zero task whose tie maximum is 0 too
        included = (high_scores > 0).all(axis=1) if n_tasks else np.zeros(n_systems, dtype=bool)
        # the delta method's scale: the score, or where it is 0 (ties broken against the row), its tie maximum
        safe = np.where(scores > 0, scores, np.where(high_scores > 0, high_scores, 1.0))
        with np.errstate(divide="ignore"):
            points = np.log(scores).mean(axis=1)
            low = np.log(low_scores).mean(axis=1)
            high = np.log(np.where(high_scores > 0, high_scores, 1.0)).mean(axis=1)
        scaled = cov_t / (safe.T[:, :, None] * safe.T[:, None, :])
    else:
        included = np.ones(n_systems, dtype=bool) if n_tasks else np.zeros(n_systems, dtype=bool)
        points, low, high = scores.mean(axis=1), low_scores.mean(axis=1), high_scores.mean(axis=1)
        scaled = cov_t
    cov = scaled.sum(axis=0) / max(n_tasks, 1) ** 2
    excluded = ~included
    for values in (points, low, high):
        values[excluded] = np.nan
    cov[excluded, :] = 0.0
    cov[:, excluded] = 0.0
    pair_se = pair_standard_errors(cov)
    pair_se[excluded, :] = np.nan
    pair_se[:, excluded] = np.nan
    np.fill_diagonal(pair_se, 0.0)
    se = np.sqrt(np.diagonal(cov)).copy()
    se[excluded] = np.nan
    return Estimates("queries", aggregate, points, low, high, se, pair_se, None, included)
