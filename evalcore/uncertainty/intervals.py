"""Each row's interval of the board's aggregate, at a level (marginal: each row's own), with no Monte Carlo error:
the same board gives the same ends.

**On these tasks** (normal reference)::

    on the comparison scale:  [θ̂⁻_i − z · se_i,  θ̂⁺_i + z · se_i],   z = Φ⁻¹(1 − (1 − level)/2)

(θ̂⁻ / θ̂⁺ the tie range's ends, equal to θ̂ without ties).

**On new tasks like these** (:func:`bootstrap_t`): the bootstrap-t interval over the row's T task values
y_i1 … y_iT (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 12.5)::

    t*_b = (ȳ*_b − ȳ) / (s*_b / √T)          [ȳ − t*_(1−a) s/√T,  ȳ − t*_(a) s/√T],  a = (1 − level)/2

over resamples b of the T tasks with replacement — every one of the C(2T − 1, T) distinct resamples with its
multinomial probability up to :data:`EXACT_UP_TO` tasks (exact: no Monte Carlo at all), else :data:`DRAWS`
resamples drawn from a fixed generator (seed :data:`SEED`), so the ends are a function of the data alone. A
resample with s* = 0 has t* = ±∞ by the sign of ȳ* − ȳ (0 when equal). Why not the t interval: a single row's
log scores are skewed (a score near 1 has a long left tail on the log scale), and θ̂ ± t_(T−1) se covered 0.85 (5
tasks), 0.85–0.91 (8) and 0.91–0.93 (17) of the population G in the validation's task model, where bootstrap-t
covered 0.91–0.95, 0.93–0.95 and 0.94–0.96 (docs/DESIGN.md § Uncertainty). Differences between rows are far
less skewed (the common task effect cancels), so the rank sets keep the paired t.

Both are then taken back to the aggregate's scale — exp for G, which keeps the interval positive and asymmetric
— and clipped to [0, ``upper``] (a metric bounded by one has an aggregate ≤ 1). Rows outside the model (a zero
task under G) get NaN: the aggregate is 0 by the benchmark's definition and is not an estimate.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from evalcore.uncertainty.estimates import Estimates
from evalcore.uncertainty.student import t_upper

EXACT_UP_TO = 10
"""Up to this many tasks the bootstrap-t enumerates every distinct resample (92,378 at 10 tasks)."""
DRAWS = 20_000
SEED = 0
ROWS_PER_BLOCK = 64
"""Rows whose resampled statistics are held at once (64 × 20,000 float64 = 10 MB per temporary)."""


def quantile(level: float, df: int | None) -> float:
    """The two-sided critical value of a normal (``df`` None) or t interval at ``level``."""
    if not 0.0 < level < 1.0:
        raise ValueError("level must lie strictly between 0 and 1")
    return t_upper((1.0 - level) / 2.0, df)


def intervals(est: Estimates, level: float = 0.95, upper: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) per row on the aggregate's own scale (module docstring)."""
    if not 0.0 < level < 1.0:
        raise ValueError("level must lie strictly between 0 and 1")
    if est.lens == "tasks" and est.task_values is not None and est.task_values.shape[1] >= 2:
        lo, hi = bootstrap_t(est.task_values, level)
    else:
        q = quantile(level, est.df)
        with np.errstate(invalid="ignore"):
            lo = est.low - q * est.se
            hi = est.high + q * est.se
    with np.errstate(invalid="ignore", over="ignore"):
        if est.aggregate == "G":
            lo, hi = np.exp(lo), np.exp(hi)
    lo = np.clip(lo, 0.0, upper)
    hi = np.clip(hi, 0.0, upper)
    lo[~est.included] = np.nan
    hi[~est.included] = np.nan
    return lo, hi


@lru_cache(maxsize=4)
def resamples(n_tasks: int) -> tuple[np.ndarray, np.ndarray]:
    """(counts, probabilities): every distinct resample of ``n_tasks`` tasks as task counts with its multinomial
    probability (up to :data:`EXACT_UP_TO` tasks), else :data:`DRAWS` seeded draws of equal weight. Read-only."""
    if n_tasks <= EXACT_UP_TO:
        rows = [np.bincount(combo, minlength=n_tasks)
                for combo in _combinations_with_replacement(n_tasks)]
        counts = np.asarray(rows, dtype=np.float64)
        log_p = (math.lgamma(n_tasks + 1) - np.sum([[math.lgamma(k + 1) for k in row] for row in rows], axis=1)
                 - n_tasks * math.log(n_tasks))
        probabilities = np.exp(log_p)
    else:
        counts = np.random.default_rng(SEED).multinomial(n_tasks, np.full(n_tasks, 1.0 / n_tasks),
                                                         size=DRAWS).astype(np.float64)
        probabilities = np.full(DRAWS, 1.0 / DRAWS)
    counts.setflags(write=False)
    probabilities.setflags(write=False)
    return counts, probabilities


def _combinations_with_replacement(n: int):
    from itertools import combinations_with_replacement

    return combinations_with_replacement(range(n), n)


def bootstrap_t(values: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The bootstrap-t interval (module docstring) of each row's mean of ``values`` (rows × T, NaN rows give
    NaN), on the values' own scale."""
    values = np.asarray(values, dtype=np.float64)
    n_rows, n_tasks = values.shape
    a = (1.0 - level) / 2.0
    counts, probabilities = resamples(n_tasks)
    lo, hi = np.full(n_rows, np.nan), np.full(n_rows, np.nan)
    known = np.flatnonzero(np.isfinite(values).all(axis=1))
    for start in range(0, len(known), ROWS_PER_BLOCK):
        rows = known[start:start + ROWS_PER_BLOCK]
        y = values[rows]
        mean = y.mean(axis=1)
        sd = y.std(axis=1, ddof=1)
        m = y @ counts.T / n_tasks                                       # (rows, resamples)
        variance = ((y * y) @ counts.T / n_tasks - m * m) * n_tasks / (n_tasks - 1)
        spread = np.sqrt(np.maximum(variance, 0.0))
        flat = spread <= 1e-12 * np.maximum(np.abs(y).max(axis=1, keepdims=True), 1e-300)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (m - mean[:, None]) / (spread / math.sqrt(n_tasks))
        difference = m - mean[:, None]
        t[flat] = np.where(difference[flat] > 0, np.inf, np.where(difference[flat] < 0, -np.inf, 0.0))
        low_t, high_t = _weighted_quantiles(t, probabilities, a, 1.0 - a)
        scale = sd / math.sqrt(n_tasks)
        with np.errstate(invalid="ignore"):
            lo[rows] = np.where(scale > 0, mean - high_t * scale, mean)
            hi[rows] = np.where(scale > 0, mean - low_t * scale, mean)
    return lo, hi


def _weighted_quantiles(t: np.ndarray, probabilities: np.ndarray, low: float,
                        high: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``t``, the smallest value whose cumulative probability reaches ``low``, and the smallest whose
    cumulative probability reaches ``high`` (the distribution's quantiles, taken outwards at ties). Equal weights
    (seeded draws) need only two order statistics (a partition); unequal ones (the enumeration) a sort."""
    n = t.shape[1]
    if probabilities[0] == probabilities[-1] == 1.0 / n and np.all(probabilities == probabilities[0]):
        k_low = min(n - 1, max(0, math.ceil(low * n - 1e-9) - 1))
        k_high = min(n - 1, max(0, math.ceil(high * n - 1e-9) - 1))
        parted = np.partition(t, (k_low, k_high), axis=1)
        return parted[:, k_low], parted[:, k_high]
    order = np.argsort(t, axis=1, kind="stable")
    sorted_t = np.take_along_axis(t, order, axis=1)
    cumulative = np.cumsum(probabilities[order], axis=1)
    last = t.shape[1] - 1
    at_low = np.minimum((cumulative < low - 1e-12).sum(axis=1), last)
    at_high = np.minimum((cumulative < high - 1e-12).sum(axis=1), last)
    rows = np.arange(t.shape[0])
    return sorted_t[rows, at_low], sorted_t[rows, at_high]
