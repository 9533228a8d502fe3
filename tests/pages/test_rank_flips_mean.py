"""Rank flips ranks each benchmark by its own aggregate, as the Leaderboard does: R2MED (and CRUMB) by the mean
over tasks, RAR-b by G. The same scores, written by hand under both benchmarks, give different answers, every
number below worked out by hand from the table:

| system | fp32 tasks (min–max) | mean | G | bf16 tasks | mean | G |
|---|---|---:|---:|---|---:|---:|
| A | 0.9 (0.85–0.95), 0.1 (0.05–0.15) | 0.5 [0.45, 0.55] | 0.3 | 0.8, 0.1 | 0.45 | √0.08 ≈ 0.283 |
| B | 0.45, 0.45 | 0.45 | 0.45 | 0.5, 0.5 | 0.5 | 0.5 |
| C | 0.2, 0.2 | 0.2 | 0.2 | 0.2, 0.2 | 0.2 | 0.2 |

(a task without a range has min = max = its score). By the mean: fp32 A 1, B 2, C 3; bf16 B 1, A 2, C 3 — one
flipped pair (A above B, then below), Kendall τ-b = (2 − 1) / 3; under fp32 A's tie range [0.45, 0.55] touches
B's [0.45, 0.45] (one overlapping pair, and the flip's ranges overlap). By G: B, A, C under both — nothing
flips, τ-b = 1, and A's G range [√(0.85·0.05), √(0.95·0.15)] ≈ [0.206, 0.377] stays below B's 0.45.
"""
from __future__ import annotations

import math

import pandas as pd
import pytest

from app_harness import texts
from evalcore.store import Condition, Store

SCORES = {  # precision -> system -> [(value, min, max) per task]
    "fp32": {"A": [(0.9, 0.85, 0.95), (0.1, 0.05, 0.15)], "B": [(0.45,) * 3] * 2, "C": [(0.2,) * 3] * 2},
    "bf16": {"A": [(0.8,) * 3, (0.1,) * 3], "B": [(0.5,) * 3] * 2, "C": [(0.2,) * 3] * 2},
}
TASKS = ("Biology", "Medicine")


@pytest.fixture(scope="module")
def by_hand(tmp_path_factory):
    root = tmp_path_factory.mktemp("rank-flips-mean")
    rows = [{"system": system, "benchmark": benchmark, "task": task, "setting": "full", "instruction": False,
             "precision": precision, "metric": "ndcg@10", "value": value, "expected": value, "min": low,
             "max": high, "n_queries": 100, "source": "published:by-hand"}
            for benchmark in ("r2med", "rar-b") for precision, systems in SCORES.items()
            for system, per_task in systems.items() for task, (value, low, high) in zip(TASKS, per_task)]
    pd.DataFrame(rows).to_parquet(root / "task_scores_by_hand.parquet", index=False)
    pd.DataFrame([{"system": s, "display_name": s, "family": "by-hand", "n_parameters": 1e8, "license": "mit",
                   "open_weights": True, "uses_instructions": False, "release_date": "2024-01-01", "reference": "",
                   "source": "by-hand"} for s in "ABC"]).to_parquet(root / "systems_by_hand.parquet", index=False)
    return root


def _flips(root, benchmark: str):
    return Store(root).rank_flips(Condition(benchmark, precision="fp32"), Condition(benchmark, precision="bf16"))


def test_r2med_ranks_by_the_mean(by_hand):
    flips = _flips(by_hand, "r2med")
    assert flips.aggregate == "mean" and flips.tasks == list(TASKS)
    ranks = flips.ranks.set_index("system")
    assert ranks["rank_a"].to_dict() == {"A": 1, "B": 2, "C": 3}
    assert ranks["rank_b"].to_dict() == {"A": 2, "B": 1, "C": 3}
    assert ranks["rank_change"].to_dict() == {"A": 1, "B": -1, "C": 0}
    assert ranks.loc["A", ["mean_a", "mean_min_a", "mean_max_a", "mean_b"]].tolist() == pytest.approx(
        [0.5, 0.45, 0.55, 0.45])
    assert ranks.loc["B", ["mean_a", "mean_b"]].tolist() == pytest.approx([0.45, 0.5])
    assert not any(column.startswith("G") for column in flips.ranks.columns), list(flips.ranks.columns)
    assert flips.kendall_tau_b == pytest.approx(1 / 3)
    [pair] = flips.flipped_pairs.to_dict("records")
    assert (pair["system_1"], pair["system_2"], pair["intervals_overlap"]) == ("A", "B", True)
    assert [pair[c] for c in ("mean_a_1", "mean_a_2", "mean_b_1", "mean_b_2")] == pytest.approx([0.5, 0.45, 0.45, 0.5])
    [overlap] = flips.overlapping_pairs.to_dict("records")
    assert (overlap["condition"], overlap["system_1"], overlap["system_2"]) == ("a", "A", "B")
    assert [overlap[c] for c in ("lo_1", "hi_1", "lo_2", "hi_2")] == pytest.approx([0.45, 0.55, 0.45, 0.45])


def test_rar_b_still_ranks_by_g_on_the_same_scores(by_hand):
    flips = _flips(by_hand, "rar-b")
    assert flips.aggregate == "G"
    ranks = flips.ranks.set_index("system")
    assert ranks["rank_a"].to_dict() == {"A": 2, "B": 1, "C": 3} == ranks["rank_b"].to_dict()
    assert ranks.loc["A", ["G_a", "G_min_a", "G_max_a", "G_b"]].tolist() == pytest.approx(
        [0.3, math.sqrt(0.85 * 0.05), math.sqrt(0.95 * 0.15), math.sqrt(0.08)])
    assert flips.flipped_pairs.empty and flips.overlapping_pairs.empty
    assert flips.kendall_tau_b == pytest.approx(1.0)


def test_the_page_names_the_mean_and_shows_its_flip(open_url, by_hand):
    at = open_url(by_hand, "rank-flips.py", {"bench": "r2med", "flip_a": "fp32", "flip_b": "bf16"})
    assert not at.exception and not texts(at, "error"), texts(at, "error")
    shown = {m.label: m.value for m in at.metric}
    assert (shown["Systems"], shown["Kendall τ-b"], shown["Flipped pairs"], shown["Overlapping pairs"]) == (
        "3", "0.333", "1", "1"), shown
    ranked_by = at.selectbox(key="flip_task")
    assert ranked_by.value == "mean" and ranked_by.options[0] == "mean over the shared tasks", ranked_by.options
    flipped = next(frame.value for frame in at.dataframe if "system_1" in frame.value and "mean_a_1" in frame.value)
    assert flipped[["system_1", "system_2"]].values.tolist() == [["A", "B"]]
    assert "flip_task" not in at.query_params, "the default (the benchmark's aggregate) stays out of the link"


def test_the_page_ranks_rar_b_by_g(open_url, by_hand):
    at = open_url(by_hand, "rank-flips.py", {"bench": "rar-b", "flip_a": "fp32", "flip_b": "bf16"})
    assert not at.exception and not texts(at, "error"), texts(at, "error")
    shown = {m.label: m.value for m in at.metric}
    assert (shown["Kendall τ-b"], shown["Flipped pairs"], shown["Overlapping pairs"]) == ("1.000", "0", "0"), shown
    assert at.selectbox(key="flip_task").options[0] == "G over the shared tasks"


def test_the_api_ranks_r2med_flips_by_the_mean_and_names_it(by_hand, monkeypatch):
    """The JSON API's rank-flips answer is the page's: ranked by R2MED's mean (its numbers and its name), and the
    link key ``flip_task`` takes ``mean`` (the default, left out of the echoed link) or a task."""
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from ui import api, data

    monkeypatch.setenv("TIEBREAK_DATA", str(by_hand))
    data.clear_answers()
    client = TestClient(Starlette(routes=api.ROUTES), raise_server_exceptions=False)
    try:
        base = {"bench": "r2med", "setting": "full", "metric": "ndcg@10", "instr": "without", "flip_a": "fp32",
                "flip_b": "bf16"}
        answer = client.get("/api/v1/rank-flips", params=base)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["ranked_by"] == "mean" and "flip_task" not in body["api"]["params"]
        assert {row["system"]: row["rank_a"] for row in body["ranks"]} == {"A": 1, "B": 2, "C": 3}
        assert len(body["flipped_pairs"]) == 1
        assert client.get("/api/v1/rank-flips", params={**base, "flip_task": "mean"}).json()["ranked_by"] == "mean"
        by_task = client.get("/api/v1/rank-flips", params={**base, "flip_task": "Biology"}).json()
        assert by_task["ranked_by"] == "Biology" and by_task["api"]["params"]["flip_task"] == "Biology"
        assert client.get("/api/v1/rank-flips", params={**base, "flip_task": "G"}).status_code == 400
    finally:
        data.clear_answers()
