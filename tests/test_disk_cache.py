"""evalcore.disk_cache: bootstrap resample counts drawn once and read back by later processes, bit for bit the
generator's draws; damaged entries and unusable folders only cost a new draw."""
from __future__ import annotations

import numpy as np
import pytest

from evalcore import aggregate, disk_cache

SHAPES = (7, 30, 1, 12)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.CACHE_ENV, str(tmp_path))
    disk_cache.resample_counts.cache_clear()
    aggregate.shared_resample_counts.cache_clear()
    original = aggregate.shared_resample_counts  # a test may replace it
    yield tmp_path
    disk_cache.resample_counts.cache_clear()
    original.cache_clear()


def definition(shapes, n, seed):
    """The draws as aggregate defines them, without any cache."""
    rng = np.random.default_rng(seed)
    return [aggregate.resample_counts(k, n, rng) for k in shapes]


def assert_same_draws(got, shapes, n, seed):
    expected = definition(shapes, n, seed)
    assert len(got) == len(expected)
    for block, want in zip(got, expected):
        assert block.shape == want.shape
        np.testing.assert_array_equal(np.asarray(block, dtype=np.float32), want)


def entries(folder):
    return sorted(p for p in folder.rglob("*.npy"))


def test_a_new_process_reads_the_draws_an_earlier_one_stored(cache, monkeypatch):
    drawn = disk_cache.resample_counts(SHAPES, 200, 3)
    assert_same_draws(drawn, SHAPES, 200, 3)
    assert len(entries(cache)) == 1

    disk_cache.resample_counts.cache_clear()  # as a new process
    aggregate.shared_resample_counts.cache_clear()

    def no_drawing(*args):
        raise AssertionError("drew again instead of reading the stored draws")

    monkeypatch.setattr(aggregate, "shared_resample_counts", no_drawing)
    read = disk_cache.resample_counts(SHAPES, 200, 3)
    assert_same_draws(read, SHAPES, 200, 3)
    assert all(not block.flags.writeable for block in read)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "wrong_counts", "other_shape"])
def test_a_damaged_entry_is_drawn_again(cache, damage):
    disk_cache.resample_counts(SHAPES, 50, 1)
    (entry,) = entries(cache)
    if damage == "truncate":
        entry.write_bytes(entry.read_bytes()[:100])
    elif damage == "garbage":
        entry.write_bytes(b"not an npy file at all")
    elif damage == "wrong_counts":  # a valid array of the right size whose rows do not sum to n
        flat = np.load(entry)
        flat[3] += 1
        np.save(entry, flat)
    else:
        np.save(entry, np.zeros(10, np.uint8))
    disk_cache.resample_counts.cache_clear()
    aggregate.shared_resample_counts.cache_clear()
    assert_same_draws(disk_cache.resample_counts(SHAPES, 50, 1), SHAPES, 50, 1)
    disk_cache.resample_counts.cache_clear()
    assert_same_draws(disk_cache.resample_counts(SHAPES, 50, 1), SHAPES, 50, 1)  # the rewritten entry


def test_seed_resamples_and_shapes_key_the_entries(cache):
    for args in [((5, 9), 40, 0), ((5, 9), 40, 1), ((5, 9), 41, 0), ((9, 5), 40, 0)]:
        assert_same_draws(disk_cache.resample_counts(*args), *args)
    assert len(entries(cache)) == 4


def test_off_or_unwritable_folders_still_give_the_draws(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.CACHE_ENV, "off")
    disk_cache.resample_counts.cache_clear()
    assert disk_cache.cache_root() is None
    assert_same_draws(disk_cache.resample_counts(SHAPES, 20, 5), SHAPES, 20, 5)
    blocker = tmp_path / "a-file"
    blocker.write_text("the cache folder cannot be created below a file")
    monkeypatch.setenv(disk_cache.CACHE_ENV, str(blocker / "cache"))
    disk_cache.resample_counts.cache_clear()
    assert_same_draws(disk_cache.resample_counts(SHAPES, 20, 6), SHAPES, 20, 6)
    assert not list(tmp_path.rglob("*.npy")) and not list(tmp_path.rglob("*.tmp"))
    disk_cache.resample_counts.cache_clear()


def test_counts_of_other_shapes_are_refused():
    values = [np.random.default_rng(0).random((3, 8))]
    wrong = (np.ones((10, 9), np.uint8),)
    with pytest.raises(ValueError, match="do not match"):
        aggregate.bootstrap_task_and_g(values, n_resamples=10, counts=wrong)


def test_store_intervals_are_the_same_with_stored_draws(cache, monkeypatch, tmp_path_factory):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent / "pages"))
    import synthetic_data

    from evalcore.store import Condition, Store

    data = synthetic_data.write_small(tmp_path_factory.mktemp("draws-data"))
    cond = Condition("rar-b", "ndcg@10", "full", False, "bf16")
    drawn = Store(data).leaderboard(cond, bootstrap=300).ranked
    disk_cache.resample_counts.cache_clear()
    aggregate.shared_resample_counts.cache_clear()
    read = Store(data).leaderboard(cond, bootstrap=300).ranked
    monkeypatch.setenv(disk_cache.CACHE_ENV, "off")
    disk_cache.resample_counts.cache_clear()
    aggregate.shared_resample_counts.cache_clear()
    uncached = Store(data).leaderboard(cond, bootstrap=300).ranked
    for column in ("G_lo", "G_hi", "rank_lo", "rank_hi"):
        np.testing.assert_array_equal(drawn[column].to_numpy(), read[column].to_numpy())
        np.testing.assert_array_equal(drawn[column].to_numpy(), uncached[column].to_numpy())
    assert drawn["G_lo"].notna().all()


def test_single_kinds_can_be_skipped(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.CACHE_ENV, str(tmp_path))
    monkeypatch.setenv(disk_cache.SKIP_ENV, " intervals , draws")
    assert disk_cache.kind_root("sums") == tmp_path
    assert disk_cache.kind_root("intervals") is None and disk_cache.kind_root("draws") is None
    assert disk_cache.entry_path("intervals", "f", "k", ".json") is None
    monkeypatch.delenv(disk_cache.SKIP_ENV)
    assert disk_cache.kind_root("intervals") == tmp_path
    monkeypatch.setenv(disk_cache.CACHE_ENV, "off")
    assert disk_cache.kind_root("sums") is None
    with pytest.raises(ValueError, match="unknown cache kind"):
        disk_cache.kind_root("everything")


def test_json_entries_round_trip_exactly_and_only_under_their_own_key(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.CACHE_ENV, str(tmp_path))
    monkeypatch.delenv(disk_cache.SKIP_ENV, raising=False)
    values = {"g": [0.1 + 0.2, float("nan"), 1 / 3, 5e-324], "names": ["a'b", "名前"]}
    entry = disk_cache.entry_path("intervals", "f", "key one", ".json")
    assert entry != disk_cache.entry_path("intervals", "f", "key two", ".json")
    assert disk_cache.write_json(entry, "key one", values)
    read = disk_cache.read_json(entry, "key one")
    assert read["names"] == values["names"]
    np.testing.assert_array_equal(np.array(read["g"]), np.array(values["g"]))  # bit for bit, NaN included
    assert disk_cache.read_json(entry, "key two") is None  # a file holding another key is not served
    assert disk_cache.read_json(tmp_path / "missing.json", "key one") is None
    assert not list(tmp_path.rglob("*.tmp"))


def test_prune_keeps_the_newest_entries_and_sweeps_stale_temporaries(tmp_path):
    import os
    import time

    now = time.time()
    for i in range(7):  # entry-0 oldest … entry-6 newest
        path = tmp_path / f"entry-{i}.json"
        path.write_text("{}")
        os.utime(path, (now - 100 + i, now - 100 + i))
    other = tmp_path / "other.npy"
    other.write_bytes(b"x")
    os.utime(other, (now - 1000, now - 1000))
    stale, fresh = tmp_path / ".abc.tmp", tmp_path / ".def.tmp"
    for path, age in ((stale, disk_cache.STALE_TEMPORARY_SECONDS + 60), (fresh, 5)):
        path.write_bytes(b"half written")
        os.utime(path, (now - age, now - age))
    assert disk_cache.prune(tmp_path, 4, ".json") == 4
    assert sorted(p.name for p in tmp_path.glob("*.json")) == [f"entry-{i}.json" for i in (3, 4, 5, 6)]
    assert other.exists() and fresh.exists() and not stale.exists()  # other suffixes and live writes stay
    assert disk_cache.prune(tmp_path / "missing", 1, ".json") == 0


def test_writes_prune_their_folder_once_per_process(tmp_path, monkeypatch):
    monkeypatch.setattr(disk_cache, "_PRUNED", set())
    folder = tmp_path / "kind"
    for i in range(5):
        assert disk_cache.write_atomic(folder / f"{i}.json", lambda path: open(path, "w").close())
    assert len(list(folder.glob("*.json"))) == 5  # no keep: nothing pruned
    assert disk_cache.write_atomic(folder / "5.json", lambda path: open(path, "w").close(), keep=2)
    assert len(list(folder.glob("*.json"))) == 2 and (folder / "5.json").exists()
    assert disk_cache.write_atomic(folder / "6.json", lambda path: open(path, "w").close(), keep=2)
    assert len(list(folder.glob("*.json"))) == 3  # pruned once per process and folder
