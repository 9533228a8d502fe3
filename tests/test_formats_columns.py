"""Columns (evalcore.formats.columns): header aliases, extra columns, and a missing column named with what was found."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from evalcore.formats import read_run
from formats_data import raises_at, write_text


def test_beir_style_column_names_and_extra_columns(tmp_path: Path) -> None:
    path = write_text(tmp_path / "run.tsv", "extra\tquery-id\tcorpus-id\tscore\nx\tq1\td1\t0.5\n\ny\tq1\td2\t0.25\n")
    run = read_run(path)
    assert run.column("docid").to_pylist() == ["d1", "d2"]
    assert run.column("score").to_pylist() == [0.5, 0.25]


def test_missing_columns_name_what_was_found(tmp_path: Path) -> None:
    csv_path = write_text(tmp_path / "run.csv", "qid,doc_name,value\nq,d,1\n")
    with raises_at(csv_path, 1, "missing column(s) docid, score", "found qid, doc_name, value", "expected columns"):
        read_run(csv_path)
    parquet_path = tmp_path / "run.parquet"
    pq.write_table(pa.table({"qid": ["q"], "docid": ["d"]}), parquet_path)
    with raises_at(parquet_path, None, "missing column(s) score", "found qid, docid"):
        read_run(parquet_path)


def test_a_missing_column_without_aliases_is_named_alone(tmp_path: Path) -> None:
    """A column with no other accepted name (a candidate table's ``task``) reads ``task``, not ``task (or )``."""
    from evalcore.formats import read_run_rows

    path = write_text(tmp_path / "run.csv", "qid,docid,score\nq,d,1\n")
    with raises_at(path, 1, "missing column(s) task: expected columns task, qid (or query-id, query_id)"):
        read_run_rows(path, group_column="task")
