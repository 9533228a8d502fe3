"""The store's boards over tasks: every ranked row of every shipped board has an interval and a rank range, the
declared task set holds when a file goes bad, the common-task ranking never averages over different tasks, and
the adjacent test over queries agrees with the randomization test it approximates."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore import aggregate
from evalcore.store import Condition, Store

SHIPPED = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def shipped():
    return Store(SHIPPED)


def _conditions(store):
    facets = store.facets()["conditions"]
    keys = facets[["benchmark", "setting", "metric", "precision", "tie_policy"]].drop_duplicates()
    return [Condition(b, m, s, None, p, t) for b, s, m, p, t in keys.itertuples(index=False)]


def test_every_ranked_row_of_every_shipped_board_has_an_interval_and_a_rank_range(shipped):
    conditions = _conditions(shipped)
    assert len(conditions) >= 19
    ranked_boards = 0
    for cond in conditions:
        board = shipped.leaderboard(cond, bootstrap=200)
        ranked = board.ranked
        agg = board.ranked_by
        if ranked.empty:  # e.g. a precision only some tasks were run at: nothing to rank, nothing to check
            assert len(board.incomplete), cond
            continue
        ranked_boards += 1
        for column in (f"{agg}_task_lo", f"{agg}_task_hi", "rank_lo", "rank_hi", "tier"):
            assert ranked[column].notna().all(), (cond, column)
        assert ((ranked[f"{agg}_task_lo"] <= ranked[agg]) & (ranked[agg] <= ranked[f"{agg}_task_hi"])).all(), cond
        assert ((ranked["rank_lo"] <= ranked["rank"]) & (ranked["rank"] <= ranked["rank_hi"])).all(), cond
        assert (ranked["shared_rank"] == ranked["rank_lo"]).all() and ranked["tier"].min() == 1
        assert ranked["could_be_first"].tolist() == (ranked["rank_lo"] == 1).tolist()
        assert len(board.adjacent) == len(ranked) - 1 and board.notes == [], cond
        assert board.declared_tasks == board.task_names, "the shipped manifest declares every board's tasks"
    assert ranked_boards >= 19


def test_the_same_seed_gives_the_same_board_and_the_parameters_are_recorded(shipped):
    cond = Condition("r2med", "ndcg@10", "full", None)
    one = shipped.leaderboard(cond, bootstrap=300, seed=7, level=0.9)
    two = shipped.leaderboard(cond, bootstrap=300, seed=7, level=0.9)
    pd.testing.assert_frame_equal(one.ranked, two.ranked)
    assert (one.resampling.seed, one.resampling.resamples, one.resampling.level) == (7, 300, 0.9)
    other = shipped.leaderboard(cond, bootstrap=300, seed=8, level=0.9)
    assert not np.array_equal(one.ranked["mean_task_lo"], other.ranked["mean_task_lo"])
    wider = shipped.leaderboard(cond, bootstrap=300, seed=7, level=0.99)
    assert ((wider.ranked["rank_hi"] - wider.ranked["rank_lo"]) >= (one.ranked["rank_hi"] - one.ranked["rank_lo"])).all()


def test_a_truncated_per_query_file_leaves_its_task_declared_and_the_board_says_so(tmp_path):
    """A damaged per-query file must not turn an 8-task G into a 7-task one: the task stays on the board, the
    systems that lost it are not ranked, and the board names the unreadable file."""
    data = tmp_path / "data"
    shutil.copytree(SHIPPED, data)
    damaged = data / "real" / "query_metrics" / "rar-b_SIQA.parquet"
    with open(damaged, "r+b") as handle:
        handle.truncate(damaged.stat().st_size // 2)
    board = Store(data).leaderboard(Condition("rar-b", "p@1", "mcr", None), bootstrap=100)
    assert "SIQA" in board.task_names and len(board.task_names) == 8
    assert board.ranked.empty and len(board.incomplete) >= 8
    assert board.tasks_without_results == ["SIQA"]
    assert any("rar-b_SIQA.parquet" in note for note in board.notes)
    assert "SIQA" in board.data_notes() and "rar-b_SIQA.parquet" in board.data_notes()
    from ui import board as boards  # the dashboard's CSV says it on every row

    export = boards.export_rows(board, None, pd.Series(dtype=object))
    assert export["board_notes"].str.contains("rar-b_SIQA.parquet").all() and len(export) == len(board.incomplete)


def test_without_a_manifest_the_board_says_its_tasks_come_from_the_data(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(SHIPPED / "published", data / "published")
    board = Store(data).leaderboard(Condition("r2med", "ndcg@10", "full", None), bootstrap=0)
    assert board.declared_tasks is None and len(board.task_names) == 8 and board.notes == []
    (data / "benchmarks.json").write_text('{"format": 1, "benchmarks": {"r2med": {"full": "not a list"}}}')
    store = Store(data)
    assert any(item.path.endswith("benchmarks.json") for item in store.skipped)
    assert any("benchmarks.json" in note for note in store.leaderboard(Condition("r2med"), bootstrap=0).notes)


def test_common_task_ranking_ranks_every_shown_system_on_the_tasks_all_have(shipped):
    cond = Condition("rar-b", "ndcg@10", "full", None)
    full = shipped.leaderboard(cond, bootstrap=0)
    missing = full.incomplete.iloc[0]
    shown = [missing["system"], *full.ranked["system"].head(4)]
    board = shipped.leaderboard(cond, systems=shown, bootstrap=200, common_tasks=True)
    kept = [t for t in full.task_names if t not in missing["missing_tasks"]]
    assert board.common_tasks.tasks == kept == board.task_names
    assert board.common_tasks.dropped == list(missing["missing_tasks"]) and board.common_tasks.n_systems == 5
    assert sorted(board.ranked["system"]) == sorted(shown) and board.incomplete.empty
    assert (board.ranked["n_tasks"] == len(kept)).all()
    for system in shown:  # every G is over the same tasks: recomputed from the task table
        values = shipped.task_table(cond, [system]).set_index("task").loc[kept, "value"]
        assert board.ranked.set_index("system").loc[system, "G"] == pytest.approx(
            float(np.exp(np.log(values).mean())))


def test_adjacent_test_over_queries_agrees_with_the_randomization_test(shipped):
    cond = Condition("rar-b", "ndcg@10", "full-pooled", None)
    board = shipped.leaderboard(cond, bootstrap=200)
    assert set(board.adjacent["kind"]) == {"queries"}
    for row in board.adjacent.head(3).itertuples():
        test = shipped.paired_test(row.system_1, row.system_2, cond, n_resamples=20000, value="expected")
        assert row.p_value == pytest.approx(test.p_value, abs=0.01 + 0.2 * test.p_value)
    np.testing.assert_allclose(board.adjacent["adjusted"], aggregate.holm_adjusted(board.adjacent["p_value"]))


def test_the_run_time_cache_gives_back_the_same_board(tmp_path, monkeypatch):
    """With $TIEBREAK_CACHE a restarted server reads the ranges over tasks back instead of resampling: the same
    columns, the same tests; a changed parameter is a new entry."""
    cond = Condition("rar-b", "ndcg@10", "full", None)
    plain = Store(SHIPPED).leaderboard(cond, bootstrap=200, seed=2)
    monkeypatch.setenv("TIEBREAK_CACHE", str(tmp_path))
    written = Store(SHIPPED).leaderboard(cond, bootstrap=200, seed=2)
    entries = list((tmp_path / "ranges").glob("*.json"))
    assert len(entries) == 1
    from evalcore.store import statistics

    monkeypatch.setattr(statistics, "task_level", lambda *a, **k: pytest.fail("computed, not read back"))
    read = Store(SHIPPED).leaderboard(cond, bootstrap=200, seed=2)
    for board in (written, read):
        pd.testing.assert_frame_equal(board.ranked, plain.ranked)
        pd.testing.assert_frame_equal(board.adjacent, plain.adjacent)
        assert (board.surely_above == plain.surely_above).all()
    monkeypatch.undo()
    monkeypatch.setenv("TIEBREAK_CACHE", str(tmp_path))
    Store(SHIPPED).leaderboard(cond, bootstrap=200, seed=3)
    assert len(list((tmp_path / "ranges").glob("*.json"))) == 2


def test_an_interval_over_few_tasks_stays_inside_the_metrics_range(shipped):
    """Three common tasks make the t expansion large: an nDCG aggregate's interval must still end at 1."""
    cond = Condition("rar-b", "ndcg@10", "full", None)
    voyage = [s for s in shipped.systems(search="voyage")["system"]]
    board = shipped.leaderboard(cond, systems=voyage, bootstrap=300, common_tasks=True)
    assert len(board.task_names) <= 4 and len(board.ranked) == board.common_tasks.n_systems >= 5
    for agg in ("G", "mean"):
        assert (board.ranked[f"{agg}_task_hi"] <= 1.0).all() and (board.ranked[f"{agg}_task_lo"] >= 0.0).all()
    assert (board.ranked["G_task_hi"] == 1.0).any(), "the bound is reached, so the clip is what holds it"
