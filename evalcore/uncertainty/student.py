"""The reference distributions, in closed form (no scipy at run time): the standard normal and Student's t with an
integer number of degrees of freedom.

Student's t, P(|T| ≤ x) for df ≥ 1 (Abramowitz & Stegun 26.7.3–4): with θ = atan(x / √df), c = cos θ, s = sin θ::

    df odd:   (2/π) (θ + s (c + (2/3) c³ + (2·4)/(3·5) c⁵ + … + (2·4⋯(df−3))/(3·5⋯(df−2)) c^(df−2)))
    df even:  s (1 + (1/2) c² + (1·3)/(2·4) c⁴ + … + (1·3⋯(df−3))/(2·4⋯(df−2)) c^(df−2))

:func:`t_two_sided` evaluates it for a whole array at once (one pass of the series per term, vectorised over x);
:func:`t_upper` inverts it by Newton's method inside a bisection bracket. The upper tail of either distribution
is computed as (1 − P(|T| ≤ x)) / 2, so p-values below ~1e-15 come out as 0: every decision here compares them
with thresholds above 1e-9.
"""
from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

_NORMAL = NormalDist()


def normal_upper(tail: float) -> float:
    """The z with P(Z > z) = ``tail`` (0 < tail < 1)."""
    return _NORMAL.inv_cdf(1.0 - tail)


def t_two_sided(x, df: int | None) -> np.ndarray:
    """P(|T| ≤ |x|) elementwise, for Student's t with ``df`` degrees of freedom (None: the standard normal)."""
    x = np.abs(np.asarray(x, dtype=np.float64))
    if df is None:
        return np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2.0)) if x.size else x.copy()
    if df < 1:
        raise ValueError("df must be at least 1")
    with np.errstate(invalid="ignore"):
        theta = np.arctan(x / math.sqrt(df))
    c, s = np.cos(theta), np.sin(theta)
    if df % 2:
        total, term = np.zeros_like(x), c.copy()
        for power in range(1, df - 1, 2):  # c, (2/3) c³, …: powers 1, 3, …, df − 2
            total += term
            term = term * c * c * (power + 1) / (power + 2)
        out = (2.0 / math.pi) * (theta + s * total)
    else:
        total, term = np.zeros_like(x), np.ones_like(x)
        for power in range(0, df - 1, 2):  # 1, (1/2) c², …: powers 0, 2, …, df − 2
            total += term
            term = term * c * c * (power + 1) / (power + 2)
        out = s * total
    return np.where(np.isinf(x), 1.0, out)


def upper_tail(x, df: int | None) -> np.ndarray:
    """P(T > x) elementwise (one-sided p-value of an observed x; NaN stays NaN)."""
    x = np.asarray(x, dtype=np.float64)
    inner = t_two_sided(x, df)
    half = np.clip((1.0 - inner) / 2.0, 0.0, 0.5)
    return np.where(np.isnan(x), np.nan, np.where(x >= 0, half, 1.0 - half))


def t_upper(tail: float, df: int | None) -> float:
    """The x with P(T > x) = ``tail`` (0 < tail < ½) for integer ``df`` (None: normal)."""
    if not 0.0 < tail < 0.5:
        raise ValueError("tail must lie strictly between 0 and 1/2")
    if df is None:
        return normal_upper(tail)
    target = 1.0 - 2.0 * tail
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    lo, hi = 0.0, 1.0
    while float(t_two_sided(hi, df)) < target:
        lo, hi = hi, hi * 2.0
    x = (lo + hi) / 2
    for _ in range(200):
        gap = float(t_two_sided(x, df)) - target
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
