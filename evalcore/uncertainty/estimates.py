"""What both lenses hand to the rank sets and the tests: point estimates on the comparison scale, their standard
errors, the standard error of every pairwise difference and the reference distribution.

**The comparison scale.** A board ranked by the mean compares θ_i = (1/T) Σ_t x_it; a board ranked by G compares
θ_i = (1/T) Σ_t log x_it (G = exp θ), so that a difference is a log ratio and a standard error is relative.

**Pairwise statistics** (:meth:`Estimates.statistics`), for the ordered pair (i, j) — "i is better than j"::

    T_ij = (θ̂⁻_i − θ̂⁺_j) / se_ij          p_ij = P(T > T_ij)  (normal, or Student t with ``df``)

with θ̂⁻ ≤ θ̂ ≤ θ̂⁺ the aggregate with every tie broken against / for the system (equal to θ̂ where no tie
range is known): a pair counts as ordered only when it is ordered under the least favourable tie order, and a
pair tied on the aggregate has T ≤ 0, p ≥ ½. A pair whose difference has no spread (se_ij = 0: the same
difference on every task, or two copies) gets ±∞ when the difference is non-zero and 0 when it is zero — a
copy is never surely above or below its original.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalcore.uncertainty.student import upper_tail

LENSES = ("queries", "tasks")


@dataclass(frozen=True)
class Estimates:
    """One board's estimates under one lens (module docstring). Rows outside the model (``included`` False: a
    zero task under G) have NaN points and take no part in any comparison."""

    lens: str
    aggregate: str
    points: np.ndarray   # θ̂ on the comparison scale
    low: np.ndarray      # θ̂⁻: every tie broken against the system
    high: np.ndarray     # θ̂⁺: every tie broken for it
    se: np.ndarray       # standard error of θ̂
    pair_se: np.ndarray  # S × S standard error of θ̂_i − θ̂_j
    df: int | None       # Student t degrees of freedom (tasks lens: T − 1); None: normal
    included: np.ndarray  # bool per row
    task_values: np.ndarray | None = None  # tasks lens: the values y_it on the comparison scale (rows × tasks)

    @property
    def size(self) -> int:
        return int(self.points.shape[0])

    def statistics(self) -> np.ndarray:
        """T_ij for every ordered pair (module docstring); NaN on the diagonal and for excluded rows."""
        difference = self.low[:, None] - self.high[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            t = difference / self.pair_se
            flat = self.pair_se == 0
            t[flat] = np.where(difference[flat] > 0, np.inf, np.where(difference[flat] < 0, -np.inf, 0.0))
        t[~(self.included[:, None] & self.included[None, :])] = np.nan
        np.fill_diagonal(t, np.nan)
        return t

    def p_values(self) -> np.ndarray:
        """p_ij = P(T > T_ij) for every ordered pair (NaN where T_ij is)."""
        return upper_tail(self.statistics(), self.df)


def pair_standard_errors(cov: np.ndarray) -> np.ndarray:
    """se_ij = √(Σ_ii + Σ_jj − 2 Σ_ij) of a covariance matrix, with round-off below 1e-12 of the largest
    variance taken as exactly 0."""
    diagonal = np.diagonal(cov)
    variance = diagonal[:, None] + diagonal[None, :] - 2.0 * cov
    finite = diagonal[np.isfinite(diagonal)]
    scale = float(finite.max()) if finite.size else 0.0
    variance[variance <= 1e-12 * scale] = 0.0
    return np.sqrt(variance)
