"""The readers (evalcore.formats.readers): qrels in every tabular format, hostile bytes give a table or one
InputError, and read_run_rows: the rows of a run with the physical line of each, an optional extra id column, and
the format taken from a given name when the path has none."""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.errors import InputError
from evalcore.formats import QRELS_SCHEMA, RUN_SCHEMA, read_qrels, read_run, read_run_rows, write_parquet_atomic
from formats_data import write_text


@pytest.mark.parametrize("extension", ["parquet", "csv", "jsonl"])
def test_tabular_qrels(tmp_path: Path, extension: str) -> None:
    frame = pd.DataFrame({"qid": ["q1", "q1", "q2"], "docid": ["a", "b", "a"], "relevance": [1, 0, 3]})
    path = tmp_path / f"qrels.{extension}"
    if extension == "parquet":
        write_parquet_atomic(frame, path)
    elif extension == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_json(path, orient="records", lines=True)
    assert read_qrels(path).to_pandas().equals(frame)


trec_tokens = st.sampled_from(["q1", "Q0", "d1", "d2", "1", "-0", "1e309", "NaN", "0.5", "abc", "\t", " ", "  ",
                               "\r", "\n", "\r\n", "\ufeff", "\x00", "é", ":", '"', ",", "{", "}"])


@pytest.mark.parametrize("extension", ["trec", "qrels", "tsv", "csv", "jsonl", "parquet"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(trec_tokens, max_size=60), garbage=st.binary(max_size=16), use_garbage=st.booleans())
def test_mutated_input_gives_a_table_or_input_error(tmp_path: Path, extension: str, pieces: list[str],
                                                    garbage: bytes, use_garbage: bool) -> None:
    content = "".join(pieces).encode("utf-8") + (garbage if use_garbage else b"")
    if extension == "parquet":
        content = b"PAR1" + content
    path = write_text(tmp_path / f"fuzz.{extension}", content)
    reader = read_qrels if extension == "qrels" else read_run
    try:
        table = reader(path)
    except InputError as error:
        assert str(error).startswith(str(path))
    else:
        assert table.num_rows > 0
        assert table.schema in (RUN_SCHEMA, QRELS_SCHEMA)


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
