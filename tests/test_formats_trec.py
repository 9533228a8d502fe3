"""TREC text (evalcore.formats.trec): runs and qrels read with their physical lines, runs written with ranks and
tags."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from evalcore.formats import QRELS_SCHEMA, read_qrels, read_run, text, write_run
from formats_data import assert_same_run, raises_at, run_table, run_with_bad_line, synthetic_run, write_text


def test_trec_writer_ranks_by_score_and_keeps_tag(tmp_path: Path) -> None:
    run = run_table(["q1", "q1", "q1", "q2"], ["a", "b", "c", "a"], [0.5, 2.0, 0.5, -1.0])
    run = run.append_column("tag", pa.array(["sys"] * 4))
    path = tmp_path / "run.trec"
    write_run(run, path)
    rows = [line.split() for line in path.read_text().splitlines()]
    assert [row[3] for row in rows] == ["2", "1", "3", "1"]
    assert {row[5] for row in rows} == {"sys"} and {row[1] for row in rows} == {"Q0"}


def test_trec_writer_rejects_whitespace_ids_and_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    with pytest.raises(ValueError, match="whitespace"):
        write_run(run_table(["q 1"], ["d"], [1.0]), path)
    assert list(tmp_path.iterdir()) == []


def test_trec_writer_refuses_ids_that_would_not_read_back(tmp_path: Path) -> None:
    path = tmp_path / "out.trec"
    with pytest.raises(ValueError, match="no whitespace"):
        write_run(run_table(["q\u00a0"], ["d"], [1.0]), path)
    assert not path.exists()


def test_trec_writer_blocks_join_without_losing_lines(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(text, "_WRITE_BLOCK_ROWS", 7)
    run = synthetic_run(5, 13)
    path = tmp_path / "blocks.trec"
    write_run(run, path)
    assert len(path.read_text().splitlines()) == run.num_rows
    assert_same_run(read_run(path), run)


def test_trec_text_quirks_are_accepted(tmp_path: Path) -> None:
    text = "\ufeffq1 Q0 d1 1 2.5 t\r\n\r\n  q1\tQ0   d2 2 -0 t \t\r\nq2 Q0 d3 1 1e3 t\nq2 Q0 d4 2 -0.0 t"
    run = read_run(write_text(tmp_path / "quirks.trec", text))
    assert run.column("qid").to_pylist() == ["q1", "q1", "q2", "q2"]
    assert run.column("docid").to_pylist() == ["d1", "d2", "d3", "d4"]
    assert run.column("score").to_pylist() == [2.5, 0.0, 1000.0, 0.0]


def test_gzipped_trec_run(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "run.trec.gz"
    path.write_bytes(gzip.compress(b"q1 Q0 d1 1 3 t\nq1 Q0 d2 2 2 t\n"))
    assert read_run(path).column("docid").to_pylist() == ["d1", "d2"]


def test_trec_qrels(tmp_path: Path) -> None:
    path = write_text(tmp_path / "q.qrels", "1 0 d1 2\n\n1 0 d2 0\r\n2 Q0 d1 1\n1 0 d1 2\n")
    qrels = read_qrels(path)
    assert qrels.schema == QRELS_SCHEMA
    # the exact repeat on the last line collapses into the first judgement
    assert qrels.to_pylist() == [{"qid": "1", "docid": "d1", "relevance": 2},
                                 {"qid": "1", "docid": "d2", "relevance": 0},
                                 {"qid": "2", "docid": "d1", "relevance": 1}]


@pytest.mark.parametrize("bad_line, needles", [
    ("q1 Q0 dx 1 1.0", ("expected 6 whitespace-separated columns (qid Q0 docid rank score tag)", "found 5")),
    ("q1 Q0 dx 1 1.0 t extra", ("expected 6", "found 7")),
    ("q1 Q0 dx 1 abc t", ("expected a number for score", "'abc'")),
    ("q1 Q0 dx 1 1,5 t", ("expected a number for score",)),
    ("q1 Q0 dx 1 nan t", ("expected a finite score", "'nan'")),
    ("q1 Q0 dx 1 -inf t", ("expected a finite score",)),
    ("q1 Q0 dx 1 1e309 t", ("expected a finite score", "overflow")),
    ("q1 Q0 d2 1 1.0 t", ("duplicate document 'd2' for query 'q1'", "first on line 2")),
])
def test_bad_trec_run_line_is_reported_with_its_physical_line(tmp_path: Path, bad_line: str, needles) -> None:
    path = write_text(tmp_path / "bad.trec", run_with_bad_line(bad_line, 17))
    with raises_at(path, 17, *needles):
        read_run(path)


@pytest.mark.parametrize("grade, needle", [("1.5", "'1.5'"), ("abc", "'abc'"), ("-1", "-1"), ("", "found 3")])
def test_bad_trec_qrels_grade(tmp_path: Path, grade: str, needle: str) -> None:
    path = write_text(tmp_path / "bad.qrels", f"1 0 a 1\n\n1 0 b 0\n1 0 c {grade}\n2 0 a 1\n")
    with raises_at(path, 4, needle):
        read_qrels(path)


def test_ten_megabyte_line_gives_a_clean_error(tmp_path: Path) -> None:
    long_line = "q1 Q0 " + "x" * 10_000_000 + " 1 1.0"
    path = write_text(tmp_path / "long.trec", "q1 Q0 a 1 1 t\n" + long_line + "\n")
    with raises_at(path, 2, "found 5"):
        read_run(path)
    many_fields = write_text(tmp_path / "wide.trec", "q1 Q0 a 1 1 t\n" + "a " * 5_000_000 + "\n")
    with raises_at(many_fields, 2, "expected 6", "found 5000000"):
        read_run(many_fields)


@pytest.mark.parametrize("space", ["\u00a0", "\u2007", "\u3000", "\u2009"])
def test_unicode_spaces_around_ids_are_trimmed_alike_in_trec_and_csv(tmp_path: Path, space: str) -> None:
    """NBSP was trimmed from CSV fields but kept in TREC ids, so the same id did not match (MRR 0.0 for 1.0)."""
    from evalcore import evaluate

    trec_run = write_text(tmp_path / "run.trec", f"q1{space} Q0 {space}d1 1 1.0{space} t\nq1 Q0 d2 2 0.5 t\n")
    csv_run = write_text(tmp_path / "run.csv", f"qid,docid,score\nq1{space},{space}d1,1.0{space}\nq1,d2,0.5\n")
    assert read_run(trec_run).to_pylist() == read_run(csv_run).to_pylist()
    assert read_run(trec_run)["qid"].to_pylist() == ["q1", "q1"]
    csv_qrels = write_text(tmp_path / "qrels.csv", f"qid,docid,relevance\n{space}q1,d1{space},1\n")
    trec_qrels = write_text(tmp_path / "qrels.txt", f"{space}q1 0 d1{space} 1{space}\n")
    assert read_qrels(trec_qrels).to_pylist() == read_qrels(csv_qrels).to_pylist()
    for run in (trec_run, csv_run):
        for qrels in (trec_qrels, csv_qrels):
            result = evaluate(run, qrels, ["mrr@10"])
            assert result["oblivious"].tolist() == [1.0], (run.name, qrels.name)
