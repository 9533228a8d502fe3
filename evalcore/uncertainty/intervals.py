"""Each row's interval of the board's aggregate, at a level (marginal: each row's own), in closed form — no Monte
Carlo, so the ends do not move with the seed::

    on the comparison scale:  [θ̂⁻_i − q · se_i,  θ̂⁺_i + q · se_i],   q = t_df(1 − (1 − level)/2)

(q normal for the queries lens, Student t with T − 1 df for the tasks lens; θ̂⁻ / θ̂⁺ the tie range's ends, equal
to θ̂ without ties), then back to the aggregate's scale — exp for G, which keeps the interval positive and
asymmetric — and clipped to [0, ``upper``] (a metric bounded by one has an aggregate ≤ 1). Rows outside the
model (a zero task under G) get NaN: the aggregate is 0 by the benchmark's definition and is not an estimate.
"""
from __future__ import annotations

import math

import numpy as np

from evalcore.uncertainty.estimates import Estimates
from evalcore.uncertainty.student import t_upper


def quantile(level: float, df: int | None) -> float:
    """The two-sided critical value q of a row's interval at ``level``."""
    if not 0.0 < level < 1.0:
        raise ValueError("level must lie strictly between 0 and 1")
    return t_upper((1.0 - level) / 2.0, df)


def intervals(est: Estimates, level: float = 0.95, upper: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) per row on the aggregate's own scale (module docstring)."""
    q = quantile(level, est.df)
    with np.errstate(invalid="ignore", over="ignore"):
        lo = est.low - q * est.se
        hi = est.high + q * est.se
        if est.aggregate == "G":
            lo, hi = np.exp(lo), np.exp(hi)
    lo = np.clip(lo, 0.0, upper)
    hi = np.clip(hi, 0.0, upper)
    lo[~est.included] = np.nan
    hi[~est.included] = np.nan
    return lo, hi
