"""evalcore.aggregate against independent references: scipy.stats (gmean, rankdata, kendalltau), plain
numpy / Python loops and hand-built cases."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evalcore import aggregate


# -- G, ranks, Borda, Kendall ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(5))
def test_geometric_mean_matches_scipy(seed):
    x = np.random.default_rng(seed).uniform(0.01, 1, size=(30, 17))
    np.testing.assert_allclose(aggregate.geometric_mean(x, axis=1), stats.gmean(x, axis=1), rtol=1e-12)


def test_geometric_mean_zero_and_nan():
    assert aggregate.geometric_mean(np.array([0.5, 0.0, 0.9])) == 0.0
    assert np.isnan(aggregate.geometric_mean(np.array([0.5, np.nan])))
    assert aggregate.geometric_mean(np.array([0.25, 1.0])) == pytest.approx(0.5)  # sqrt(0.25 * 1)


@pytest.mark.parametrize("seed", range(5))
def test_competition_ranks_match_scipy_min_ranks(seed):
    scores = np.round(np.random.default_rng(seed).random(50), 1)  # rounding forces ties
    expected = stats.rankdata(-scores, method="min")
    np.testing.assert_array_equal(aggregate.competition_ranks(scores), expected)


def test_competition_ranks_hand_case():
    np.testing.assert_array_equal(aggregate.competition_ranks(np.array([0.3, 0.9, 0.3, 0.1])), [2, 1, 2, 4])


@pytest.mark.parametrize("seed", range(5))
def test_borda_matches_average_ranks(seed):
    x = np.round(np.random.default_rng(seed).random((12, 7)), 1)
    reference = sum(stats.rankdata(x[:, t], method="average") - 1 for t in range(x.shape[1]))
    np.testing.assert_allclose(aggregate.borda_points(x), reference)


@pytest.mark.parametrize("seed", range(8))
def test_kendall_tau_b_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    x = np.round(rng.random(40), 1)
    y = np.round(x + rng.normal(0, 0.3, 40), 1)
    reference = stats.kendalltau(x, y, variant="b").statistic
    assert aggregate.kendall_tau_b(x, y) == pytest.approx(reference, abs=1e-12)


def test_kendall_tau_b_degenerate():
    assert np.isnan(aggregate.kendall_tau_b(np.array([1.0]), np.array([2.0])))
    assert np.isnan(aggregate.kendall_tau_b(np.array([1.0, 1.0]), np.array([1.0, 2.0])))


# -- pairs ---------------------------------------------------------------------------------------------
def test_flipped_pairs_constructed():
    names = ["a", "b", "c", "d"]
    g_a = np.array([0.9, 0.8, 0.7, 0.6])
    g_b = np.array([0.7, 0.8, 0.9, 0.6])  # a<->b, a<->c, b<->c flip; d stays last
    flips = aggregate.flipped_pairs(names, g_a, g_b)
    assert set(zip(flips["system_1"], flips["system_2"])) == {("a", "b"), ("a", "c"), ("b", "c")}
    row = flips[(flips["system_1"] == "a") & (flips["system_2"] == "c")].iloc[0]
    assert (row["G_a_1"], row["G_a_2"], row["G_b_1"], row["G_b_2"]) == (0.9, 0.7, 0.7, 0.9)


def test_flipped_pairs_ties_are_not_flips():
    flips = aggregate.flipped_pairs(["a", "b"], np.array([0.5, 0.5]), np.array([0.4, 0.6]))
    assert flips.empty


@pytest.mark.parametrize("seed", range(4))
def test_flipped_pairs_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    names = [f"s{i}" for i in range(15)]
    g_a, g_b = np.round(rng.random(15), 1), np.round(rng.random(15), 1)
    expected = {
        (names[i], names[j]) if g_a[i] > g_a[j] else (names[j], names[i])
        for i, j in itertools.combinations(range(15), 2)
        if (g_a[i] - g_a[j]) * (g_b[i] - g_b[j]) < 0
    }
    flips = aggregate.flipped_pairs(names, g_a, g_b)
    assert set(zip(flips["system_1"], flips["system_2"])) == expected


def test_overlapping_pairs_constructed():
    names = ["a", "b", "c", "d"]
    lo = np.array([0.5, 0.6, 0.2, np.nan])
    hi = np.array([0.7, 0.8, 0.5, 0.9])  # a∩b yes, a∩c touches at 0.5 (closed: yes), b∩c no, d unknown
    pairs = aggregate.overlapping_pairs(names, lo, hi)
    assert {frozenset(p) for p in zip(pairs["system_1"], pairs["system_2"])} == {
        frozenset({"a", "b"}), frozenset({"a", "c"})
    }


def test_rank_intervals_constructed_and_brute_force():
    lo = np.array([0.80, 0.70, 0.72, 0.10])
    hi = np.array([0.90, 0.79, 0.75, 0.20])
    rank_lo, rank_hi = aggregate.rank_intervals(lo, hi)
    # 0 beats everyone surely; 1 and 2 overlap each other; 3 is surely last
    np.testing.assert_array_equal(rank_lo, [1, 2, 2, 4])
    np.testing.assert_array_equal(rank_hi, [1, 3, 3, 4])
    rng = np.random.default_rng(0)
    lo = rng.random(20)
    hi = lo + rng.random(20) * 0.3
    rank_lo, rank_hi = aggregate.rank_intervals(lo, hi)
    for i in range(20):
        assert rank_lo[i] == 1 + sum(lo[j] > hi[i] for j in range(20))
        assert rank_hi[i] == 20 - sum(hi[j] < lo[i] for j in range(20))


# -- leaderboard frames ------------------------------------------------------------------------------
def _long_table(matrix: np.ndarray, names, tasks, spread=0.05) -> pd.DataFrame:
    rows = []
    for i, name in enumerate(names):
        for t, task in enumerate(tasks):
            if np.isnan(matrix[i, t]):
                continue
            rows.append({"system": name, "task": task, "value": matrix[i, t], "expected": matrix[i, t],
                         "min": max(matrix[i, t] - spread, 0), "max": matrix[i, t] + spread})
    return pd.DataFrame(rows)


def test_leaderboard_frames_against_scipy_and_numpy():
    rng = np.random.default_rng(7)
    tasks = [f"T{t}" for t in range(6)]
    names = [f"sys{i:02d}" for i in range(25)]
    matrix = rng.uniform(0.1, 0.9, size=(25, 6))
    matrix[3, 2] = np.nan  # incomplete
    matrix[5, 0] = 0.0  # zero task
    matrix[7] = matrix[8]  # exact tie in G
    ranked, incomplete = aggregate.leaderboard_frames(_long_table(matrix, names, tasks), tasks)
    assert incomplete["system"].tolist() == ["sys03"]
    assert incomplete["missing_tasks"].iloc[0] == ["T2"]
    np.testing.assert_allclose(incomplete.iloc[0][tasks].to_numpy(dtype=float), matrix[3])  # NaN only at T2
    assert ranked["n_tasks"].tolist() == [6] * 24
    assert "sys03" not in ranked["system"].tolist()
    by_name = ranked.set_index("system")
    complete = [i for i in range(25) if i != 3]
    for i in complete:
        row = by_name.loc[names[i]]
        assert row["G"] == pytest.approx(stats.gmean(matrix[i]) if i != 5 else 0.0)
        assert row["mean"] == pytest.approx(np.mean(matrix[i]))
        assert row["G_min"] == pytest.approx(stats.gmean(np.maximum(matrix[i] - 0.05, 0)) if i != 5 else 0.0)
        assert row["G_max"] == pytest.approx(stats.gmean(matrix[i] + 0.05))
        np.testing.assert_allclose(row[tasks].to_numpy(dtype=float), matrix[i])
    assert by_name.loc["sys05", "zero_task"] and by_name.loc["sys05", "G"] == 0
    assert by_name.loc["sys07", "rank"] == by_name.loc["sys08", "rank"]
    expected_ranks = stats.rankdata(-ranked["G"].to_numpy(), method="min")
    np.testing.assert_array_equal(ranked["rank"].to_numpy(), expected_ranks)
    borda = sum(stats.rankdata(matrix[complete][:, t], method="average") - 1 for t in range(6))
    np.testing.assert_allclose(by_name.loc[[names[i] for i in complete], "borda"].to_numpy(), borda)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=8))
def test_g_bounds_are_ordered(triples):
    """min ≤ expected ≤ max per task ⇒ G_min ≤ G_expected ≤ G_max (G is monotone)."""
    lows, mids, highs = np.sort(np.array(triples, dtype=float), axis=1).T
    g = [aggregate.geometric_mean(x) for x in (lows, mids, highs)]
    assert g[0] <= g[1] * (1 + 1e-12) + 1e-300 and g[1] <= g[2] * (1 + 1e-12) + 1e-300


def test_condition_gap_hand_computed():
    a = pd.DataFrame({"system": ["s", "s", "t"], "task": ["x", "y", "x"], "value": [0.25, 0.5, 0.4]})
    b = pd.DataFrame({"system": ["s", "s", "t"], "task": ["x", "y", "z"], "value": [0.5, 0.5, 0.9]})
    per_task, per_system = aggregate.condition_gap(a, b)
    assert per_task[["system", "task"]].values.tolist() == [["s", "x"], ["s", "y"]]
    np.testing.assert_allclose(per_task["gap"], [0.25, 0.0])
    row = per_system.set_index("system").loc["s"]
    assert row["G_a"] == pytest.approx((0.25 * 0.5) ** 0.5)
    assert row["G_b"] == pytest.approx(0.5)
    assert row["gap"] == pytest.approx(0.5 - (0.125) ** 0.5)
    assert row["n_tasks"] == 2
    assert "t" not in per_system["system"].tolist()  # no task present under both
    _, by_mean = aggregate.condition_gap(a, b, "mean")  # R2MED's and CRUMB's aggregate
    row = by_mean.set_index("system").loc["s"]
    assert (row["mean_a"], row["mean_b"], row["gap"]) == pytest.approx((0.375, 0.5, 0.125))
    with pytest.raises(ValueError, match="unknown aggregate"):
        aggregate.condition_gap(a, b, "median")


# -- overlapping pairs, the missing-task reason --------------------------------
def test_overlapping_pairs_name_their_columns():
    pairs = aggregate.overlapping_pairs(["a", "b"], np.array([0.1, 0.2]), np.array([0.3, 0.4]))
    assert pairs.to_dict("records") == [
        {"system_1": "b", "system_2": "a", "lo_1": 0.2, "hi_1": 0.4, "lo_2": 0.1, "hi_2": 0.3}]


@pytest.mark.parametrize("n_missing, says", [(5, "missing 5 of 7 tasks: T2, T3, T4, T5, T6"),
                                             (6, "missing 6 of 7 tasks: T1, T2, T3, T4, T5 …")])
def test_an_incomplete_system_lists_at_most_five_missing_tasks(n_missing, says):
    tasks = [f"T{t}" for t in range(7)]
    rows = [{"system": "full", "task": t, "value": 0.5} for t in tasks]
    rows += [{"system": "part", "task": t, "value": 0.5} for t in tasks[: 7 - n_missing]]
    _, incomplete = aggregate.leaderboard_frames(pd.DataFrame(rows), tasks)
    assert incomplete.set_index("system").loc["part", "reason"] == says


def test_order_swaps_lists_each_pair_the_policy_and_the_expected_values_order_apart_first_by_value():
    """By hand: a, b, c lead d by policy (0.9 > 0.8 > 0.7 > 0.6) while their expected values rise (0.1 < 0.2 <
    0.3); d's expected value (0.05) is below all, so d is in no swap. The pairs, by value_1 then value_2 descending:
    (a, b), (a, c), (b, c)."""
    swaps = aggregate.order_swaps(["a", "b", "c", "d"], np.array([0.9, 0.8, 0.7, 0.6]), np.array([0.1, 0.2, 0.3, 0.05]))
    assert list(zip(swaps["system_1"], swaps["system_2"])) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert swaps[["value_1", "value_2", "expected_1", "expected_2"]].to_numpy().tolist() == [
        [0.9, 0.8, 0.1, 0.2], [0.9, 0.7, 0.1, 0.3], [0.8, 0.7, 0.2, 0.3]]



def test_a_task_named_like_a_summary_column_or_another_task_gets_task_appended():
    assert aggregate.task_column_labels(["PIQA", "G", "G (task)", "rank"]) == [
        "PIQA", "G (task)", "G (task) (task)", "rank (task)"]
