"""The writers (evalcore.formats.writers): every run format round trips; atomic paths replace all or nothing and
leave no temporary behind."""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.formats import atomic_path, atomic_paths, detect_run_format, read_run, write_parquet_atomic, write_run
from formats_data import RUN_EXTENSIONS, assert_same_run, run_table, write_text

id_text = st.text(alphabet=st.sampled_from(list("abcXYZ0179_-.:/,\"'#{}é漢")), min_size=1, max_size=8)
finite_scores = st.floats(allow_nan=False, allow_infinity=False, width=64) | st.sampled_from([-0.0, 0.0, 5e-324])


@st.composite
def random_runs(draw) -> pa.Table:
    pairs = draw(st.lists(st.tuples(id_text, id_text), min_size=1, max_size=30, unique=True))
    scores = draw(st.lists(finite_scores, min_size=len(pairs), max_size=len(pairs)))
    return run_table([q for q, _ in pairs], [d for _, d in pairs], scores)


@pytest.mark.parametrize("extension", RUN_EXTENSIONS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=random_runs())
def test_every_run_format_round_trips(tmp_path: Path, extension: str, run: pa.Table) -> None:
    if extension == "trec":  # TREC text cannot hold whitespace in ids; the alphabet has none
        assert not any(" " in value for value in run.column("qid").to_pylist())
    path = tmp_path / f"run.{extension}"
    write_run(run, path)
    assert detect_run_format(path) == extension
    assert_same_run(read_run(path), run)


@pytest.mark.parametrize("interruption", [RuntimeError, KeyboardInterrupt])
def test_atomic_path_leaves_nothing_behind(tmp_path: Path, interruption: type[BaseException]) -> None:
    target = tmp_path / "out.parquet"
    with pytest.raises(interruption):
        with atomic_path(target) as temporary:
            temporary.write_text("partial")
            raise interruption()
    assert list(tmp_path.iterdir()) == []


def test_atomic_path_keeps_the_old_file_on_failure_and_replaces_on_success(tmp_path: Path) -> None:
    target = write_text(tmp_path / "out.txt", "old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as temporary:
            assert temporary.parent == tmp_path and not temporary.name.endswith(".txt")
            temporary.write_text("new")
            raise RuntimeError
    assert target.read_text() == "old" and list(tmp_path.iterdir()) == [target]
    with atomic_path(target) as temporary:
        temporary.write_text("new")
    assert target.read_text() == "new" and list(tmp_path.iterdir()) == [target]


def test_atomic_paths_replace_all_or_none(tmp_path: Path) -> None:
    first, second = write_text(tmp_path / "a.txt", "old a"), write_text(tmp_path / "b.txt", "old b")
    with pytest.raises(RuntimeError):
        with atomic_paths([first, second]) as (a, b):
            a.write_text("new a")
            b.write_text("new b")
            raise RuntimeError
    assert (first.read_text(), second.read_text()) == ("old a", "old b")
    assert sorted(tmp_path.iterdir()) == [first, second]
    with atomic_paths([first, second]) as (a, b):
        a.write_text("new a")
        b.write_text("new b")
    assert (first.read_text(), second.read_text()) == ("new a", "new b")
    assert sorted(tmp_path.iterdir()) == [first, second]


def test_an_imports_files_are_all_synced_before_the_first_rename(tmp_path: Path, monkeypatch) -> None:
    """An importer's task_scores and systems: a disk flush between their renames let a SIGKILL leave the new
    systems file beside the old task_scores (tests/reliability/test_kill_atomic.py caught it)."""
    from evalcore import importers

    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (calls.append("replace"), real_replace(a, b))[1])
    frames = {tmp_path / "x_task_scores.parquet": pd.DataFrame({"v": [1.0]}),
              tmp_path / "x_systems.parquet": pd.DataFrame({"system": ["s"]})}
    importers.write_compact_parquet_files(frames)
    assert calls == ["fsync", "fsync", "replace", "replace"]
    assert all(pq.read_table(path).to_pandas().equals(frame) for path, frame in frames.items())


def test_write_parquet_atomic_accepts_pandas(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    write_parquet_atomic(frame, tmp_path / "sub" / "f.parquet")
    assert pq.read_table(tmp_path / "sub" / "f.parquet").to_pandas().equals(frame)
