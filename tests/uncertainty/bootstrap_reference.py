"""The per-query percentile bootstrap of every shipped per-query row, for tests and scripts only: the reference the
queries lens' bound for published rows is checked against.

A *row* is one system's values on one task under one condition (setting, precision, instruction, metric, tie
policy) and one kind of value (``oblivious``: the tie policy's order; ``expected``: over all tie orders), from
``data/real/query_metrics/*.parquet``. Its task score is the mean x of its n per-query values; the percentile
bootstrap interval of x at 95% is the 2.5% and 97.5% quantiles of the mean of n values drawn with replacement.

- A row with one or two distinct values {a, b} (every 0/1 row): the resampled mean is a + (b − a)·K/n with
  K ~ Binomial(n, share of b), so the quantiles are exact (``scipy.stats.binom.ppf``: the smallest k whose
  cumulative probability reaches the level).
- A row with three or more distinct values: ``resamples`` draws of the counts of each value,
  Multinomial(n, shares) (one draw of counts is one resample), and ``numpy.quantile`` of their means. Its
  Monte Carlo error, the standard error of a sample quantile, is √(a(1 − a)/B) / φ(z_a) · σ*, σ* = sd/√n the
  bootstrap distribution's spread (normal limit): about 0.06 σ* at B = 2,000 (``mc_se``).

Rows whose values are the same (the expected value under both tie policies, or two conditions with the same
values) are bootstrapped once.
"""
from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd
from scipy import stats

KEYS = ["system", "task", "setting", "precision", "instruction", "metric", "tie_policy"]
VALUES = ("oblivious", "expected")
LEVEL = 0.95
ZERO_ONE_METRICS = ("p@1", "recall@100")
"""Metrics whose per-query values are 0 or 1 (one relevant answer per query): Bhatia–Davis is attained."""


def mc_se(resamples: int, level: float = LEVEL) -> float:
    """The Monte Carlo standard error of a bootstrap quantile at the interval's ends, in units of σ*."""
    a = (1 - level) / 2
    return math.sqrt(a * (1 - a) / resamples) / NormalDist().pdf(NormalDist().inv_cdf(a))


def percentile_interval(values: np.ndarray, resamples: int, rng: np.random.Generator,
                        level: float = LEVEL) -> tuple[float, float, str]:
    """(lo, hi, how) of the percentile bootstrap of the mean of ``values`` (module docstring); ``how`` is
    "exact" or "resampled"."""
    n = len(values)
    a = (1 - level) / 2
    levels, counts = np.unique(values, return_counts=True)
    if len(levels) == 1:
        return float(levels[0]), float(levels[0]), "exact"
    if len(levels) == 2:
        k = stats.binom.ppf([a, 1 - a], n, counts[1] / n)
        lo, hi = levels[0] + (levels[1] - levels[0]) * k / n
        return float(lo), float(hi), "exact"
    means = rng.multinomial(n, counts / n, size=resamples) @ levels / n
    lo, hi = np.quantile(means, [a, 1 - a])
    return float(lo), float(hi), "resampled"


def shipped_rows(data_dir: Path, resamples: int, seed: int = 0, only: set | None = None) -> pd.DataFrame:
    """One row per shipped per-query row (module docstring): its keys, ``value``, n, x, the values' sd (ddof 0),
    the number of distinct values, and the bootstrap interval ``boot_lo`` / ``boot_hi`` with ``how``; ``only``:
    just the rows whose (*keys, value) it holds (to repeat some with more resamples)."""
    rng = np.random.default_rng(seed)
    done: dict = {}
    found = []
    for path in sorted((Path(data_dir) / "real" / "query_metrics").glob("*.parquet")):
        frame = pd.read_parquet(path, columns=[*KEYS, *VALUES])
        for value in VALUES:
            for key, series in frame.groupby(KEYS, observed=True, sort=True)[value]:
                if only is not None and (*key, value) not in only:
                    continue
                v = np.sort(series.to_numpy(dtype=np.float64))
                signature = v.tobytes()
                if signature not in done:
                    done[signature] = percentile_interval(v, resamples, rng)
                lo, hi, how = done[signature]
                found.append((*key, value, len(v), float(v.mean()), float(v.std()), len(np.unique(v)), lo, hi, how))
    return pd.DataFrame(found, columns=[*KEYS, "value", "n", "x", "sd", "levels", "boot_lo", "boot_hi", "how"])
