"""The CRUMB board in the store: listed only when CRUMB rows exist, ranked by the mean over tasks, each task
value the mean of its per-query values, instruction states and settings kept apart, and the shipped
manifest declaring CRUMB's eight tasks for both settings."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from evalcore import crumb
from evalcore.cli import main
from evalcore.store import Condition, Store

sys.path.insert(0, str(Path(__file__).parent / "pages"))
import synthetic_data  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "crumb"
ROOT = Path(__file__).resolve().parents[1]


def _import(data: Path, folder: str, *extra: str) -> None:
    assert main(["import-crumb", str(FIXTURES / "runs" / folder), "--crumb", str(FIXTURES), "--data", str(data),
                 *extra]) == 0


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = synthetic_data.write_small(tmp_path_factory.mktemp("crumb-board"))
    assert "crumb" not in Store(folder).facets()["benchmarks"]  # no CRUMB rows: not listed
    _import(folder, "minilm")
    _import(folder, "minilm-instructed", "--system", "minilm", "--instruction", "yes")
    _import(folder, "bm25")
    _import(folder, "minilm-full", "--system", "minilm", "--setting", "full-document")
    return folder


def test_crumb_is_listed_with_its_settings_once_imported(data):
    facets = Store(data).facets()
    assert "crumb" in facets["benchmarks"]
    crumb_facets = facets["by_benchmark"]["crumb"]
    assert crumb_facets["settings"] == ["full-document", "passage"]
    assert crumb_facets["instructions"] == [False, True]
    assert set(crumb.OFFICIAL_METRICS) <= set(crumb_facets["metrics"])
    assert crumb_facets["tasks"] == ["clinical_trial", "legal_qa", "paper_retrieval"]


def test_the_board_ranks_by_the_mean_of_per_query_task_means(data):
    rows = crumb.evaluate_folder(FIXTURES / "runs" / "bm25", FIXTURES, system="bm25")
    ndcg = rows[rows.metric == "ndcg@10"]
    task_means = ndcg.groupby("task")[["oblivious", "expected", "min", "max"]].mean()
    board = Store(data).leaderboard(Condition("crumb", "ndcg@10", "passage", False, "fp32", "docid-desc"),
                                    uncertainty=False)
    assert board.ranked_by == "mean"
    row = board.ranked.set_index("system").loc["bm25"]
    assert row["mean"] == pytest.approx(task_means["oblivious"].mean())
    assert row["mean_expected"] == pytest.approx(task_means["expected"].mean())
    assert (row["mean_min"], row["mean_max"]) == pytest.approx((task_means["min"].mean(), task_means["max"].mean()))
    for task, value in task_means["oblivious"].items():
        assert row[task] == pytest.approx(value)


def test_instruction_states_are_apart(data):
    store = Store(data)
    without = store.leaderboard(Condition("crumb", "ndcg@10", "passage", False, "fp32", "docid-desc"),
                                uncertainty=False)
    with_ = store.leaderboard(Condition("crumb", "ndcg@10", "passage", True, "fp32", "docid-desc"), uncertainty=False)
    assert set(without.ranked["system"]) == {"bm25", "minilm"} and set(with_.ranked["system"]) == {"minilm"}
    gap = store.instruction_gap(Condition("crumb", "ndcg@10", "passage", None, "fp32", "docid-desc"))
    assert "minilm" in set(gap.per_system["system"])
    # the gap is in CRUMB's own aggregate, the mean over the tasks both states have
    shared = [t for t in with_.tasks if t in without.tasks]
    one = gap.per_system.set_index("system").loc["minilm"]
    mean_without = without.ranked.set_index("system").loc["minilm", shared].mean()
    mean_with = with_.ranked.set_index("system").loc["minilm", shared].mean()
    assert gap.aggregate == "mean"
    assert (one["mean_a"], one["mean_b"]) == pytest.approx((mean_without, mean_with))


def test_the_shipped_manifest_declares_crumb():
    manifest = json.loads((ROOT / "data" / "benchmarks.json").read_text())
    for setting in ("passage", "full-document"):
        assert manifest["benchmarks"]["crumb"][setting] == list(crumb.TASKS)
