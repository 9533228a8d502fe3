"""evalcore.uncertainty.paired_test: the Compare view's paired randomization (sign-flip) test over queries,
against exhaustive enumeration of the sign vectors; its extremes; its seed."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from evalcore.uncertainty.paired_test import paired_randomization_test


def test_randomization_p_matches_exhaustive_enumeration():
    rng = np.random.default_rng(3)
    diffs = [rng.normal(0.3, 1, 7), rng.normal(0.3, 1, 6)]
    weights = np.concatenate([d / (d.size * 2) for d in diffs])
    observed = weights.sum()
    signs = np.array(list(itertools.product([-1, 1], repeat=13)))
    exact_p = np.mean(np.abs(signs @ weights) >= abs(observed) - 1e-12)
    statistic, p = paired_randomization_test(diffs, n_resamples=40000, seed=1)
    assert statistic == pytest.approx(np.mean([d.mean() for d in diffs]))
    # Monte Carlo error: sd ≈ sqrt(p(1-p)/n) ≤ 0.0025
    assert abs(p - exact_p) < 0.01


def test_randomization_identical_systems_and_clear_difference():
    zeros = [np.zeros(50)]
    assert paired_randomization_test(zeros, 1000)[1] == 1.0
    clear = [np.full(200, 0.2) + np.random.default_rng(0).normal(0, 0.01, 200)]
    assert paired_randomization_test(clear, 2000)[1] == pytest.approx(1 / 2001)


def test_randomization_test_is_reproducible_from_its_seed():
    rng = np.random.default_rng(1)
    differences = [rng.normal(0.01, 0.2, 300), rng.normal(0.0, 0.2, 200)]  # p far from 0 and 1
    first = paired_randomization_test(differences, n_resamples=2000, seed=5)
    assert paired_randomization_test(differences, n_resamples=2000, seed=5) == first
    assert 0.05 < first[1] < 0.95
    assert paired_randomization_test(differences, n_resamples=2000, seed=6)[1] != first[1]
    with pytest.raises(ValueError, match="^no paired queries$"):
        paired_randomization_test([np.array([])])
