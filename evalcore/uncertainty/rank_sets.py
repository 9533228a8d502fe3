"""Rank confidence sets from step-down multiple testing of all pairwise comparisons — the construction of
Mogstad, Romano, Shaikh & Wilhelm, "Inference for Ranks with Applications to Mobility across Neighbourhoods and
Academic Achievement across Countries", Review of Economic Studies 91(1), 2024 — with Holm's step-down
(Holm, "A Simple Sequentially Rejective Multiple Test Procedure", Scandinavian Journal of Statistics 6(2), 1979)
on each lens' exact studentized p-values (:mod:`evalcore.uncertainty.estimates`).

**Hypotheses.** For every ordered pair (i, j), H_ij: θ_i ≤ θ_j ("i is not better than j"), with the one-sided
p-value p_ij of T_ij = (θ̂⁻_i − θ̂⁺_j)/se_ij. Rejecting H_ij says *i is surely above j*. A family of m
hypotheses is tested by Holm's step-down: with its p-values sorted, p_(1) ≤ … ≤ p_(m), reject H_(1), …, H_(r)
for the largest r such that p_(s) ≤ α / (m − s + 1) for every s ≤ r. The chance of rejecting any true
hypothesis of the family is at most α = 1 − level, under any dependence between the tests — so the sets rest
only on each pair's own test being valid, not on a model of the joint law, and they have no Monte Carlo error:
the same board gives the same sets, whatever the seed.

**Two kinds of set:**

- *marginal* — for each system k its own family F_k = {(k, j), (j, k) : j ≠ k} (m = 2(S⁺ − 1)): k's set covers
  k's true rank with probability ≥ level, each row on its own;
- *simultaneous* — one family of all S⁺(S⁺ − 1) ordered pairs: every row's set covers its true rank at once, with
  probability ≥ level (wider).

**The sets**::

    rank_lo_k = 1 + #{j : j surely above k}        rank_hi_k = S⁺ − #{j : j surely below k}

with S⁺ the rows inside the model, the decisions taken in k's own family (marginal) or in the one family
(simultaneous). If every rejection is right, k's true rank lies in [rank_lo_k, rank_hi_k], which is why the
family-wise error bounds the miss. A pair tied on the aggregate (T ≤ 0, p ≥ ½) is never decided, in either
direction. Rows outside the model (a zero task under G: G = 0 by the benchmark's definition) are tied below
every other row: their set is [S⁺ + 1, S], and every other row is above them.

Holm's thresholds are Bonferroni's made sequential; Mogstad et al.'s max-t bootstrap critical values are
sharper when the comparisons are strongly dependent, at the price of a joint normal model and Monte Carlo error.
docs/DESIGN.md § Uncertainty reports both sets' widths on the same boards (the max-t one as a reference in the
tests) and the coverage of these.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalcore.uncertainty.estimates import Estimates

KINDS = ("marginal", "simultaneous")


@dataclass(frozen=True)
class RankSets:
    """Per row: ``rank_lo`` / ``rank_hi`` (int64, 1-based) and ``above`` (bool S × S: ``above[i, j]`` = j is
    surely above i, as row i's family decided)."""

    kind: str
    rank_lo: np.ndarray
    rank_hi: np.ndarray
    above: np.ndarray


def holm_rejections(p_values: np.ndarray, alpha: float) -> np.ndarray:
    """Which of the p-values (one family, any shape; NaN = not in the family) Holm's step-down rejects at
    ``alpha`` (module docstring)."""
    p = np.asarray(p_values, dtype=np.float64)
    flat = p.ravel()
    tested = np.flatnonzero(~np.isnan(flat))
    m = tested.size
    rejected = np.zeros(flat.shape, dtype=bool)
    if m:
        order = tested[np.argsort(flat[tested], kind="stable")]
        passes = flat[order] <= alpha / (m - np.arange(m))
        r = m if passes.all() else int(np.argmin(passes))
        rejected[order[:r]] = True
    return rejected.reshape(p.shape)


def rank_sets(est: Estimates, level: float = 0.95, kind: str = "marginal") -> RankSets:
    """The rank sets of ``kind`` ("marginal" or "simultaneous") at ``level`` (module docstring)."""
    if not 0.0 < level < 1.0:
        raise ValueError("level must lie strictly between 0 and 1")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    alpha = 1.0 - level
    rows = np.flatnonzero(est.included)
    n = len(rows)
    p = est.p_values()[np.ix_(rows, rows)]  # [i, j]: H_ij "i not better than j"; NaN on the diagonal
    if kind == "simultaneous":
        surely = holm_rejections(p, alpha)  # [i, j]: i surely above j
        above_in, below_in = surely.T, surely
    else:
        above_in = np.zeros((n, n), dtype=bool)
        below_in = np.zeros((n, n), dtype=bool)
        for k in range(n):
            rejected = holm_rejections(np.concatenate([p[k], p[:, k]]), alpha)  # (k, j) then (j, k)
            below_in[k], above_in[k] = rejected[:n], rejected[n:]
    size = est.size
    above = np.zeros((size, size), dtype=bool)
    above[np.ix_(rows, rows)] = above_in
    excluded = np.flatnonzero(~est.included)
    above[np.ix_(excluded, rows)] = True  # every row in the model is above a row outside it
    rank_lo = np.empty(size, dtype=np.int64)
    rank_hi = np.empty(size, dtype=np.int64)
    rank_lo[rows] = 1 + above_in.sum(axis=1)
    rank_hi[rows] = n - below_in.sum(axis=1)
    rank_lo[excluded] = n + 1
    rank_hi[excluded] = size
    return RankSets(kind, rank_lo, rank_hi, above)
