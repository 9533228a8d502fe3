"""Rank flips says "(published scores carry no tie range)" only where published rows are ranked (first-visitor
review: it said so over our own per-query runs). The other side, on the shipped runs, is
``test_views_shipped.py::test_rank_flips_by_one_task_speaks_of_that_tasks_score``; here a data folder of task-level
(published) scores at two precisions, written by hand, where the sentence belongs."""
from __future__ import annotations

import pandas as pd

from app_harness import texts

SYSTEMS = ("pub-a", "pub-b", "pub-c")
TASKS = ("Biology", "Medicine")
# each system's score at each precision (the same on every task, so also its mean): bf16 swaps pub-b and pub-c
VALUES = {"fp32": {"pub-a": 0.50, "pub-b": 0.40, "pub-c": 0.30}, "bf16": {"pub-a": 0.50, "pub-b": 0.29, "pub-c": 0.31}}


def write_published(root) -> None:
    rows = [{"system": system, "benchmark": "r2med", "task": task, "setting": "full", "instruction": False,
             "precision": precision, "metric": "ndcg@10", "value": values[system], "expected": None, "min": None,
             "max": None, "n_queries": 100, "source": "published:by-hand"}
            for precision, values in VALUES.items() for system in SYSTEMS for task in TASKS]
    pd.DataFrame(rows).astype({"expected": "float64", "min": "float64", "max": "float64"}).to_parquet(
        root / "task_scores_by_hand.parquet", index=False)
    pd.DataFrame([{"system": s, "display_name": s, "family": "pub", "n_parameters": 1e8, "license": "mit",
                   "open_weights": True, "uses_instructions": False, "release_date": "2024-01-01", "reference": "",
                   "source": "by-hand"} for s in SYSTEMS]).to_parquet(root / "systems_by_hand.parquet", index=False)


def test_published_rows_without_tie_ranges_are_named(open_url, tmp_path):
    write_published(tmp_path)
    at = open_url(tmp_path, "rank-flips.py", {"bench": "r2med", "flip_a": "fp32", "flip_b": "bf16"})
    assert not at.exception and not texts(at, "error"), texts(at, "error")
    shown = {m.label: m.value for m in at.metric}
    assert (shown["Systems"], shown["Flipped pairs"], shown["Overlapping pairs"]) == ("3", "1", "0"), shown
    said = next(c for c in texts(at, "caption") if "overlapping" in c)
    assert "[mean min, mean max]" in said and "published" in said, said  # R2MED ranks by the mean
