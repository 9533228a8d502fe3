"""Ranks that admit ties: a system's rank is only as sharp as its sampling uncertainty *and* its tie range allow.

For each system i of a leaderboard ranked by an aggregate A (G or the mean over tasks):

- its point value A_i (the oblivious task scores under the chosen tie policy);
- its sampling interval [b_lo_i, b_hi_i]: the 95% bootstrap percentile interval of A_i (per-query data only);
- its tie range [t_min_i, t_max_i]: A when every tie is broken against it / in its favour.

**Combined interval** (closed form, :func:`combined_intervals`)::

    lo_i = min(A_i, b_lo_i, t_min_i)        hi_i = max(A_i, b_hi_i, t_max_i)

the hull of the point and both intervals; a part that is unknown (NaN: no per-query data, published scores
without min/max) is left out, and a system with neither is the point [A_i, A_i]. The point is part of the hull
so that the point ranking always lies inside the rank interval.

**Shared rank** (:func:`tie_aware_ranks`) — Chatbot Arena's "rank (UB)", 1 + the number of systems surely better,
with "surely" covering ties as well as sampling::

    shared_rank_i = 1 + #{j : lo_j > hi_i}

**Rank interval**: [shared_rank_i, #{j : hi_j >= lo_i}] — the best competition ('min') rank and the worst
('max') rank i can take when every system takes any value inside its combined interval
(:func:`evalcore.aggregate.rank_intervals`; touching intervals count as a possible tie both ways).

Consequences (tests/test_ranks.py checks each against a brute-force enumeration of interval ends): the
competition rank of the point values lies inside every rank interval; two systems whose combined intervals
overlap have overlapping rank intervals, so neither is ranked surely ahead of the other; systems with
zero-width intervals keep their competition ranks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalcore.aggregate import rank_intervals


@dataclass(frozen=True)
class TieAwareRanks:
    """Per system, in the order given: the combined interval, the shared rank and the rank interval (NaN where
    the rank interval is not known: see :func:`tie_aware_ranks`)."""

    lo: np.ndarray
    hi: np.ndarray
    shared_rank: np.ndarray  # int64, every system
    rank_lo: np.ndarray  # float, NaN where unknown
    rank_hi: np.ndarray


def combined_intervals(point, *intervals) -> tuple[np.ndarray, np.ndarray]:
    """The hull of ``point`` and each (lo, hi) of ``intervals`` per system, NaN bounds left out:
    (min(point, lo, ...), max(point, hi, ...)). A NaN point with nothing else known stays NaN."""
    point = np.asarray(point, dtype=np.float64)
    lows = [point] + [np.asarray(lo, dtype=np.float64) for lo, _ in intervals]
    highs = [point] + [np.asarray(hi, dtype=np.float64) for _, hi in intervals]
    with np.errstate(invalid="ignore"):
        lo = np.fmin.reduce(np.stack(lows), axis=0)
        hi = np.fmax.reduce(np.stack(highs), axis=0)
    return lo, hi


def tie_aware_ranks(point, bootstrap=None, tie_range=None, known=None) -> TieAwareRanks:
    """Shared ranks and rank intervals from point values, bootstrap intervals and tie ranges (module docstring).

    ``bootstrap`` and ``tie_range`` are (lo, hi) pairs of arrays (None or NaN = unknown). ``known`` marks the
    systems whose rank interval is reported (default: those with a bootstrap interval — a rank interval without
    the sampling part would look sharper than it is); every system's combined interval still counts for the
    others. ``point`` must be finite (the leaderboard ranks only finite aggregates)."""
    point = np.asarray(point, dtype=np.float64)
    if not np.isfinite(point).all():
        raise ValueError("tie_aware_ranks: every point value must be finite")
    nan = np.full(point.shape, np.nan)
    bootstrap = bootstrap if bootstrap is not None else (nan, nan)
    tie_range = tie_range if tie_range is not None else (nan, nan)
    lo, hi = combined_intervals(point, bootstrap, tie_range)
    best, worst = rank_intervals(lo, hi)
    if known is None:
        known = ~(np.isnan(np.asarray(bootstrap[0], dtype=np.float64))
                  | np.isnan(np.asarray(bootstrap[1], dtype=np.float64)))
    known = np.asarray(known, dtype=bool)
    return TieAwareRanks(lo=lo, hi=hi, shared_rank=best.astype(np.int64),
                         rank_lo=np.where(known, best, np.nan), rank_hi=np.where(known, worst, np.nan))
