"""A direct, slow port of csranks' rank confidence sets, for tests only: the independent reference the engine's
rank sets are compared with.

Source: the R package csranks (Mogstad, Romano, Shaikh & Wilhelm, "Inference for Ranks with Applications to
Mobility across Neighbourhoods and Academic Achievement across Countries", Review of Economic Studies 91(1),
2024), github.com/danielwilhelm/R-CS-ranks, files R/ranks.R (``csranks``, ``csranks_simul``, ``csranks_marg``)
and R/diffmeans.R (``csdiffmeans``). What it does, line for line:

- Given estimates x (p values, larger = better = rank 1) and their covariance Σ, every ordered pair (i, j) has
  the difference θ̂_i − θ̂_j and its standard deviation s_ij = √(Σ_ii + Σ_jj − 2Σ_ij).
- Two-sided with step-down (csranks' default) is run as the one-sided "lower" family over *every ordered
  pair* in I0: L_ij = θ̂_i − θ̂_j − s_ij · q, where q is the ``coverage`` quantile (R's type 7 = numpy's
  linear) of max_{(i,j) ∈ I} (Z_i − Z_j) / s_ij over R parametric draws Z ~ N(0, Σ) (fresh draws at each step);
  (i, j) is rejected ("i surely above j") when L_ij > 0; the rejected pairs leave I and q is recomputed on what
  is left, until a step rejects nothing new or nothing is left.
- Simultaneous (``simul=TRUE``): I0 = all ordered pairs. Marginal (``simul=FALSE``): for each i separately,
  I0 = the ordered pairs that involve i (row i and column i), i.e. 2(p − 1) hypotheses.
- Rank set of i: [1 + #{j : L_ji > 0}, p − #{j : L_ij > 0}].

Two additions, both outside what csranks defines: a pair with s_ij = 0 (no uncertainty in the difference) is left
out of the maximum and rejected iff θ̂_i > θ̂_j; the draws come from a symmetric square root of Σ (eigenvalues
clipped at 0), so a singular Σ — fewer tasks than systems — is drawn from as it is.

Also here, for the harness: the plug-in estimates of both lenses (:func:`tasks_estimates`,
:func:`queries_estimates_published`, :func:`queries_estimates_per_query`), closed-form marginal intervals, and
the one-sided max-t step-down for the adjacent pairs (:func:`adjacent_differ`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from scipy import stats


# -- csranks ---------------------------------------------------------------------------------------------------
def difference_sds(sigma: np.ndarray) -> np.ndarray:
    """s_ij = √(Σ_ii + Σ_jj − 2Σ_ij) (``calculate_difference_sds``), negative rounding clipped to 0."""
    d = np.diag(sigma)
    return np.sqrt(np.maximum(d[:, None] + d[None, :] - 2 * sigma, 0.0))


def normal_draws(sigma: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n × p) draws of N(0, Σ) (``MASS::mvrnorm``), through a symmetric square root of Σ."""
    values, vectors = np.linalg.eigh((sigma + sigma.T) / 2)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    return rng.standard_normal((n, sigma.shape[0])) @ root.T


def max_quantile(sigma: np.ndarray, pairs: np.ndarray, sd: np.ndarray, coverage: float, draws: int,
                 rng: np.random.Generator, fixed: np.ndarray | None = None) -> float:
    """The ``coverage`` quantile of max over ``pairs`` ((k × 2) ordered (i, j)) of (Z_i − Z_j) / s_ij
    (``LInv(I, beta, max)``), from fresh draws — or from the draws ``fixed`` (n × p) when given."""
    z = normal_draws(sigma, draws, rng) if fixed is None else fixed
    scaled = (z[:, pairs[:, 0]] - z[:, pairs[:, 1]]) / sd[pairs[:, 0], pairs[:, 1]]
    return float(np.quantile(scaled.max(axis=1), coverage))


def stepdown_lower(x: np.ndarray, sigma: np.ndarray, family: np.ndarray, coverage: float, draws: int,
                   rng: np.random.Generator, fixed: np.ndarray | None = None) -> np.ndarray:
    """Bool (p × p): rejected[i, j] = "θ_i > θ_j" rejected at ``coverage`` by csdiffmeans' one-sided ("lower")
    step-down over the ordered pairs ``family`` (bool p × p); ``fixed``: the same draws at every step (csranks
    draws afresh; the brute-force check of the step-down needs one set)."""
    x = np.asarray(x, dtype=np.float64)
    sigma = np.asarray(sigma, dtype=np.float64)
    diff = x[:, None] - x[None, :]
    sd = difference_sds(sigma)
    active = family.copy()
    np.fill_diagonal(active, False)
    rejected = np.zeros_like(active)
    certain = active & (sd == 0)  # no uncertainty: decided by the estimates themselves
    rejected |= certain & (diff > 0)
    active &= ~certain
    while active.any():
        pairs = np.argwhere(active)
        q = max_quantile(sigma, pairs, sd, coverage, draws, rng, fixed)
        lower = diff[active] - sd[active] * q
        new = np.zeros_like(active)
        new[active] = lower > 0
        if not new.any():
            break
        rejected |= new
        active &= ~new
    return rejected


@dataclass(frozen=True)
class Sets:
    rank_lo: np.ndarray
    rank_hi: np.ndarray
    above: np.ndarray  # above[i, j]: j surely above i


def _sets(rejected_rows: list[np.ndarray], p: int) -> Sets:
    above = np.zeros((p, p), dtype=bool)
    below = np.zeros((p, p), dtype=bool)
    for i, rejected in enumerate(rejected_rows):
        above[i] = rejected[:, i]  # L_ji > 0: j surely above i
        below[i] = rejected[i, :]  # L_ij > 0: i surely above j
    return Sets(1 + above.sum(axis=1), p - below.sum(axis=1), above)


def csranks(x: np.ndarray, sigma: np.ndarray, coverage: float = 0.95, simul: bool = False, draws: int = 1000,
            seed: int = 0) -> Sets:
    """csranks(x, Sigma, coverage, cstype="two-sided", stepdown=TRUE, R=draws, simul): rank 1 = largest x."""
    x = np.asarray(x, dtype=np.float64)
    p = len(x)
    rng = np.random.default_rng(seed)
    if simul:
        rejected = stepdown_lower(x, sigma, np.ones((p, p), dtype=bool), coverage, draws, rng)
        return _sets([rejected] * p, p)
    rows = []
    for i in range(p):
        family = np.zeros((p, p), dtype=bool)
        family[i, :] = True
        family[:, i] = True
        rows.append(stepdown_lower(x, sigma, family, coverage, draws, rng))
    return _sets(rows, p)


def adjacent_differ(x: np.ndarray, sigma: np.ndarray, order: np.ndarray, coverage: float = 0.95,
                    draws: int = 2000, seed: int = 0) -> np.ndarray:
    """Bool per adjacent pair of ``order`` (best first): "upper better than lower" rejected by the one-sided
    max-t step-down over the adjacent pairs only (csdiffmeans "lower" with that family)."""
    p = len(x)
    family = np.zeros((p, p), dtype=bool)
    order = np.asarray(order)
    family[order[:-1], order[1:]] = True
    rejected = stepdown_lower(x, sigma, family, coverage, draws, np.random.default_rng(seed))
    return rejected[order[:-1], order[1:]]


# -- plug-in estimates of the two lenses ------------------------------------------------------------------------
@dataclass(frozen=True)
class Estimates:
    """θ̂ per system on the scale tests are made (mean, or mean of logs for G), its covariance, the degrees of
    freedom of a t reference (None: normal) and how to map θ to the aggregate's own scale."""

    theta: np.ndarray
    sigma: np.ndarray
    df: int | None
    aggregate: str

    def to_scale(self, values: np.ndarray) -> np.ndarray:
        return np.exp(values) if self.aggregate == "G" else values


def tasks_estimates(scores: np.ndarray, aggregate: str) -> Estimates:
    """Tasks lens: y_it = x_it (mean) or log x_it (G); θ̂_i = mean_t y_it; Σ̂ = sample covariance over tasks / T;
    t reference with T − 1 degrees of freedom."""
    scores = np.asarray(scores, dtype=np.float64)
    y = np.log(scores) if aggregate == "G" else scores
    n_tasks = y.shape[1]
    return Estimates(y.mean(axis=1), np.cov(y, ddof=1) / n_tasks, n_tasks - 1, aggregate)


def wilson_mean(mean: np.ndarray, n: np.ndarray, z: float) -> np.ndarray:
    """μ̃ = (n μ + z²/2) / (n + z²)."""
    return (n * mean + z * z / 2) / (n + z * z)


def queries_estimates_published(scores: np.ndarray, n_queries: np.ndarray, aggregate: str,
                                z: float = 2.0) -> Estimates:
    """Queries lens for rows with task scores only: v_it = μ̃(1 − μ̃) / n_t (Bhatia–Davis at the Wilson-adjusted
    mean; z = 2 is Agresti–Coull's (n x + 2)/(n + 4)), systems independent; mean: Var = Σ_t v_t / T²; G (on the
    log scale): Σ_t v_t / (x_t² T²)."""
    scores = np.asarray(scores, dtype=np.float64)
    n = np.asarray(n_queries, dtype=np.float64)[None, :]
    v = wilson_mean(scores, n, z) * (1 - wilson_mean(scores, n, z)) / n
    n_tasks = scores.shape[1]
    if aggregate == "G":
        return Estimates(np.log(scores).mean(axis=1), np.diag((v / scores ** 2).sum(axis=1) / n_tasks ** 2),
                         None, aggregate)
    return Estimates(scores.mean(axis=1), np.diag(v.sum(axis=1) / n_tasks ** 2), None, aggregate)


def queries_estimates_per_query(per_query: list[np.ndarray], aggregate: str) -> Estimates:
    """Queries lens for rows with per-query values (``per_query``: one (systems × n_t) array per task, paired on
    the task's queries): task means, their empirical covariance Cov_t = cov(queries) / n_t, the delta method
    for G."""
    means = np.stack([q.mean(axis=1) for q in per_query], axis=1)  # systems × tasks
    covs = [np.cov(q, ddof=1) / q.shape[1] for q in per_query]
    n_tasks = means.shape[1]
    if aggregate == "G":
        sigma = sum(c / np.outer(means[:, t], means[:, t]) for t, c in enumerate(covs)) / n_tasks ** 2
        return Estimates(np.log(means).mean(axis=1), sigma, None, aggregate)
    return Estimates(means.mean(axis=1), sum(covs) / n_tasks ** 2, None, aggregate)


def critical(level: float, df: int | None) -> float:
    tail = 1 - (1 - level) / 2
    return float(stats.t.ppf(tail, df)) if df is not None else NormalDist().inv_cdf(tail)


def intervals(est: Estimates, level: float = 0.95, upper: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """Marginal closed-form intervals θ̂ ± c·se on the aggregate's own scale, clipped to [0, upper]."""
    se = np.sqrt(np.diag(est.sigma))
    c = critical(level, est.df)
    lo, hi = est.to_scale(est.theta - c * se), est.to_scale(est.theta + c * se)
    return np.maximum(lo, 0.0), np.minimum(hi, upper)
