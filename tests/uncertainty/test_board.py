"""evalcore.uncertainty.board: both lenses of a board's ranked rows — when the queries lens cannot speak (a
published row's task without a recorded query count, a metric outside [0, 1], no task) it says why and fills
nothing; per-query rows take their counts from their own values; the tasks lens needs two tasks; what each lens
hands back is what its parts compute."""
from __future__ import annotations

import numpy as np
import pytest

from evalcore.uncertainty import board, intervals, queries_lens, rank_sets, separability, tasks_lens
from evalcore.uncertainty.queries_lens import PerQuery

TASKS = ["A", "B", "C"]


def scores(seed=0, n_systems=5):
    rng = np.random.default_rng(seed)
    return np.sort(rng.uniform(0.2, 0.8, (n_systems, 3)), axis=0)[::-1]


def per_query(values_by_row, rows):
    """PerQuery of ``rows`` from {task: (len(rows) × n) values}."""
    blocks = [np.asarray(values_by_row[t]) for t in range(3)]
    task = np.concatenate([[t] * block.shape[1] for t, block in enumerate(blocks)])
    return PerQuery(np.asarray(rows), np.hstack(blocks), task)


def assert_says_nothing(lens, size):
    assert not lens.available and lens.reason
    for values in (lens.lo, lens.hi, lens.rank_lo, lens.rank_hi):
        assert values.shape == (size,) and np.isnan(values).all()
    assert (lens.tier == 0).all() and not lens.above.any() and not lens.could_be_first.any()
    assert lens.adjacent is None and lens.none_differ is None and not lens.included.any()


def test_a_published_rows_task_without_a_query_count_makes_the_queries_lens_say_so():
    found = board.both(scores(), "G", 0.95, "marginal", [500, None, 300], TASKS)
    assert_says_nothing(found["queries"], 5)
    assert "B" in found["queries"].reason and "query count" in found["queries"].reason
    assert found["tasks"].available, "the other lens does not need counts"
    assert list(found) == ["queries", "tasks"]


def test_a_published_row_beside_per_query_rows_still_needs_its_tasks_count():
    """The count bounds a published score, so it comes from a cited source (data/query_counts.json), never
    from the number of per-query values other rows happen to have."""
    rng = np.random.default_rng(1)
    values = {t: rng.uniform(0, 1, (2, 40)) for t in range(3)}
    board_scores = scores()
    board_scores[:2] = np.column_stack([values[t].mean(axis=1) for t in range(3)])
    found = board.both(board_scores, "mean", 0.95, "marginal", [500, None, 300], TASKS, per_query(values, [0, 1]))
    assert_says_nothing(found["queries"], 5)
    assert "B" in found["queries"].reason


def test_per_query_rows_need_no_count_and_use_their_own():
    rng = np.random.default_rng(2)
    values = {t: rng.uniform(0, 1, (3, n)) for t, n in enumerate((40, 25, 60))}
    values[1][2, :5] = np.nan  # a row without five of B's queries
    board_scores = np.column_stack([np.nanmean(values[t], axis=1) for t in range(3)])
    pq = per_query(values, [0, 1, 2])
    unknown = board.both(board_scores, "mean", 0.95, "marginal", [None, None, None], TASKS, pq)["queries"]
    assert unknown.available
    wrong = board.both(board_scores, "mean", 0.95, "marginal", [5, 5000, 7], TASKS, pq)["queries"]
    np.testing.assert_array_equal(unknown.lo, wrong.lo)  # the file's counts play no part for these rows
    n = [(~np.isnan(values[t][2])).sum() for t in range(3)]
    variance = sum(np.nanvar(values[t][2], ddof=1) / n[t] for t in range(3)) / 9
    z = intervals.quantile(0.95, None)
    assert unknown.hi[2] == pytest.approx(board_scores[2].mean() + z * np.sqrt(variance), rel=1e-12)


@pytest.mark.parametrize("bad", [1.2, -0.1, np.nan])
def test_a_metric_outside_zero_one_has_no_queries_lens(bad):
    board_scores = scores()
    board_scores[3, 1] = bad
    queries = board.queries_answer(board_scores, "mean", 0.95, "marginal", [500, 500, 500], TASKS)
    assert_says_nothing(queries, 5)
    assert "[0, 1]" in queries.reason


def test_no_task_and_one_task():
    empty = board.both(np.zeros((3, 0)), "mean", 0.95, "marginal", [], [])
    assert_says_nothing(empty["queries"], 3)
    assert_says_nothing(empty["tasks"], 3)
    one = board.both(scores()[:, :1], "mean", 0.95, "marginal", [500], ["A"])
    assert one["queries"].available
    assert_says_nothing(one["tasks"], 5)


@pytest.mark.parametrize("kind", rank_sets.KINDS)
@pytest.mark.parametrize("aggregate", ["G", "mean"])
def test_each_lens_hands_back_what_its_parts_compute(kind, aggregate):
    board_scores = scores(3, n_systems=7)
    board_scores[6, 0] = 0.0 if aggregate == "G" else board_scores[6, 0]
    counts = [100, 80, 60]
    found = board.both(board_scores, aggregate, 0.9, kind, counts, TASKS, upper=1.0)
    for name, est in (("queries", queries_lens.estimates(board_scores, np.array(counts, float), aggregate)),
                      ("tasks", tasks_lens.estimates(board_scores, aggregate))):
        lens = found[name]
        sets = rank_sets.rank_sets(est, 0.9, kind)
        lo, hi = intervals.intervals(est, 0.9, 1.0)
        np.testing.assert_array_equal(lens.lo, lo)
        np.testing.assert_array_equal(lens.hi, hi)
        np.testing.assert_array_equal(lens.rank_lo, sets.rank_lo)
        np.testing.assert_array_equal(lens.rank_hi, sets.rank_hi)
        np.testing.assert_array_equal(lens.tier, separability.tiers(sets.above, est.points))
        np.testing.assert_array_equal(lens.could_be_first, sets.rank_lo == 1)
        pairs = separability.adjacent_pairs(est, np.arange(7), alpha=0.1)  # the tests at the board's level
        np.testing.assert_array_equal(lens.adjacent.p_value, pairs.p_value)
        np.testing.assert_array_equal(lens.adjacent.differ, pairs.differ)
        assert lens.adjacent.alpha == pytest.approx(0.1)
        assert lens.included.tolist() == est.included.tolist()


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="ranks"):
        board.both(scores(), "G", 0.95, "joint", [1, 2, 3], TASKS)
