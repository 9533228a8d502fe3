"""evalcore.aggregate.holm_adjusted: the Holm–Bonferroni adjusted p-values Compare shows beside its pairs'
p-values. Checked against a hand computation and against a brute-force reference that does not use the closed
form: Holm's procedure is the closed test of Bonferroni tests (Marcus, Peritz & Gabriel 1976), so a
hypothesis' adjusted p-value is the largest Bonferroni p-value, |S| · min_{j∈S} p_j, over every subset S of the
hypotheses that contains it (capped at 1). (statsmodels' ``multipletests(method="holm")`` would be another
reference; statsmodels is not a dependency of the project, nor installed in .venv.)"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.aggregate import holm_adjusted


def closed_testing_holm(p_values) -> list[float]:
    """Brute force: max over the subsets containing i of the subset's Bonferroni p-value (2^m subsets)."""
    p = list(p_values)
    m = len(p)
    adjusted = []
    for i in range(m):
        others = [j for j in range(m) if j != i]
        worst = 0.0
        for size in range(m):
            for subset in itertools.combinations(others, size):
                members = (i, *subset)
                worst = max(worst, len(members) * min(p[j] for j in members))
        adjusted.append(min(1.0, worst))
    return adjusted


def test_hand_computed_six_pairs():
    # sorted: 0.001·6 = 0.006, 0.004·5 = 0.020, 0.012·4 = 0.048, 0.02·3 = 0.06, 0.3·2 = 0.6, 0.7·1 → 0.7
    p = [0.02, 0.7, 0.001, 0.3, 0.012, 0.004]
    assert holm_adjusted(p).tolist() == pytest.approx([0.06, 0.7, 0.006, 0.6, 0.048, 0.020], abs=1e-15)


def test_hand_computed_monotone_step_and_cap():
    # sorted: 0.01·4 = 0.04, 0.02·3 = 0.06, 0.025·2 = 0.05 → raised to 0.06 (never below the one before),
    # 0.9·1 = 0.9; and 0.4·4 = 1.6 is capped at 1
    assert holm_adjusted([0.025, 0.9, 0.01, 0.02]).tolist() == pytest.approx([0.06, 0.9, 0.04, 0.06])
    assert holm_adjusted([0.4, 0.5, 0.6, 0.7]).tolist() == [1.0, 1.0, 1.0, 1.0]


def test_one_test_is_its_own_p_value_and_none_is_empty():
    assert holm_adjusted([0.037]).tolist() == [0.037]
    assert holm_adjusted([]).tolist() == []


def test_a_missing_p_value_stays_missing_and_does_not_count():
    adjusted = holm_adjusted([0.01, float("nan"), 0.04])
    assert np.isnan(adjusted[1])
    assert adjusted[[0, 2]].tolist() == pytest.approx([0.02, 0.04])  # m = 2, not 3


@pytest.mark.parametrize("bad", [[-0.1], [1.5], [0.2, 2.0]])
def test_a_value_outside_zero_one_is_refused(bad):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm_adjusted(bad)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 1e-4, 0.05, 0.5, 1.0])),
                min_size=1, max_size=7))
def test_matches_closed_testing_brute_force(p):
    assert holm_adjusted(p).tolist() == pytest.approx(closed_testing_holm(p), rel=1e-12, abs=1e-15)

