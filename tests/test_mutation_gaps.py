"""Gaps a mutation run (docs/testing.md) found in the aggregation and URL-state tests: each test here fails on a
mutant that every other test let through."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalcore import aggregate
from ui import state


def test_overlapping_pairs_name_their_columns():
    pairs = aggregate.overlapping_pairs(["a", "b"], np.array([0.1, 0.2]), np.array([0.3, 0.4]))
    assert pairs.to_dict("records") == [
        {"system_1": "b", "system_2": "a", "lo_1": 0.2, "hi_1": 0.4, "lo_2": 0.1, "hi_2": 0.3}]


def test_randomization_test_is_reproducible_from_its_seed():
    rng = np.random.default_rng(1)
    differences = [rng.normal(0.01, 0.2, 300), rng.normal(0.0, 0.2, 200)]  # p far from 0 and 1
    first = aggregate.paired_randomization_test(differences, n_resamples=2000, seed=5)
    assert aggregate.paired_randomization_test(differences, n_resamples=2000, seed=5) == first
    assert 0.05 < first[1] < 0.95
    assert aggregate.paired_randomization_test(differences, n_resamples=2000, seed=6)[1] != first[1]
    with pytest.raises(ValueError, match="^no paired queries$"):
        aggregate.paired_randomization_test([np.array([])])


@pytest.mark.parametrize("n_missing, says", [(5, "missing 5 of 7 tasks: T2, T3, T4, T5, T6"),
                                             (6, "missing 6 of 7 tasks: T1, T2, T3, T4, T5 …")])
def test_an_incomplete_system_lists_at_most_five_missing_tasks(n_missing, says):
    tasks = [f"T{t}" for t in range(7)]
    rows = [{"system": "full", "task": t, "value": 0.5} for t in tasks]
    rows += [{"system": "part", "task": t, "value": 0.5} for t in tasks[: 7 - n_missing]]
    _, incomplete = aggregate.leaderboard_frames(pd.DataFrame(rows), tasks)
    assert incomplete.set_index("system").loc["part", "reason"] == says


@pytest.mark.parametrize("count, kept", [(state.MAX_VALUES_PER_KEY, True), (state.MAX_VALUES_PER_KEY + 1, False)])
def test_a_repeatable_key_keeps_up_to_its_limit_of_values(count, kept):
    values = [f"fam{i}" for i in range(count)]
    accepted, notices = state.screen_query_params({"family": values})
    assert (accepted.get("family") == values) is kept
    assert (notices == []) is kept


def test_unknown_keys_are_named_and_unreadable_ones_counted():
    _, notices = state.screen_query_params({"zzz": ["1"], "bench": ["rar-b"]})
    assert notices == ["Ignored 1 unknown URL parameter: `zzz`."]
    _, notices = state.screen_query_params({"zzz": ["1"], "<b>": ["2"]})
    assert notices == ["Ignored 2 unknown URL parameters: `zzz`, 1 unreadable."]
