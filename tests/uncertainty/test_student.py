"""evalcore.uncertainty.student: the normal and Student t distributions in closed form, against scipy.stats (the
reference) for every integer df from 1 to 40 and the normal, x from 0 to 50; and the Abramowitz & Stegun series
of the module docstring, spelled out term by term with exact rational coefficients."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from evalcore.uncertainty import student

DFS = [*range(1, 41), None]
X = np.concatenate([np.linspace(0.0, 5.0, 101), np.linspace(5.0, 50.0, 91)[1:], [0.01, 1.96, 2.576]])


def reference(df):
    return stats.norm if df is None else stats.t(df)


def series(x: float, df: int) -> float:
    """P(|T| ≤ x) as A&S 26.7.3 (odd df) / 26.7.4 (even df) write it: coefficient products as exact fractions."""
    theta = math.atan(x / math.sqrt(df))
    c, s = math.cos(theta), math.sin(theta)
    total = 0.0
    if df % 2:
        # (2/π)(θ + s(c + (2/3)c³ + (2·4)/(3·5)c⁵ + … + (2·4⋯(df−3))/(3·5⋯(df−2)) c^(df−2)))
        for power in range(1, df - 1, 2):
            coefficient = Fraction(1)
            for even in range(2, power, 2):
                coefficient *= Fraction(even, even + 1)
            total += float(coefficient) * c ** power
        return 2 / math.pi * (theta + s * total)
    # s(1 + (1/2)c² + (1·3)/(2·4)c⁴ + … + (1·3⋯(df−3))/(2·4⋯(df−2)) c^(df−2))
    for power in range(0, df - 1, 2):
        coefficient = Fraction(1)
        for odd in range(1, power, 2):
            coefficient *= Fraction(odd, odd + 1)
        total += float(coefficient) * c ** power
    return s * total


@pytest.mark.parametrize("df", DFS)
def test_upper_tail_is_scipys_survival_function(df):
    found = student.upper_tail(X, df)
    want = reference(df).sf(X)
    # (1 − P(|T| ≤ x))/2 carries an absolute round-off of a few 1e-16 (the docstring: p below ~1e-15 is 0)
    np.testing.assert_allclose(found, want, rtol=1e-9, atol=2e-15)
    assert (found >= 0).all() and (found <= 0.5).all()
    np.testing.assert_allclose(student.upper_tail(-X, df), 1 - want, rtol=1e-12, atol=2e-15)  # T < 0: p ≥ ½


@pytest.mark.parametrize("df", DFS)
def test_two_sided_is_the_central_probability(df):
    want = reference(df).cdf(X) - reference(df).cdf(-X)
    np.testing.assert_allclose(student.t_two_sided(X, df), want, rtol=1e-12, atol=3e-15)
    np.testing.assert_array_equal(student.t_two_sided(-X, df), student.t_two_sided(X, df))


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 8, 16, 17, 39, 40])
def test_the_docstrings_series_term_by_term(df):
    for x in (0.0, 0.3, 1.0, 2.5, 7.0, 30.0):
        assert float(student.t_two_sided(x, df)) == pytest.approx(series(x, df), rel=1e-13, abs=1e-15)


@pytest.mark.parametrize("df", DFS)
def test_p_values_near_zero_are_tiny_never_negative_and_decide_like_scipy(df):
    x = np.array([8.0, 12.0, 20.0, 35.0, 50.0, 1e6, np.inf])
    found = student.upper_tail(x, df)
    want = reference(df).sf(x)
    assert (found >= 0).all() and np.abs(found - want).max() <= 2e-15
    assert found[-1] == 0.0
    for threshold in (1e-9, 0.05 / 272, 0.05 / 16):  # every decision compares p with thresholds above 1e-9
        np.testing.assert_array_equal(found <= threshold, want <= threshold)


def test_infinities_and_nan():
    for df in (1, 2, 7, None):
        found = student.upper_tail([np.inf, -np.inf, np.nan, 0.0], df)
        assert found[0] == 0.0 and found[1] == 1.0 and np.isnan(found[2]) and found[3] == 0.5
        assert student.t_two_sided(np.inf, df) == 1.0
    assert student.t_two_sided(np.array([]), None).shape == (0,)


@pytest.mark.parametrize("df", DFS)
def test_near_zero_the_central_probability_is_twice_the_density_at_zero(df):
    """P(|T| ≤ x) = 2 x f(0) + O(x³), f(0) = Γ((df+1)/2) / (√(df π) Γ(df/2)) (normal: 1/√(2π)) — where scipy's
    cdf differences lose every digit (its Cauchy sf(1e-9) is 0.5 exactly)."""
    density = 1 / math.sqrt(2 * math.pi) if df is None else math.exp(
        math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    for x in (1e-12, 1e-9, 1e-6):
        assert float(student.t_two_sided(x, df)) == pytest.approx(2 * x * density, rel=1e-9)
        assert float(student.upper_tail(x, df)) == pytest.approx(0.5 - x * density, abs=1e-15)


@pytest.mark.parametrize("df", DFS)
def test_t_upper_is_scipys_inverse_survival_function(df):
    for tail in (0.49, 0.3, 0.1, 0.05, 0.025, 0.01, 0.005, 0.001, 1e-4, 0.05 / 272, 1e-6):
        assert student.t_upper(tail, df) == pytest.approx(reference(df).isf(tail), rel=1e-9)


@pytest.mark.parametrize("df", DFS)
def test_t_upper_in_the_far_tail_is_exact_to_the_precision_of_one_minus_twice_the_tail(df):
    """The inversion solves P(|T| ≤ x) = 1 − 2·tail, a double with an absolute error of ~1e-16: the quantile of
    tail 1e-9 is right to ~1e-16 in its tail probability (~1e-7 relative in x for df = 1), not to 1e-9 in x."""
    for tail in (1e-7, 1e-9, 1e-11):
        found = student.t_upper(tail, df)
        assert abs(reference(df).sf(found) - tail) <= 2e-16


def test_normal_upper_is_the_normal_quantile():
    for tail in (0.4, 0.025, 1e-5):
        assert student.normal_upper(tail) == pytest.approx(stats.norm.isf(tail), rel=1e-12)


@pytest.mark.parametrize("tail", [0.0, 0.5, 0.7, -0.1])
def test_t_upper_refuses_a_tail_outside_zero_half(tail):
    with pytest.raises(ValueError, match="tail"):
        student.t_upper(tail, 5)


def test_df_below_one_is_refused():
    with pytest.raises(ValueError, match="df"):
        student.t_two_sided(1.0, 0)
