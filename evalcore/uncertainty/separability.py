"""Which differences on a board are real: the adjacent-pairs headline, tiers, and a Pareto front that counts only
real differences — on either lens' estimates.

**Adjacent pairs** (:func:`adjacent_pairs`): each pair of neighbours in the board's order (upper u, lower l) is
tested with the lens' statistic T_ul = (θ̂⁻_u − θ̂⁺_l)/se_ul (least favourable tie order) and its reference
distribution (normal, or Student t with T − 1 df over tasks), **two-sided**::

    p_ul = min(1, 2 · P(T > T_ul))

and a pair differs only when the upper system is ahead (T_ul > 0, which a small p implies). Two-sided because
the board's order was chosen by the same data: a one-sided test in the direction the data picked rejects an
exactly tied pair twice as often as it claims (2α; tests/uncertainty/test_adjacent_pairs_null.py). A pair tied
on the aggregate has T ≤ 0 and p = 1: it never differs. A pair with a row outside the model (a zero
task under G) is not tested (NaN). The p-values are adjusted together by Holm's step-down
(:func:`holm_adjusted`), which holds the family-wise error at α under any dependence and has no Monte Carlo
error: the headline "N of M adjacent pairs differ" is the same for every seed. When nothing differs,
:func:`why_none` says how far the strongest pair is from Holm's first threshold α/M.

**Tiers** (:func:`tiers`) come from the rank sets' own decisions (:mod:`evalcore.uncertainty.rank_sets`):
a row's tier is the length of the longest chain of "surely above" that ends at it::

    tier_i = 1 + max{tier_j : j surely above i}      (1 when no row is surely above i)

so tier 1 holds exactly the rows that could be #1 (rank_lo = 1), and a row in tier k has k − 1 rows above it,
each surely above the next. Removing a row moves another's tier only when the row lay on its longest chain, or
through the critical values of the rank sets themselves (fewer rows, fewer comparisons).

**Pareto front** (:func:`real_pareto_front`): a system is dominated only when a system no larger is surely
better by the rank sets.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalcore.uncertainty.estimates import Estimates
from evalcore.uncertainty.student import upper_tail

ALPHA = 0.05


def holm_adjusted(p_values) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values of m tests, in the order given (Holm 1979, step-down).

    With the m p-values sorted ascending, p_(1) ≤ … ≤ p_(m), the i-th smallest's adjusted p-value is
    p̃_(i) = min(1, max_{j ≤ i} (m − j + 1) · p_(j)): the smallest times m, the next times m − 1, …, never
    below the one before. Rejecting every hypothesis with p̃ ≤ α keeps the chance of any false rejection
    among the m at most α (family-wise error rate), under any dependence between the tests. m counts the
    non-missing values only: a NaN (a test that was not run) stays NaN and does not count. ValueError for a
    value outside [0, 1].
    """
    p = np.asarray(p_values, dtype=np.float64).reshape(-1)
    run = ~np.isnan(p)
    if ((p[run] < 0.0) | (p[run] > 1.0)).any():
        raise ValueError("p-values must lie in [0, 1]")
    adjusted = np.full(p.shape, np.nan)
    m = int(run.sum())
    if m:
        order = np.argsort(p[run], kind="stable")
        steps = p[run][order] * np.arange(m, 0, -1)
        adjusted_run = np.empty(m)
        adjusted_run[order] = np.minimum(1.0, np.maximum.accumulate(steps))
        adjusted[run] = adjusted_run
    return adjusted


@dataclass(frozen=True)
class AdjacentPairs:
    """The board's neighbours in its order: ``first`` (upper) / ``second`` (lower) row positions, ``statistic``
    (T_ul), ``p_value`` (two-sided, NaN = not tested), ``adjusted`` (Holm over the tested pairs), ``differ``
    (adjusted ≤ alpha), ``alpha``."""

    first: np.ndarray
    second: np.ndarray
    statistic: np.ndarray
    p_value: np.ndarray
    adjusted: np.ndarray
    differ: np.ndarray
    alpha: float = ALPHA

    @property
    def n_differ(self) -> int:
        return int(self.differ.sum())

    @property
    def n_pairs(self) -> int:
        return int(len(self.first))

    @property
    def n_tested(self) -> int:
        return int((~np.isnan(self.p_value)).sum())


def adjacent_pairs(est: Estimates, order: np.ndarray, alpha: float = ALPHA) -> AdjacentPairs:
    """Test each pair of neighbours of ``order`` (row positions, best first): module docstring."""
    order = np.asarray(order, dtype=np.int64)
    first, second = order[:-1], order[1:]
    statistic = est.statistics()[first, second] if len(first) else np.empty(0)
    p = np.minimum(1.0, 2.0 * upper_tail(statistic, est.df))
    adjusted = holm_adjusted(p) if len(p) else p
    with np.errstate(invalid="ignore"):
        differ = adjusted <= alpha
    return AdjacentPairs(first, second, statistic, p, adjusted, differ, alpha)


@dataclass(frozen=True)
class NoneDiffer:
    """Why no adjacent pair differs: the strongest tested pair (row positions), its two-sided p-value and Holm's
    first threshold alpha / M (M tested pairs)."""

    first: int
    second: int
    p_value: float
    threshold: float
    n_tested: int


def why_none(pairs: AdjacentPairs) -> NoneDiffer | None:
    """The reason a board separates no adjacent pair (None when some pair differs or none was tested)."""
    if pairs.n_differ or pairs.n_tested == 0:
        return None
    best = int(np.nanargmin(pairs.p_value))
    return NoneDiffer(int(pairs.first[best]), int(pairs.second[best]), float(pairs.p_value[best]),
                      pairs.alpha / pairs.n_tested, pairs.n_tested)


def tiers(above: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Tier (1, 2, …) of each row from ``above`` ([i, j] = j surely above i) — the longest chain ending at the
    row (module docstring); ``points`` (the board's aggregate) orders the walk, since a row surely above another
    always has the larger point."""
    above = np.asarray(above, dtype=bool)
    size = above.shape[0]
    tier = np.ones(size, dtype=np.int64)
    order = np.argsort(-np.nan_to_num(np.asarray(points, dtype=np.float64), nan=-np.inf), kind="stable")
    done = np.zeros(size, dtype=bool)
    for i in order:
        higher = above[i] & done
        if higher.any():
            tier[i] = 1 + tier[higher].max()
        done[i] = True
    return tier


def real_pareto_front(sizes: np.ndarray, surely_above: np.ndarray) -> np.ndarray:
    """Bool per system: on the front unless a system of no larger size (NaN sizes: neither dominate nor are
    dominated) is surely above it (``surely_above[i, j]``: j surely better than i)."""
    sizes = np.asarray(sizes, dtype=np.float64)
    known = ~np.isnan(sizes)
    no_larger = sizes[None, :] <= sizes[:, None]  # [i, j]: j no larger than i
    dominated = (np.asarray(surely_above, dtype=bool) & no_larger & known[None, :]).any(axis=1)
    return known & ~dominated
