"""evalcore.formats.read_run_rows (added for issue 20's candidate runs): the rows of a run with the physical line of
each, an optional extra id column, and the format taken from a given name when the path has none."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalcore.errors import InputError
from evalcore.formats import read_run_rows


def test_lines_skip_blank_lines_and_a_group_column_is_read_as_ids(tmp_path: Path):
    path = tmp_path / "all.csv"
    path.write_text("task,qid,docid,score\nA,q1,d1,0.5\n\nB,q1,d2,1\n7,q2,d3,2\n")
    run, group, numbers = read_run_rows(path, group_column="task")
    assert run.column_names == ["qid", "docid", "score"] and run["score"].to_pylist() == [0.5, 1.0, 2.0]
    assert group.to_pylist() == ["A", "B", "7"]
    assert [numbers.of(i) for i in range(run.num_rows)] == [2, 4, 5]


def test_a_trec_run_has_no_group_column(tmp_path: Path):
    path = tmp_path / "x.trec"
    path.write_text("q1 Q0 d1 1 0.5 t\n")
    assert read_run_rows(path)[0].num_rows == 1
    with pytest.raises(InputError, match="expected a task column: a TREC run has none"):
        read_run_rows(path, group_column="task")


def test_the_format_comes_from_the_name_when_the_path_has_none(tmp_path: Path):
    data = b"qid\tdocid\tscore\nq1\td1\tNaN\n"
    descriptor = os.memfd_create("upload")
    try:
        os.write(descriptor, data)
        path = Path(f"/proc/self/fd/{descriptor}")
        with pytest.raises(InputError, match=r":2: expected a finite score"):
            read_run_rows(path, name="mine.tsv")
        with pytest.raises(InputError, match="missing column"):  # the name says CSV: one column, no qid/docid
            read_run_rows(path, name="mine.csv")
    finally:
        os.close(descriptor)
