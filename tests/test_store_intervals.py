"""The store's one run-time cache (evalcore/store/interval_cache.py): Leaderboard bootstrap intervals kept in
``$TIEBREAK_CACHE`` under the question, the sha256 of every per-query file it reads and the computation's
version. A cached interval is the computed one bit for bit; any other question, file content or version is
computed; without ``TIEBREAK_CACHE`` nothing is written anywhere."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.store import Condition, Store, derivation, derived, interval_cache, statistics
from test_store import SYSTEMS, make_query_metrics
from test_store_integrity import task_row

COND = Condition("bench")


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    """Per-query files with their derived sums (so the load knows their sha256) and a published system."""
    data = tmp_path / "data"
    data.mkdir()
    rows = make_query_metrics(seed=1)
    rows[rows.system.isin(["alpha", "beta"])].to_parquet(data / "ab.parquet")
    rows[rows.system == "gamma"].to_parquet(data / "gamma.parquet")
    pd.DataFrame([task_row("published", t, v, benchmark="bench") for t, v in (("T1", .5), ("T2", .4), ("T3", .3))]
                 ).to_parquet(data / "published.parquet")
    derivation.derive(data)
    return data


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch) -> Path:
    place = tmp_path / "cache"
    monkeypatch.setenv("TIEBREAK_CACHE", str(place))
    monkeypatch.setattr(interval_cache, "_pruned", set())
    return place


def computations(monkeypatch) -> list[int]:
    calls: list[int] = []
    original = statistics.intervals
    monkeypatch.setattr(statistics, "intervals", lambda *a, **k: calls.append(1) or original(*a, **k))
    return calls


def board(folder: Path, cond: Condition = COND, **kwargs) -> pd.DataFrame:
    return Store(folder).leaderboard(cond, **{"bootstrap": 120, "seed": 4, **kwargs}).ranked


def test_a_new_process_reads_the_interval_bit_for_bit(folder, cache, monkeypatch):
    monkeypatch.delenv("TIEBREAK_CACHE")
    computed = board(folder)
    monkeypatch.setenv("TIEBREAK_CACHE", str(cache))
    calls = computations(monkeypatch)
    first = board(folder)
    assert calls == [1] and len(list((cache / "intervals").rglob("*.json"))) == 1
    again = board(folder)  # a new Store, as a new process
    assert calls == [1]
    pd.testing.assert_frame_equal(first, computed, check_exact=True)
    pd.testing.assert_frame_equal(again, computed, check_exact=True)
    assert again["G_lo"].notna().sum() == 3


@pytest.mark.parametrize("change", [
    dict(seed=5), dict(bootstrap=121), dict(systems=["alpha", "beta"]), dict(tasks=["T1", "T2"]),
    dict(cond=Condition("bench", precision="bf16")), dict(cond=Condition("bench", instruction=True)),
    dict(cond=Condition("bench", instruction=None)),
])
def test_any_other_question_is_computed(folder, cache, monkeypatch, change):
    board(folder)
    calls = computations(monkeypatch)
    kwargs = dict(change)
    cond = kwargs.pop("cond", COND)
    served = board(folder, cond, **kwargs)
    assert calls == [1]
    monkeypatch.delenv("TIEBREAK_CACHE")
    pd.testing.assert_frame_equal(served, board(folder, cond, **kwargs), check_exact=True)


def test_other_bytes_in_a_file_are_computed_afresh(folder, cache, monkeypatch):
    old = board(folder)
    rows = make_query_metrics(seed=9)
    rows[rows.system == "gamma"].to_parquet(folder / "gamma.parquet")
    derivation.derive(folder)
    calls = computations(monkeypatch)
    new = board(folder)
    assert calls == [1]
    assert not np.allclose(new.set_index("system").loc[SYSTEMS, "G_lo"], old.set_index("system").loc[SYSTEMS, "G_lo"])
    monkeypatch.delenv("TIEBREAK_CACHE")
    pd.testing.assert_frame_equal(new, board(folder), check_exact=True)


def test_a_file_without_a_known_sha256_is_never_cached(folder, cache, monkeypatch):
    for sums in folder.rglob(f"*{derived.SUMS_SUFFIX}"):
        sums.unlink()  # scanned at load: no sha256 computed
    calls = computations(monkeypatch)
    board(folder)
    board(folder)
    assert calls == [1, 1] and not (cache / "intervals").exists()


def test_an_overlay_is_never_cached(folder, cache, monkeypatch):
    calls = computations(monkeypatch)
    extra = make_query_metrics(seed=3, systems=["delta"])
    for _ in range(2):
        Store(folder).with_overlay(extra).leaderboard(COND, bootstrap=60)
    assert calls == [1, 1] and not cache.exists(), "nothing of a visitor's run on disk, task-level ranges included"


def test_without_a_cache_folder_nothing_is_written_anywhere(folder, tmp_path, monkeypatch):
    monkeypatch.delenv("TIEBREAK_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    calls = computations(monkeypatch)
    board(folder)
    board(folder)
    assert calls == [1, 1] and not (tmp_path / "home").exists() and not (tmp_path / "xdg").exists()


def test_damaged_or_foreign_entries_are_computed(folder, cache, monkeypatch):
    reference = board(folder)
    board(folder, bootstrap=60)
    entries = sorted((cache / "intervals").rglob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    assert len(entries) == 2
    calls = computations(monkeypatch)
    entries[0].write_bytes(entries[1].read_bytes())  # another question's entry under this name
    pd.testing.assert_frame_equal(board(folder), reference, check_exact=True)
    entries[0].write_text("{not json")
    pd.testing.assert_frame_equal(board(folder), reference, check_exact=True)
    stored = json.loads(entries[1].read_text())
    stored["G"][0] = stored["G"][0][:-1]  # the right key, a wrong shape
    entries[1].write_text(json.dumps(stored))
    board(folder, bootstrap=60)
    assert calls == [1, 1, 1]


def test_the_version_in_the_key_is_bumped_when_the_numbers_change(folder):
    """Change detector for interval_cache.VERSION (the correctness of the numbers is checked against explicit
    resampling in tests/test_store.py): the intervals of one fixed question, pinned. When a change to the
    bootstrap (the draws, the kernel, the percentiles, the column order) moves them, bump
    interval_cache.VERSION — cached intervals of the old computation must not be served — and pin the new
    values here. (rtol 1e-6: float32 products may differ in their last bits between BLAS builds; a change of
    computation moves an interval by ~1e-3.)"""
    ranked = board(folder, bootstrap=200, seed=3).set_index("system").loc[SYSTEMS]
    found = np.concatenate([ranked["G_lo"].to_numpy(), ranked["G_hi"].to_numpy()])
    message = (f"the intervals changed ({found.round(12).tolist()}): bump interval_cache.VERSION (now "
               f"{interval_cache.VERSION}) and pin the new values for it")
    assert interval_cache.VERSION in PINNED, message
    np.testing.assert_allclose(found, PINNED[interval_cache.VERSION], rtol=1e-6, err_msg=message)


# interval_cache.VERSION -> G_lo of alpha, beta, gamma, then their G_hi
PINNED = {1: [0.274096684495, 0.336349153912, 0.398502894651, 0.343597289508, 0.408404249954, 0.467611026744]}
