"""evalcore.commands.ingest.ingest_rows ("Add to the leaderboard"): rows already evaluated (a candidate's)
go through the path of ``evalcore ingest`` — a new file under ingested/ with its derived sums, the same board as the
in-memory overlay, a repeat refused with one line and nothing written."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from candidate_data import TASKS, mcr_rows, write_tasks
from evalcore import candidate
from evalcore.commands.ingest import ingest_rows
from evalcore.errors import InputError
from evalcore.store import Condition, Store

COND = Condition("rar-b", "p@1", "mcr", False, "fp32", "input-order")


def files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def rows_and_data(tmp_path: Path) -> tuple[pd.DataFrame, Path]:
    data = write_tasks(tmp_path / "data")
    inputs = candidate.task_inputs(data, "rar-b", "mcr")
    uploads = [(f"{task}.tsv", ("qid\tdocid\tscore\n" + "".join(f"{q}\t{d}\t{(int(q[1:]) % 3 == i) * 1.0}\n"
                                                                  for q, d, s in mcr_rows(task)
                                                                  for i in [int(d[1:])])).encode())
               for task in TASKS]
    rows = candidate.evaluate_candidate(inputs, candidate.read_candidate(uploads, inputs), name="mine")
    return rows, data


def test_ingested_rows_answer_as_the_overlay_did(rows_and_data):
    rows, data = rows_and_data
    overlay = Store(data).with_overlay(rows, name="mine").leaderboard(COND)
    out = ingest_rows(rows, data, name="mine")
    assert out.parent == data / "ingested" and out.is_file()
    assert (out.parent / "_derived" / f"{out.stem}.sums.parquet").is_file()
    stored = Store(data)
    assert stored.skipped == [] and stored.derived_sums[1] == []  # sums read from the derived file
    board = stored.leaderboard(COND)
    lenses = [f"{lens}_{c}" for lens in ("queries", "tasks") for c in ("lo", "hi", "rank_lo", "rank_hi", "tier")]
    columns = ["system", "G", "G_expected", "G_min", "G_max", *lenses, *board.tasks]
    pd.testing.assert_frame_equal(board.ranked[columns], overlay.ranked[columns])
    assert board.ranked["queries_lo"].notna().all() and board.ranked["tasks_hi"].notna().all()


def test_a_repeat_is_one_line_and_writes_nothing(rows_and_data):
    rows, data = rows_and_data
    ingest_rows(rows, data, name="mine")
    before = files(data)
    with pytest.raises(InputError) as caught:
        ingest_rows(rows, data, name="mine")
    assert str(caught.value).startswith("mine: ") and "\n" not in str(caught.value)
    assert files(data) == before


def test_rows_that_fail_the_checks_write_nothing(rows_and_data):
    rows, data = rows_and_data
    before = files(data)
    bad = rows.copy()
    bad.loc[3, "expected"] = float("nan")
    with pytest.raises(InputError, match="^mine: "):
        ingest_rows(bad, data, name="mine")
    assert files(data) == before
