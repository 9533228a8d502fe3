"""The paired bootstrap over tasks: how much a benchmark's aggregate would move had the benchmark drawn other
tasks like these.

**What it assumes.** The benchmark's T tasks are a sample from a population of tasks like them, drawn
independently; a system's task scores are fixed numbers (the queries inside a task are not resampled here:
that is :mod:`evalcore.store.statistics`' bootstrap over queries). The question answered is "which systems
would lead on another benchmark of T tasks like these", not "which lead on these T tasks".

**The resamples.** Resample b draws T task indices uniformly with replacement; ``w_bt`` is how often task t was
drawn (Σ_t w_bt = T). The same draw serves every system (paired): inside one resample all systems are scored
on the same tasks, so their ranks in it are consistent. The draws depend only on (T, B, seed)
(:func:`resample_counts`), never on the systems shown, so a filtered board sees the same resamples.

**The aggregate of system i in resample b** (closed forms, one matrix product each, :func:`aggregate_samples`)::

    mean:  A_ib = (1/T) Σ_t w_bt x_it
    G:     A_ib = exp((1/T) Σ_t w_bt log x_it)      and A_ib = 0 when a task with x_it = 0 is drawn

**Interval.** The *expanded* percentile interval of A_i1 … A_iB (:func:`score_intervals`, :func:`expansion`):
the order statistics s(k), s(B−1−k) at tail (1 − level)/2, moved away from the point by the factor that
turns a percentile interval of T observations into a t interval — plain percentile intervals under-cover with
few tasks (a simulation with 5 tasks found the true best system's rank missed in 19% of boards).

**Where it fails.** With few tasks (R2MED and RAR-b's MCR have 8) the bootstrap distribution is coarse (only
C(2T−1, T) distinct multisets) and even the expanded interval is only as good as a t interval on T values
(tests/test_rank_sets_coverage.py measures the coverage of the rank sets built on it). A geometric mean with a zero task has an
atom at 0: every resample that draws that task gives G = 0 (for T = 17, 1 − (16/17)^17 ≈ 64% of them), so the
interval starts at 0 and says little. Tasks are not exchangeable when a benchmark was built from deliberately
different task families; the interval then speaks of a population that does not exist.
"""
from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

AGGREGATES = ("G", "mean")


def resample_counts(n_tasks: int, n_resamples: int, seed: int) -> np.ndarray:
    """(n_resamples, n_tasks) multiplicities ``w_bt`` of each task in each resample (rows sum to n_tasks),
    from ``numpy.random.default_rng(seed)``: a function of (n_tasks, n_resamples, seed) only."""
    if n_tasks < 1 or n_resamples < 1:
        raise ValueError("resample_counts needs at least one task and one resample")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n_tasks, size=(n_resamples, n_tasks))
    flat = (picks + (np.arange(n_resamples) * n_tasks)[:, None]).ravel()
    return np.bincount(flat, minlength=n_resamples * n_tasks).reshape(n_resamples, n_tasks).astype(np.float64)


def aggregate_samples(scores: np.ndarray, counts: np.ndarray, aggregate: str) -> np.ndarray:
    """The aggregate of every system in every resample: ``scores`` (systems × tasks, finite, ≥ 0 for G) and
    ``counts`` (resamples × tasks, :func:`resample_counts`) → (systems × resamples). With ``counts`` a row of
    ones it is the point aggregate."""
    scores = np.asarray(scores, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}, not {aggregate!r}")
    if scores.ndim != 2 or counts.ndim != 2 or scores.shape[1] != counts.shape[1]:
        raise ValueError("scores (systems × tasks) and counts (resamples × tasks) must share the task axis")
    if not np.isfinite(scores).all():
        raise ValueError("task scores must be finite to be resampled")
    n_tasks = scores.shape[1]
    if aggregate == "mean":
        return scores @ counts.T / n_tasks
    if (scores < 0).any():
        raise ValueError("a geometric mean needs task scores ≥ 0")
    zero = scores == 0
    logs = np.log(np.where(zero, 1.0, scores))
    samples = np.exp(logs @ counts.T / n_tasks)
    if zero.any():
        samples[(zero.astype(np.float64) @ counts.T) > 0] = 0.0
    return samples


def score_intervals(samples: np.ndarray, points: np.ndarray, n_tasks: int,
                    level: float = 0.95, upper: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """Per system (row of ``samples``; ``points`` its aggregate on the benchmark's own tasks), the expanded
    percentile interval at ``level`` (:func:`expansion`): point + f · (percentile − point) on each side,
    clipped to [0, ``upper``] (scores are ≥ 0; a metric bounded by one has an aggregate ≤ 1, which the
    expansion with very few tasks could otherwise pass). NaN with fewer than two tasks."""
    if not 0.0 < level < 1.0:
        raise ValueError("level must lie strictly between 0 and 1")
    samples = np.asarray(samples, dtype=np.float64)
    points = np.asarray(points, dtype=np.float64)
    if n_tasks < 2:
        nan = np.full(samples.shape[0], np.nan)
        return nan, nan.copy()
    n = samples.shape[1]
    k = max(0, int(math.floor((1.0 - level) / 2.0 * (n + 1))) - 1)  # s(k): tail (k + 1)/(B + 1) ≤ (1 − level)/2
    ordered = np.sort(samples, axis=1)
    factor = expansion(tail_of(k, n), n_tasks)
    lo = points + factor * (np.minimum(ordered[:, k], points) - points)
    hi = points + factor * (np.maximum(ordered[:, n - 1 - k], points) - points)
    return np.maximum(lo, 0.0), np.minimum(hi, upper)


# -- the small-sample expansion ------------------------------------------------------------------------------
def student_t_two_sided(x: float, df: int) -> float:
    """P(|T| ≤ x) for Student's t with an integer ``df`` ≥ 1, in closed form (Abramowitz & Stegun 26.7.3–4):
    with θ = atan(x / √df), c = cos θ,

        df odd:   (2/π) (θ + sin θ (c + (2/3) c³ + (2·4)/(3·5) c⁵ + … + (2·4⋯(df−3))/(3·5⋯(df−2)) c^(df−2)))
        df even:  sin θ (1 + (1/2) c² + (1·3)/(2·4) c⁴ + … + (1·3⋯(df−3))/(2·4⋯(df−2)) c^(df−2))
    """
    if df < 1:
        raise ValueError("df must be at least 1")
    theta = math.atan(abs(x) / math.sqrt(df))
    c, s = math.cos(theta), math.sin(theta)
    if df % 2:
        total, term = 0.0, c
        for power in range(1, df - 1, 2):  # c, (2/3) c³, …: powers 1, 3, …, df − 2
            total += term
            term *= c * c * (power + 1) / (power + 2)
        return (2 / math.pi) * (theta + s * total) if df > 1 else 2 * theta / math.pi
    total, term = 0.0, 1.0
    for power in range(0, df - 1, 2):  # 1, (1/2) c², …: powers 0, 2, …, df − 2
        total += term
        term *= c * c * (power + 1) / (power + 2)
    return s * total


def student_t_upper(tail: float, df: int) -> float:
    """The x with P(T > x) = ``tail`` (0 < tail < ½) for integer ``df``: Newton's method on
    :func:`student_t_two_sided` with the t density, kept inside a bracket that bisection narrows when a Newton
    step would leave it."""
    target = 1.0 - 2.0 * tail
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    lo, hi = 0.0, 1.0
    while student_t_two_sided(hi, df) < target:
        lo, hi = hi, hi * 2.0
    x = (lo + hi) / 2
    for _ in range(100):
        gap = student_t_two_sided(x, df) - target
        if gap < 0:
            lo = x
        else:
            hi = x
        density = 2.0 * math.exp(log_norm - (df + 1) / 2 * math.log1p(x * x / df))  # of |T| at x
        step = x - gap / density if density > 0 else (lo + hi) / 2
        x_next = step if lo < step < hi else (lo + hi) / 2
        if abs(x_next - x) <= 1e-13 * max(1.0, x):
            return x_next
        x = x_next
    return x


def expansion(tail: float, n_tasks: int) -> float:
    """How much to widen a bootstrap percentile interval at ``tail`` (each side) built from ``n_tasks``
    resampled tasks, around the point: the *expanded percentile* interval (Hesterberg, "What Teachers Should
    Know About the Bootstrap", The American Statistician 69(4), 2015), which widens the percentile interval to
    the width of the t interval::

        f = √(T / (T − 1)) · t_(T−1)(1 − tail) / z(1 − tail)

    — the bootstrap's variance is (T − 1)/T of the unbiased one, and a t quantile replaces the normal one
    the percentile interval implicitly uses. f → 1 as T grows; infinite with one task (nothing to say)."""
    if n_tasks < 2:
        return math.inf
    z = NormalDist().inv_cdf(1.0 - tail)
    return math.sqrt(n_tasks / (n_tasks - 1)) * student_t_upper(tail, n_tasks - 1) / z


def tail_of(k: int, n_resamples: int) -> float:
    """The tail probability of the order statistics s(k) and s(B − 1 − k) of B resamples: (k + 1) / (B + 1)."""
    return (k + 1) / (n_resamples + 1)
