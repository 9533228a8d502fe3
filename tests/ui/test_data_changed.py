"""A page is drawn from one version of the data folder: a question about a snapshot the store no longer serves is
not answered from the new files (DataChanged, never cached); tests/pages/test_data_changed_redraw.py: the frame
then draws the whole page again."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from evalcore.store import Condition
from ui import data

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "pages"))

COND = Condition("rar-b", "ndcg@10", "full", None, "fp32", "docid-desc")


@pytest.fixture
def folder(synthetic_dir, tmp_path, monkeypatch):
    copy = tmp_path / "data"
    shutil.copytree(synthetic_dir, copy)
    monkeypatch.setattr(data, "RESCAN_SECONDS", 0.0)
    data.clear_answers()
    yield copy
    data.clear_answers()


def _add_system(folder: Path, name: str) -> None:
    rows = pd.read_parquet(folder / "query_metrics_synthetic.parquet")
    first = rows["system"].iloc[0]
    rows = rows[rows["system"] == first].assign(system=name)
    rows.to_parquet(folder / f"query_metrics_{name}.parquet", index=False)


def test_a_question_about_an_old_snapshot_is_not_answered_from_new_files(folder):
    old = data.snapshot(folder)
    kept = data.leaderboard(old, COND, uncertainty=False)  # answered and kept before the change
    _add_system(folder, "newcomer")
    new = data.snapshot(folder)
    assert new.fingerprint != old.fingerprint
    with pytest.raises(data.DataChanged):
        data.tie_summary(old, COND)  # not kept: would be computed from the new files
    with pytest.raises(data.DataChanged):
        data.tie_summary(old, COND)  # and the refusal was not kept either
    assert data.leaderboard(old, COND, uncertainty=False) is not None  # what was kept under the old snapshot stays
    assert "newcomer" not in set(kept.ranked["system"])
    assert "newcomer" in set(data.leaderboard(new, COND, uncertainty=False).ranked["system"])


def test_a_reload_during_a_computation_discards_its_answer(folder, monkeypatch):
    snap = data.snapshot(folder)
    store = data._store(str(folder))
    original = type(store).tie_summary

    def reloaded_meanwhile(self, *args, **kwargs):
        answer = original(self, *args, **kwargs)
        _add_system(folder, "during")
        self.reload()
        return answer

    monkeypatch.setattr(type(store), "tie_summary", reloaded_meanwhile)
    with pytest.raises(data.DataChanged):
        data.tie_summary(snap, COND)
