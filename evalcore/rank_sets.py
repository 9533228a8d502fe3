"""Rank confidence sets from the paired bootstrap over tasks (:mod:`evalcore.task_resampling`).

For each system i we want a range of ranks [rank_lo_i, rank_hi_i] that holds i's *true* rank (its rank by the
population aggregate) with probability at least ``level`` — a *marginal* rank confidence set (Mogstad, Romano,
Shaikh & Wilhelm, "Inference for Ranks with Applications to Mobility across Neighbourhoods and Academic
Achievement across Countries", Review of Economic Studies 91(1), 2024). The naive percentile interval of a
system's bootstrap ranks is known to under-cover near ties; their construction does not.

**Construction.** For system i and every other system j, the resampled differences D_ijb = A_jb − A_ib
(b = 1 … B). A *simultaneous* confidence band for all the differences (θ_j − θ_i)_j≠i at ``level`` gives the
rank set directly::

    rank_lo_i = 1 + #{j : lo_ij > 0}        (j surely above i)
    rank_hi_i = S − #{j : hi_ij < 0}        (j surely below i)

because if every difference lies in its interval (probability ≥ level), the systems surely above are above and
those surely below are below.

**The band** is the percentile-bootstrap simultaneous band of Mandel & Betensky ("Simultaneous confidence
intervals based on the percentile bootstrap approach", Computational Statistics & Data Analysis 52(4), 2008):
row j's interval is [s_j(k), s_j(B−1−k)] with s_j the sorted D_ij·, and k the largest tail count such that at
least ⌈level·B⌉ resamples have *every* row inside its interval. A resample b is inside row j's interval at tail
count k iff its *extremeness*::

    m_jb = min(#{b' : D_ijb' ≤ D_ijb}, #{b' : D_ijb' ≥ D_ijb}) − 1   ≥ k,

so with M_b = min_j m_jb, k is the ⌈level·B⌉-th largest M_b (:func:`calibrated_tail`). Being percentile
intervals, a system better than i on every task (so D_ijb > 0 in every resample) is always surely above it,
and an exact copy of i (D ≡ 0) is never surely above or below it.

**Step-down** (Romano & Wolf, Econometrica 73(4), 2005): after the rows whose interval excludes 0 are decided,
the band is recalibrated over the undecided rows only, until nothing new is decided; this keeps the level and
makes the sets sharper. Rows whose bootstrap differences never change sign are decided at any tail count, so
the procedure starts with them decided (the step-down reaches the same end from there).

Exactness: m is computed exactly up to a cap (:data:`EXTREMENESS_CAP`); a calibration that reaches the cap is
redone with exact ranks (tests/test_rank_sets.py checks both against brute force).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from evalcore.task_resampling import expansion, tail_of

EXTREMENESS_CAP = 16


@dataclass(frozen=True)
class RankSets:
    """Per system (in the order of the samples' rows): ``rank_lo`` / ``rank_hi`` (int64) and ``above``
    (bool systems × systems, ``above[i, j]``: j is surely above i at the level), ``below`` likewise."""

    rank_lo: np.ndarray
    rank_hi: np.ndarray
    above: np.ndarray
    below: np.ndarray


def extremeness(rows: np.ndarray, sorted_rows: np.ndarray, cap: int | None = None) -> np.ndarray:
    """m_jb of every element (module docstring) of ``rows`` (R × B) given each row sorted ascending, capped at
    ``cap`` (None: exact). int32."""
    n_rows, n = rows.shape
    if cap is None or cap >= (n - 1) // 2:
        order = np.argsort(rows, axis=1, kind="stable")
        position = np.arange(n)
        starts = np.ones((n_rows, n), dtype=bool)
        starts[:, 1:] = sorted_rows[:, 1:] != sorted_rows[:, :-1]
        first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)  # first index of each value's run
        ends = np.ones((n_rows, n), dtype=bool)
        ends[:, :-1] = starts[:, 1:]
        last = np.minimum.accumulate(np.where(ends, position, n - 1)[:, ::-1], axis=1)[:, ::-1]
        in_sorted = np.minimum(last + 1, n - first) - 1
        m = np.empty((n_rows, n), dtype=np.int32)
        np.put_along_axis(m, order, in_sorted.astype(np.int32), axis=1)
        return m
    m = np.full((n_rows, n), cap, dtype=np.int32 if cap > 255 else np.uint8)
    low = sorted_rows[:, : cap + 1]  # the cap + 1 smallest values
    r, b = np.nonzero(rows < low[:, cap:cap + 1])  # #{≤ v} ≤ cap: only the smallest cap values can be ≤ v
    if r.size:
        m[r, b] = (low[r] <= rows[r, b][:, None]).sum(axis=1) - 1
    high = sorted_rows[:, n - 1 - cap:]  # the cap + 1 largest values
    r, b = np.nonzero(rows > high[:, :1])
    if r.size:
        m[r, b] = (high[r] >= rows[r, b][:, None]).sum(axis=1) - 1
    return m


def calibrated_tail(m: np.ndarray, level: float) -> int:
    """The largest tail count k such that at least ⌈level·B⌉ resamples have m_jb ≥ k in every row of ``m``
    (rows × B): the ⌈level·B⌉-th largest column minimum."""
    n = m.shape[1]
    need = int(np.ceil(level * n - 1e-9))
    column_min = m.min(axis=0)
    return int(np.partition(column_min, n - need)[n - need])


def rank_sets(samples: np.ndarray, points: np.ndarray, n_tasks: int, level: float = 0.95) -> RankSets:
    """Marginal rank confidence sets at ``level`` from ``samples`` (systems × resamples, each system's
    aggregate in each paired resample over ``n_tasks`` tasks) and ``points`` (each system's aggregate on the
    tasks themselves): module docstring."""
    samples = np.asarray(samples, dtype=np.float64)
    points = np.asarray(points, dtype=np.float64)
    if not 0.0 < level < 1.0:
        raise ValueError("level must lie strictly between 0 and 1")
    n_systems, n = samples.shape
    above = np.zeros((n_systems, n_systems), dtype=bool)
    below = np.zeros((n_systems, n_systems), dtype=bool)
    widest = expansion(tail_of(0, n), n_tasks)
    if np.isfinite(widest):
        # float32 halves the memory and the time; rounding keeps each difference's sign (and an exact 0)
        single = samples.astype(np.float32)
        for i in range(n_systems):  # the widest band, at tail count 0, decides rows once and for all
            differences = single - single[i]
            point = points - points[i]
            above[i] = point + widest * (np.minimum(differences.min(axis=1), point) - point) > 0
            below[i] = point + widest * (np.maximum(differences.max(axis=1), point) - point) < 0
        undecided = ~(above | below)
        np.fill_diagonal(undecided, False)
        first, second = np.nonzero(np.triu(undecided, 1))  # each undecided pair once: D = A_second − A_first
        if first.size:
            rows = single[second] - single[first]
            sorted_rows = np.sort(rows, axis=1)
            capped = extremeness(rows, sorted_rows, EXTREMENESS_CAP)
            pair_of = np.full((n_systems, n_systems), -1, dtype=np.int64)
            pair_of[first, second] = np.arange(first.size)
            pair_of[second, first] = np.arange(first.size)
            band = _Band(first, rows, sorted_rows, capped, level, n_tasks)
            for i in range(n_systems):
                partners = np.flatnonzero(undecided[i])
                if partners.size:
                    band.step_down(i, partners, pair_of[i, partners], points[partners] - points[i], above, below)
    rank_lo = 1 + above.sum(axis=1)
    rank_hi = n_systems - below.sum(axis=1)
    return RankSets(rank_lo.astype(np.int64), rank_hi.astype(np.int64), above, below)


@dataclass(frozen=True)
class _Band:
    """The undecided pairs' resampled differences (stored as A_second − A_first), sorted and with their capped
    extremeness: what the step-down of every system reads."""

    first: np.ndarray
    rows: np.ndarray
    sorted_rows: np.ndarray
    capped: np.ndarray
    level: float
    n_tasks: int
    factors: dict = field(default_factory=dict)  # tail count -> expansion, computed once per board

    def factor(self, k: int) -> float:
        if k not in self.factors:
            self.factors[k] = expansion(tail_of(k, self.rows.shape[1]), self.n_tasks)
        return self.factors[k]

    def step_down(self, i: int, partners: np.ndarray, pairs: np.ndarray, point: np.ndarray, above: np.ndarray,
                  below: np.ndarray) -> None:
        """The step-down for system i over its undecided ``partners`` (``point``: their point differences
        θ̂_j − θ̂_i); marks ``above[i]`` / ``below[i]`` in place."""
        n = self.rows.shape[1]
        sign = np.where(self.first[pairs] == i, 1.0, -1.0)  # D_ij = sign · stored row
        active = np.ones(partners.size, dtype=bool)
        exact = None
        while active.any():
            k = calibrated_tail(self.capped[pairs[active]], self.level)
            if k >= EXTREMENESS_CAP:  # the cap may hide a larger k: recalibrate on exact extremeness
                if exact is None:
                    exact = extremeness(self.rows[pairs], self.sorted_rows[pairs])
                k = calibrated_tail(exact[active], self.level)
            low_stored, high_stored = self.sorted_rows[pairs, k], self.sorted_rows[pairs, n - 1 - k]
            factor = self.factor(k)
            low = np.minimum(np.where(sign > 0, low_stored, -high_stored), point)
            high = np.maximum(np.where(sign > 0, high_stored, -low_stored), point)
            new_above = active & (point + factor * (low - point) > 0)
            new_below = active & (point + factor * (high - point) < 0)
            if not (new_above.any() or new_below.any()):
                return
            above[i, partners[new_above]] = True
            below[i, partners[new_below]] = True
            active &= ~(new_above | new_below)
