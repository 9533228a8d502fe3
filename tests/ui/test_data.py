"""The data API of the views (ui/data.py): one cached function per question, its cache key explained by
the snapshot of the data folder and the question's arguments."""
from __future__ import annotations

import inspect
import shutil
from pathlib import Path

import pandas as pd
import pytest

from evalcore.store import Condition, Store
from ui import data

COND = Condition("rar-b", "ndcg@10", "full", False, "bf16")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def counted(monkeypatch):
    """How often each Store method ran."""
    calls: dict[str, int] = {}

    def count(name):
        original = getattr(Store, name)

        def counting(self, *args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return original(self, *args, **kwargs)

        monkeypatch.setattr(Store, name, counting)

    for name in ("leaderboard", "facets", "paired_test"):
        count(name)
    return calls


def test_a_question_is_answered_once_however_it_is_spelled(synthetic_dir, fresh_answers, counted):
    snap = data.snapshot(synthetic_dir)
    first = data.leaderboard(snap, COND)
    for again in (data.leaderboard(snap, COND, systems=None), data.leaderboard(snap, cond=COND),
                  data.leaderboard(snap, COND, level=0.95, ranks="marginal", systems=None)):
        pd.testing.assert_frame_equal(again.ranked, first.ranked)
    assert counted["leaderboard"] == 1
    data.leaderboard(snap, COND, systems=["e5-small", "bge-large"])
    data.leaderboard(snap, COND, systems=("e5-small", "bge-large"))
    assert counted["leaderboard"] == 2, "a list and a tuple of the same systems are the same question"
    data.leaderboard(snap, COND, ranks="simultaneous")
    assert counted["leaderboard"] == 3, "another kind of rank sets is another question"
    data.leaderboard(snap, COND, level=0.9)
    assert counted["leaderboard"] == 4, "another level is another question"


def test_an_answer_equals_the_stores(synthetic_dir, fresh_answers):
    snap = data.snapshot(synthetic_dir)
    for options in ({}, {"ranks": "simultaneous", "level": 0.9}):
        board = data.leaderboard(snap, COND, **options)
        direct = Store(synthetic_dir).leaderboard(COND, **options)
        pd.testing.assert_frame_equal(board.ranked, direct.ranked)
        assert (board.level, board.ranks) == (direct.level, direct.ranks)
        for name, lens in direct.lenses.items():
            pd.testing.assert_frame_equal(board.lens(name).adjacent, lens.adjacent)


def test_no_shared_per_query_data_is_an_answer_not_an_error(synthetic_dir, fresh_answers, counted):
    snap = data.snapshot(synthetic_dir)
    published_only = Condition("r2med", "ndcg@10", "full", False, "fp32")
    assert data.paired_test(snap, "e5-small", "bge-large", published_only) is None
    assert data.paired_test(snap, "e5-small", "bge-large", published_only) is None
    assert counted["paired_test"] == 1, "the 'no data' answer is cached too"


def test_new_files_give_a_new_snapshot_and_fresh_answers(synthetic_dir, tmp_path, fresh_answers, monkeypatch):
    folder = tmp_path / "live"
    shutil.copytree(synthetic_dir, folder)
    monkeypatch.setattr(data, "RESCAN_SECONDS", 0.0)
    before = data.snapshot(folder)
    assert "new-bench" not in data.facets(before)["benchmarks"]
    published = pd.read_parquet(folder / "task_scores_synthetic.parquet").assign(benchmark="new-bench")
    published.to_parquet(folder / "task_scores_new.parquet", index=False)
    after = data.snapshot(folder)
    assert after != before
    assert "new-bench" in data.facets(after)["benchmarks"]
    assert "new-bench" not in data.facets(before)["benchmarks"], "an answer belongs to its snapshot"


def test_the_folder_is_rescanned_at_most_every_few_seconds(synthetic_dir, tmp_path, monkeypatch):
    folder = tmp_path / "quiet"
    shutil.copytree(synthetic_dir, folder)
    scans = []
    monkeypatch.setattr(Store, "is_stale", lambda self: scans.append(1) or False)
    monkeypatch.setattr(data, "RESCAN_SECONDS", 3600.0)
    for _ in range(5):
        data.snapshot(folder)
    assert len(scans) == 1


def test_every_question_is_typed_and_points_at_its_store_method():
    questions = [data.facets, data.systems, data.leaderboard, data.tie_summary, data.rank_flips,
                 data.instruction_gap, data.mcr_vs_full, data.per_task, data.query_diff, data.paired_test,
                 data.runs]
    for question in questions:
        signature = inspect.signature(question)
        assert list(signature.parameters)[0] == "data", question.__name__
        assert signature.return_annotation is not inspect.Signature.empty, question.__name__
        assert ":meth:`Store." in question.__doc__, question.__name__


def test_data_dir_from_args_env_and_default(tmp_path):
    assert data.data_dir_from(["--data", str(tmp_path)], {}) == tmp_path.resolve()
    assert data.data_dir_from([], {"TIEBREAK_DATA": str(tmp_path)}) == tmp_path.resolve()
    assert data.data_dir_from(["--da", "x"], {}).name == "data"  # no abbreviations of --data
    assert data.data_dir_from([], {}) == data.DEFAULT_DATA_DIR


def test_data_dir_from_follows_each_argv_and_environment(tmp_path):
    """The --data flag is parsed once per distinct argv: a later call with other arguments or another
    environment still gets its own folder, and the flag still wins over the environment."""
    first, second = tmp_path / "a", tmp_path / "b"
    for _ in range(2):
        assert data.data_dir_from(["--data", str(first)], {}) == first.resolve()
        assert data.data_dir_from(["--data", str(second)], {"TIEBREAK_DATA": str(first)}) == second.resolve()
        assert data.data_dir_from(["--other", "x"], {"TIEBREAK_DATA": str(second)}) == second.resolve()
        assert data.data_dir_from(["--other", "x"], {"TIEBREAK_DATA": str(first)}) == first.resolve()


def test_answer_cache_key_names_every_field_of_a_snapshot_and_a_condition():
    """ui.data.KEY_OF keys the answer cache by a snapshot's and a condition's fields: changing any one field
    (a field added later included) changes the key, so two questions never share an answer."""
    import dataclasses

    from evalcore.store import Condition
    from ui.data import KEY_OF, Snapshot

    examples = {Snapshot: Snapshot(Path("/data"), "f" * 16, ""),
                Condition: Condition("rar-b", "ndcg@10", "full", None, "fp32", "docid-desc")}
    others = {type(Path("/")): Path("/other"), str: "other", bool: True, type(None): False}
    for kind, example in examples.items():
        key = KEY_OF[kind](example)
        for field in dataclasses.fields(kind):
            value = getattr(example, field.name)
            changed = dataclasses.replace(example, **{field.name: others[type(value)]})
            assert KEY_OF[kind](changed) != key, (kind.__name__, field.name)


def test_a_systems_published_numbers_keep_their_publishers_precision():
    """The Evaluate page's "a system on the board": MTEB's round 0.0 for Jaume/gemma-2b-embeddings' WinoGrande
    mrr@10 is 0.000000 (±5e-7), not 0.0 (±0.05); a shipped per-query system's numbers are exact."""
    shipped = data.snapshot(ROOT / "data")
    cond = Condition("rar-b", "mrr@10", "full", None, "fp32")
    numbers = {(n.task, n.label): n for n in data.system_numbers(shipped, "Jaume/gemma-2b-embeddings", cond)}
    wino = numbers[("WinoGrande", "Jaume/gemma-2b-embeddings (input-order)")]
    assert wino.value == 0.0 and wino.tolerance == pytest.approx(5e-7)
    pooled = Condition("rar-b", "ndcg@10", "full-pooled", False, "fp32")
    exact = data.system_numbers(shipped, "tiebreak-run/all-MiniLM-L6-v2", pooled)
    assert exact and all(n.tolerance == 0.0 for n in exact)
