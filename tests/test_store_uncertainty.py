"""The store's boards through both lenses of evalcore.uncertainty, on the shipped data: every ranked row of every
shipped board has its intervals, rank sets and tiers; facts recomputed here from the board's own task columns
(never from the lens' output): no pair tied on the aggregate differs, who could be #1 is tier 1, a planted system
better than every other on every task is first, a copy gets its original's range; the numbers depend on no
seed; the declared task set holds when a file goes bad; the common-task ranking never averages over different
tasks; an interval over few tasks stays inside the metric's range."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.store import Condition, Store
from evalcore.uncertainty import board as lens_board
from evalcore.uncertainty import query_counts

SHIPPED = Path(__file__).resolve().parents[1] / "data"
LENSES = ("queries", "tasks")


@pytest.fixture(scope="module")
def shipped():
    return Store(SHIPPED)


@pytest.fixture(scope="module")
def boards(shipped):
    """Every shipped condition's board (instruction: any), ranked rows only."""
    facets = shipped.facets()["conditions"]
    keys = facets[["benchmark", "setting", "metric", "precision", "tie_policy"]].drop_duplicates()
    found = {}
    for b, s, m, p, t in keys.itertuples(index=False):
        cond = Condition(b, m, s, None, p, t)
        found[cond] = shipped.leaderboard(cond)
    return found


def test_every_ranked_row_of_every_shipped_board_has_both_lenses(boards):
    assert len(boards) >= 19
    ranked_boards = 0
    for cond, board in boards.items():
        ranked = board.ranked
        if ranked.empty:  # e.g. a precision only some tasks were run at: nothing to rank, nothing to check
            assert len(board.incomplete), cond
            continue
        ranked_boards += 1
        agg = board.ranked_by
        for lens in LENSES:
            # G = 0 from a zero task is outside the model — on these tasks, unless ties alone made it 0
            inside = (ranked[agg] > 0).to_numpy()
            if lens == "queries" and agg == "G":
                inside = inside | (ranked["G_max"] > 0).to_numpy()
            summary = board.lens(lens)
            if lens == "tasks" and len(board.task_names) < 2:
                assert not summary.available, cond
                continue
            assert summary.available, (cond, lens, summary.reason)
            lo, hi = ranked[f"{lens}_lo"].to_numpy(), ranked[f"{lens}_hi"].to_numpy()
            assert np.isfinite(lo[inside]).all() and np.isnan(lo[~inside]).all(), (cond, lens)
            values = ranked[agg].to_numpy()
            assert ((lo[inside] <= values[inside]) & (values[inside] <= hi[inside])).all(), (cond, lens)
            assert ((ranked[f"{lens}_rank_lo"] <= ranked["rank"]) & (ranked["rank"] <= ranked[f"{lens}_rank_hi"])).all()
            assert ranked[f"{lens}_tier"].min() == 1 and (ranked[f"{lens}_rank_hi"] <= len(ranked)).all()
            assert summary.n_pairs == len(ranked) - 1
        assert board.notes == [], cond
        assert board.declared_tasks == board.task_names, "the shipped manifest declares every board's tasks"
    assert ranked_boards >= 19


def test_no_pair_tied_on_the_aggregate_differs_on_any_shipped_board(boards):
    """Tied values (equal to the printed digits and beyond) never make a differing adjacent pair, and a pair
    differs only when the upper system's value is above the lower's."""
    tied_pairs = 0
    for cond, board in boards.items():
        ranked = board.ranked.set_index("system")
        for lens in LENSES:
            summary = board.lens(lens)
            if not summary.available:
                continue
            for row in summary.adjacent.itertuples():
                upper, lower = ranked.loc[row.system_1, board.ranked_by], ranked.loc[row.system_2, board.ranked_by]
                tied_pairs += upper == lower
                if row.differ:
                    assert upper > lower, (cond, lens, row.system_1, row.system_2)
                if upper == lower:
                    assert not row.differ and (np.isnan(row.p_value) or row.p_value >= 0.5), (cond, lens)
    assert tied_pairs >= 2, "the shipped boards hold tied pairs (systems at G = 0 among them)"


def test_who_could_be_first_is_tier_one_and_only_they(boards):
    for cond, board in boards.items():
        ranked = board.ranked
        for lens in LENSES:
            if not board.lens(lens).available:
                assert not ranked[f"{lens}_first"].any() and (ranked[f"{lens}_tier"] == 0).all()
                continue
            first = ranked[f"{lens}_first"].astype(bool)
            assert (first == (ranked[f"{lens}_rank_lo"] == 1)).all(), (cond, lens)
            assert (first == (ranked[f"{lens}_tier"] == 1)).all(), (cond, lens)
            assert first.iloc[0], "the top row can always be first"


def test_the_numbers_depend_on_no_seed_two_stores_agree_and_the_level_widens(shipped):
    cond = Condition("r2med", "ndcg@10", "full", None)
    one = shipped.leaderboard(cond, level=0.9)
    two = Store(SHIPPED).leaderboard(cond, level=0.9)
    pd.testing.assert_frame_equal(one.ranked, two.ranked, check_exact=True)
    for lens in LENSES:
        pd.testing.assert_frame_equal(one.lens(lens).adjacent, two.lens(lens).adjacent, check_exact=True)
    assert (one.level, one.ranks) == (0.9, "marginal")
    wider = shipped.leaderboard(cond, level=0.99)
    joint = shipped.leaderboard(cond, level=0.9, ranks="simultaneous")
    assert joint.ranks == "simultaneous"
    for lens in LENSES:
        width = one.ranked[f"{lens}_rank_hi"] - one.ranked[f"{lens}_rank_lo"]
        assert ((wider.ranked[f"{lens}_rank_hi"] - wider.ranked[f"{lens}_rank_lo"]) >= width).all()
        assert ((joint.ranked[f"{lens}_rank_lo"] <= one.ranked[f"{lens}_rank_lo"])
                & (joint.ranked[f"{lens}_rank_hi"] >= one.ranked[f"{lens}_rank_hi"])).all()
        assert ((wider.ranked[f"{lens}_hi"] - wider.ranked[f"{lens}_lo"])
                >= one.ranked[f"{lens}_hi"] - one.ranked[f"{lens}_lo"]).all()
    with pytest.raises(TypeError):
        shipped.leaderboard(cond, seed=1)  # no seed to give


@pytest.mark.parametrize("setting, metric, margin", [("full", "ndcg@10", 0.01), ("mcr", "p@1", 0.05)])
def test_planted_systems_on_the_shipped_rar_b_boards(shipped, setting, metric, margin):
    """A system better than every other on every task by ``margin`` ranks 1–1 "on these tasks" (both kinds) and
    could be first "on new tasks like these"; an exact copy of a system gets that system's range in both."""
    board = shipped.leaderboard(Condition("rar-b", metric, setting, None), uncertainty=False)
    scores = board.ranked[board.tasks].to_numpy(dtype=np.float64)
    copied = min(3, len(scores) - 1)
    planted = np.vstack([scores, np.minimum(scores.max(axis=0) + margin, 1.0), scores[copied]])
    counts = query_counts.read(SHIPPED).counts_for("rar-b", setting, board.task_names)
    for kind in ("marginal", "simultaneous"):
        found = lens_board.both(planted, "G", 0.95, kind, counts, board.task_names)
        queries, tasks = found["queries"], found["tasks"]
        assert (queries.rank_lo[-2], queries.rank_hi[-2]) == (1, 1), kind
        assert queries.above[:-2, -2].all(), "every shipped system is surely below the planted best"
        assert tasks.rank_lo[-2] == 1 and tasks.tier[-2] == 1
        for lens in (queries, tasks):
            assert (lens.rank_lo[-1], lens.rank_hi[-1]) == (lens.rank_lo[copied], lens.rank_hi[copied]), kind
            assert not lens.above[copied, -1] and not lens.above[-1, copied]


def test_bm25_could_be_first_on_these_tasks_because_its_tie_range_passes_minilm(shipped):
    board = shipped.leaderboard(Condition("rar-b", "ndcg@10", "full-pooled", None, "fp32", "docid-desc"))
    ranked = board.ranked.set_index("system")
    bm25, minilm = ranked.loc["tiebreak-run/bm25s"], ranked.loc["tiebreak-run/all-MiniLM-L6-v2"]
    assert bm25["G_max"] > minilm["queries_hi"] >= minilm["G"] > bm25["G"], "the shipped case"
    assert bm25["queries_rank_lo"] == 1 and bm25["queries_first"] and bm25["queries_tier"] == 1
    assert bm25["queries_hi"] >= bm25["G_max"] and bm25["queries_lo"] <= bm25["G_min"], "the tie range inside"
    assert minilm["queries_rank_hi"] >= 2, "MiniLM can be passed by BM25"


def test_a_truncated_per_query_file_leaves_its_task_declared_and_the_board_says_so(tmp_path):
    """A damaged per-query file must not turn an 8-task G into a 7-task one: the task stays on the board, the
    systems that lost it are not ranked, and the board names the unreadable file."""
    data = tmp_path / "data"
    shutil.copytree(SHIPPED, data)
    damaged = data / "real" / "query_metrics" / "rar-b_SIQA.parquet"
    with open(damaged, "r+b") as handle:
        handle.truncate(damaged.stat().st_size // 2)
    board = Store(data).leaderboard(Condition("rar-b", "p@1", "mcr", None))
    assert "SIQA" in board.task_names and len(board.task_names) == 8
    assert board.ranked.empty and len(board.incomplete) >= 8
    assert board.tasks_without_results == ["SIQA"]
    assert any("rar-b_SIQA.parquet" in note for note in board.notes)
    assert "SIQA" in board.data_notes() and "rar-b_SIQA.parquet" in board.data_notes()
    export = board.export_frame(board.rows())  # every export says it on every row
    assert export["board_notes"].str.contains("rar-b_SIQA.parquet").all() and len(export) == len(board.incomplete)


def test_without_a_manifest_the_board_says_its_tasks_come_from_the_data(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(SHIPPED / "published", data / "published")
    board = Store(data).leaderboard(Condition("r2med", "ndcg@10", "full", None), uncertainty=False)
    assert board.declared_tasks is None and len(board.task_names) == 8 and board.notes == []
    (data / "benchmarks.json").write_text('{"format": 1, "benchmarks": {"r2med": {"full": "not a list"}}}')
    store = Store(data)
    assert any(item.path.endswith("benchmarks.json") for item in store.skipped)
    assert any("benchmarks.json" in note for note in store.leaderboard(Condition("r2med"), uncertainty=False).notes)


def test_without_query_counts_the_queries_lens_says_why(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(SHIPPED / "published", data / "published")
    board = Store(data).leaderboard(Condition("r2med", "ndcg@10", "full", None))
    queries = board.lens("queries")
    assert not queries.available and "query count" in queries.reason
    assert board.ranked["queries_lo"].isna().all() and board.ranked["tasks_lo"].notna().all()
    (data / "query_counts.json").write_text('{"format": 2}')
    board = Store(data).leaderboard(Condition("r2med", "ndcg@10", "full", None))
    assert not board.lens("queries").available
    assert any("query_counts.json" in note for note in board.notes)


def test_common_task_ranking_ranks_every_shown_system_on_the_tasks_all_have(shipped):
    cond = Condition("rar-b", "ndcg@10", "full", None)
    full = shipped.leaderboard(cond, uncertainty=False)
    missing = full.incomplete.iloc[0]
    shown = [missing["system"], *full.ranked["system"].head(4)]
    board = shipped.leaderboard(cond, systems=shown, common_tasks=True)
    kept = [t for t in full.task_names if t not in missing["missing_tasks"]]
    assert board.common_tasks.tasks == kept == board.task_names
    assert board.common_tasks.dropped == list(missing["missing_tasks"]) and board.common_tasks.n_systems == 5
    assert sorted(board.ranked["system"]) == sorted(shown) and board.incomplete.empty
    assert (board.ranked["n_tasks"] == len(kept)).all()
    for system in shown:  # every G is over the same tasks: recomputed from the task table
        values = shipped.task_table(cond, [system]).set_index("task").loc[kept, "value"]
        assert board.ranked.set_index("system").loc[system, "G"] == pytest.approx(
            float(np.exp(np.log(values).mean())))


def test_an_interval_over_few_tasks_stays_inside_the_metrics_range(shipped):
    """Three common tasks make the t quantile large: an nDCG aggregate's interval must still end at 1."""
    cond = Condition("rar-b", "ndcg@10", "full", None)
    voyage = [s for s in shipped.systems(search="voyage")["system"]]
    board = shipped.leaderboard(cond, systems=voyage, common_tasks=True)
    assert len(board.task_names) <= 4 and len(board.ranked) == board.common_tasks.n_systems >= 5
    for lens in LENSES:
        assert (board.ranked[f"{lens}_hi"] <= 1.0).all() and (board.ranked[f"{lens}_lo"] >= 0.0).all()
    assert (board.ranked["tasks_hi"] == 1.0).any(), "the bound is reached, so the clip is what holds it"
