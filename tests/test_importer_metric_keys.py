"""Each published metric key lands under the right metric with its value: every key an MTEB or R2MED result
file uses gets a value of its own here, and the imported table must hold exactly the (metric, value) pairs
written out by hand below (a key mapped to the wrong cutoff, e.g. ``recall_at_100`` as ``recall@10``, fails).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore import importers

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "store"

# MTEB spelling -> value written in the fixture; EXPECTED_MTEB says what each must become
MTEB_FILE = {"ndcg_at_10": 0.101, "mrr_at_10": 0.102, "recall_at_10": 0.103, "recall_at_100": 0.104,
             "map_at_10": 0.105, "precision_at_1": 0.106, "precision_at_10": 0.107,
             # published too, but not metrics the store keeps
             "ndcg_at_1000": 0.9, "recall_at_1000": 0.91, "mrr_at_1000": 0.92, "main_score": 0.101}
EXPECTED_MTEB = {"ndcg@10": 0.101, "mrr@10": 0.102, "recall@10": 0.103, "recall@100": 0.104, "ap@10": 0.105,
                 "p@1": 0.106, "p@10": 0.107}

R2MED_FILE = {"NDCG@10": 0.201, "Recall@10": 0.202, "Recall@100": 0.203, "MAP@10": 0.204, "P@1": 0.205,
              "P@10": 0.206, "MRR": 0.5, "NDCG@1000": 0.9}
EXPECTED_R2MED = {"ndcg@10": 0.201, "recall@10": 0.202, "recall@100": 0.203, "ap@10": 0.204, "p@1": 0.205,
                  "p@10": 0.206}


def _metric_values(task_scores, system: str, task: str) -> dict[str, float]:
    rows = task_scores[(task_scores.system == system) & (task_scores.task == task)]
    assert not rows.duplicated("metric").any(), rows
    return dict(zip(rows.metric, rows.value.astype(float)))


def _mteb_tree(root: Path, layout: str) -> None:
    folder = root / "results" / "org__model" / "rev1"
    folder.mkdir(parents=True)
    (folder / "model_meta.json").write_text(json.dumps({"name": "org/model", "revision": "rev1"}))
    if layout == "current":  # mteb >= 1.11
        result = {"task_name": "SIQA", "mteb_version": "1.12.0",
                  "scores": {"test": [{"hf_subset": "default", "languages": ["eng-Latn"], **MTEB_FILE}]}}
    else:  # the older flat layout
        result = {"mteb_dataset_name": "SIQA", "mteb_version": "1.1.0", "test": dict(MTEB_FILE)}
    (folder / "SIQA.json").write_text(json.dumps(result))


@pytest.mark.parametrize("layout", ["current", "legacy"])
def test_every_mteb_key_is_imported_under_its_metric_with_its_value(tmp_path, layout):
    _mteb_tree(tmp_path, layout)
    task_scores, _ = importers.read_mteb_results(tmp_path)
    assert _metric_values(task_scores, "org/model", "SIQA") == pytest.approx(EXPECTED_MTEB, abs=0)


def test_every_r2med_key_is_imported_under_its_metric_with_its_value(tmp_path):
    folder = tmp_path / "results" / "base retriever" / "nv"
    folder.mkdir(parents=True)
    (folder / "Biology.json").write_text(json.dumps(
        {"dataset_name": "Biology", "model_name": "nv", "test": dict(R2MED_FILE)}))
    task_scores, _ = importers.read_r2med_results(tmp_path)
    assert _metric_values(task_scores, "NV-Embed-v2", "R2MEDBiologyRetrieval") == pytest.approx(EXPECTED_R2MED,
                                                                                                 abs=0)


def test_the_shipped_fixture_tree_imports_each_metric_it_holds():
    """tests/fixtures/store/mteb_layouts: acme/new-model's ARCChallenge (rev-new) holds five metrics."""
    task_scores, _ = importers.read_mteb_results(FIXTURES / "mteb_layouts")
    assert _metric_values(task_scores, "acme/new-model", "ARCChallenge") == pytest.approx(
        {"ndcg@10": 0.25, "mrr@10": 0.26, "recall@100": 0.9, "ap@10": 0.24, "p@1": 0.1}, abs=0)
