"""Which differences on a leaderboard are real: paired tests over tasks, the adjacent-pairs headline, tiers and a
Pareto front that counts only real differences.

**The paired test over tasks** (:func:`sign_flip_p_values`) — a randomization (sign-flip) test, the one IR uses
for system pairs (Smucker, Allan & Carterette, CIKM 2007), on the per-task differences that make up the
aggregate's difference::

    mean:  d_t = x_at − x_bt                      G:  d_t = log x_at − log x_bt   (G_a / G_b = exp(mean d))

Statistic |mean_t d_t|; under H0 ("a and b are exchangeable on each task": each d_t is as likely to have the
other sign) every sign vector s ∈ {±1}^T is equally likely, and p = #{s : |mean_t s_t d_t| ≥ |mean_t d_t|} / 2^T,
counted exactly for T ≤ :data:`EXACT_UP_TO` tasks (meeting in the middle: 2 · 2^(T/2) sums, not 2^T), else
estimated from :data:`RANDOM_FLIPS` seeded sign vectors as (1 + #extreme) / (1 + n). The sign vectors depend only on (T, seed), so a pair's p-value never
depends on which other systems are shown. A pair where either system has a zero task under G has an infinite
log ratio and cannot be tested as a ratio: it is tested on the task scores' differences instead (does one
system score higher task by task), which is what a zero G means for the ranking anyway.

**Adjacent pairs** (:func:`adjacent_pairs`): the p-values of each pair of neighbours in the board's order,
adjusted together by Holm's step-down (:func:`evalcore.aggregate.holm_adjusted`); "N of M adjacent pairs differ
at 95%" counts the adjusted p-values ≤ 0.05 — the statistic MTEB's issue tracker (#5208) reports for its board.

**Tiers** (:func:`tiers`), by a rule with fixed anchors so that filtering cannot move a system between tiers
except by removing a tier's leader above it: walk the systems best first; the first leads tier 1; each next
system joins the current tier when its paired test against the tier's *leader* is not significant at
``alpha`` (unadjusted: one test per system), else it leads a new tier. Tiers are contiguous in the board's
order, every member is indistinguishable from its tier's best, and a system's tier depends only on the leaders
above it and its tests against them — removing any other system moves no one.

**Pareto front** (:func:`real_pareto_front`): a system is dominated only when a system no larger is *surely*
better than it (the rank sets' simultaneous comparison, :mod:`evalcore.rank_sets`).
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass

import numpy as np

from evalcore.aggregate import holm_adjusted, single_threaded_blas

EXACT_UP_TO = 24
RANDOM_FLIPS = 10_000
ALPHA = 0.05


def sign_vectors(n_tasks: int, seed: int = 0) -> np.ndarray:
    """The test's :data:`RANDOM_FLIPS` seeded random sign vectors beyond :data:`EXACT_UP_TO` tasks, (n × T)
    float64 of ±1: a function of (T, seed) only."""
    rng = np.random.default_rng(seed)
    return rng.choice((1.0, -1.0), size=(RANDOM_FLIPS, n_tasks))


def task_differences(first: np.ndarray, second: np.ndarray, aggregate: str) -> np.ndarray:
    """d_t per pair (rows): ``first`` − ``second`` task scores (pairs × tasks), as log ratios under G — except
    a pair where a zero task makes the log ratio infinite, which gets the scores' differences (module
    docstring)."""
    first, second = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    plain = first - second
    if aggregate != "G":
        return plain
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.log(first) - np.log(second)
    infinite = ~np.isfinite(ratios).all(axis=-1)
    ratios[infinite] = plain[infinite]
    return ratios


def _half_sums(d: np.ndarray) -> np.ndarray:
    """Σ_t s_t d_t over every sign vector s of the columns of ``d`` (pairs × h) → pairs × 2^h."""
    sums = np.zeros((d.shape[0], 1))
    for column in d.T:
        sums = np.concatenate([sums + column[:, None], sums - column[:, None]], axis=1)
    return sums


def _exact_extreme_counts(rows: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """#{s ∈ {±1}^T : |Σ_t s_t d_t| ≥ threshold} per row, by meeting in the middle: the 2^⌈T/2⌉ sums of one
    half of the tasks against the sorted 2^⌊T/2⌋ sums of the other, |a + b| ≥ t ⟺ b ≥ t − a or b ≤ −t − a
    (two disjoint ranges for t > 0; every vector counts for t ≤ 0)."""
    half = rows.shape[1] // 2
    first, second = _half_sums(rows[:, half:]), np.sort(_half_sums(rows[:, :half]), axis=1)
    counts = np.empty(rows.shape[0], dtype=np.int64)
    total = first.shape[1] * second.shape[1]
    for index in range(rows.shape[0]):
        t = threshold[index]
        if t <= 0:
            counts[index] = total
            continue
        a, b = first[index], second[index]
        above = b.size - np.searchsorted(b, t - a, side="left")
        below = np.searchsorted(b, -t - a, side="right")
        counts[index] = int(above.sum() + below.sum())
    return counts


def sign_flip_p_values(differences: np.ndarray, seed: int = 0, signs: np.ndarray | None = None) -> np.ndarray:
    """Two-sided sign-flip p-value of each row of ``differences`` (pairs × tasks): module docstring. A row
    with a non-finite difference gets 1. Up to :data:`EXACT_UP_TO` tasks every one of the 2^T sign vectors is
    counted (:func:`_exact_extreme_counts`); beyond, ``signs`` (:func:`sign_vectors` of these tasks and
    ``seed``, when the caller has them already) are."""
    d = np.atleast_2d(np.asarray(differences, dtype=np.float64))
    n_pairs, n_tasks = d.shape
    p = np.ones(n_pairs)
    finite = np.isfinite(d).all(axis=1)
    if not finite.any() or n_tasks == 0:
        return p
    rows = d[finite]
    observed = np.abs(rows.sum(axis=1))
    tolerance = 1e-9 * np.abs(rows).sum(axis=1) + 1e-15  # sums equal up to rounding count as extreme
    if n_tasks <= EXACT_UP_TO:
        p[finite] = _exact_extreme_counts(rows, observed - tolerance) / 2.0 ** n_tasks
        return np.minimum(p, 1.0)
    signs = signs if signs is not None else sign_vectors(n_tasks, seed)
    extreme = np.zeros(rows.shape[0], dtype=np.int64)
    with contextlib.nullcontext() if _PINNED.active else single_threaded_blas():  # small products: one thread
        for start in range(0, signs.shape[0], 4096):                            # is faster, same bits everywhere
            flipped = np.abs(signs[start:start + 4096] @ rows.T)  # (flips × pairs)
            extreme += (flipped >= observed - tolerance).sum(axis=0)
    n = signs.shape[0]
    p[finite] = (1 + extreme) / (1 + n)
    return np.minimum(p, 1.0)


@dataclass(frozen=True)
class AdjacentPairs:
    """The board's neighbours in its order: ``first`` / ``second`` (row positions), ``p_value`` (raw),
    ``adjusted`` (Holm over the pairs), ``differ`` (adjusted ≤ alpha), ``kind`` ("tasks" or "queries": what
    was resampled for that pair)."""

    first: np.ndarray
    second: np.ndarray
    p_value: np.ndarray
    adjusted: np.ndarray
    differ: np.ndarray
    kind: np.ndarray

    @property
    def n_differ(self) -> int:
        return int(self.differ.sum())

    @property
    def n_pairs(self) -> int:
        return int(len(self.first))


def adjacent_pairs(order: np.ndarray, scores: np.ndarray, aggregate: str, query_p_values=None, seed: int = 0,
                   alpha: float = ALPHA) -> AdjacentPairs:
    """Test each pair of neighbours of ``order`` (row positions of ``scores``, systems × tasks, best first):
    over tasks (:func:`sign_flip_p_values`), or over queries where ``query_p_values`` (one per pair, NaN where
    either system lacks per-query data) has a value; Holm-adjusted together."""
    order = np.asarray(order, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    first, second = order[:-1], order[1:]
    p = sign_flip_p_values(task_differences(scores[first], scores[second], aggregate), seed) if len(first) \
        else np.empty(0)  # one call: the sign vectors are drawn once
    kind = np.full(len(first), "tasks", dtype=object)
    if query_p_values is not None:
        query = np.asarray(query_p_values, dtype=np.float64)
        over_queries = ~np.isnan(query)
        p = np.where(over_queries, query, p)
        kind[over_queries] = "queries"
    adjusted = holm_adjusted(p) if len(p) else p
    return AdjacentPairs(first, second, p, adjusted, adjusted <= alpha, kind)


def tiers(order: np.ndarray, scores: np.ndarray, aggregate: str, seed: int = 0, alpha: float = ALPHA,
          chunk: int = 16) -> np.ndarray:
    """Tier (1, 2, …) of each row of ``scores`` (systems × tasks) by the fixed-anchor rule of the module
    docstring, walking ``order`` (row positions, best first); rows not in ``order`` get 0. The systems after a
    leader are tested against it ``chunk`` at a time, up to the first that differs."""
    order = np.asarray(order, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    tier = np.zeros(scores.shape[0], dtype=np.int64)
    if scores.shape[1] <= EXACT_UP_TO:  # counted exactly: no sign vectors, no BLAS
        _walk(order, scores, aggregate, seed, alpha, chunk, None, tier)
        return tier
    with _pinned_blas():
        _walk(order, scores, aggregate, seed, alpha, chunk, sign_vectors(scores.shape[1], seed), tier)
    return tier


def _walk(order, scores, aggregate, seed, alpha, chunk, signs, tier) -> None:
    """:func:`tiers`' walk, filling ``tier`` in place."""
    position, current = 0, 0
    while position < len(order):
        current += 1
        leader = order[position]
        tier[leader] = current
        position += 1
        while position < len(order):
            batch = order[position:position + chunk]
            p = sign_flip_p_values(task_differences(scores[np.full(batch.size, leader)], scores[batch], aggregate),
                                   seed, signs)
            differs = np.flatnonzero(p <= alpha)
            joined = batch if differs.size == 0 else batch[:differs[0]]
            tier[joined] = current
            position += joined.size
            if differs.size:
                break


class _Pinned(threading.local):
    active = False


_PINNED = _Pinned()


@contextlib.contextmanager
def _pinned_blas():
    """One BLAS thread for a block of many small sign-flip products (entering the limit once, not per call)."""
    with single_threaded_blas():
        _PINNED.active = True
        try:
            yield
        finally:
            _PINNED.active = False


def real_pareto_front(sizes: np.ndarray, surely_above: np.ndarray) -> np.ndarray:
    """Bool per system: on the front unless a system of no larger size (NaN sizes: neither dominate nor are
    dominated) is surely above it (``surely_above[i, j]``: j surely better than i)."""
    sizes = np.asarray(sizes, dtype=np.float64)
    known = ~np.isnan(sizes)
    no_larger = sizes[None, :] <= sizes[:, None]  # [i, j]: j no larger than i
    dominated = (np.asarray(surely_above, dtype=bool) & no_larger & known[None, :]).any(axis=1)
    return known & ~dominated
