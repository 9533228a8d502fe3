"""CSV and TSV (evalcore.formats.delimited): RFC 4180 quoting, BEIR's qrels, field counts, a header without rows."""
from __future__ import annotations

from pathlib import Path

from evalcore.formats import detect_qrels_format, read_qrels, read_run
from formats_data import raises_at, write_text


def test_csv_quoted_field_with_delimiter(tmp_path: Path) -> None:
    path = write_text(tmp_path / "run.csv", 'qid,docid,score\n"q,1","say ""hi""",1\nq2,d,2\n"a,b",3\n')
    with raises_at(path, 4, "expected 3 comma-separated columns", "found 2"):
        read_run(path)  # the last row has a quoted comma, so it really holds two fields
    path = write_text(tmp_path / "run.csv", 'qid,docid,score\n"q,1","say ""hi""",1\nq2,d,2\n"a,b",x,3\n')
    run = read_run(path)
    assert run.column("qid").to_pylist() == ["q,1", "q2", "a,b"]
    assert run.column("docid").to_pylist() == ['say "hi"', "d", "x"]


def test_beir_qrels_tsv(tmp_path: Path) -> None:
    path = write_text(tmp_path / "test.tsv", "query-id\tcorpus-id\tscore\n007\tdoc-1\t1\n007\tdoc-2\t2\n")
    assert detect_qrels_format(path) == "tsv"
    assert read_qrels(path).to_pylist() == [{"qid": "007", "docid": "doc-1", "relevance": 1},
                                            {"qid": "007", "docid": "doc-2", "relevance": 2}]


def test_header_only_csv_is_empty(tmp_path: Path) -> None:
    path = write_text(tmp_path / "run.csv", "qid,docid,score\n")
    with raises_at(path, None, "empty file"):
        read_run(path)


def test_csv_row_with_wrong_field_count(tmp_path: Path) -> None:
    path = write_text(tmp_path / "run.csv", "qid,docid,score\nq,a,1\n\nq,b\n")
    with raises_at(path, 4, "expected 3 comma-separated columns", "found 2"):
        read_run(path)
