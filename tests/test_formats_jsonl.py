"""JSON lines (evalcore.formats.jsonl): a real qrels file, errors at their line, numbers as ids and grades."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.errors import InputError
from evalcore.formats import read_qrels, read_run
from formats_data import raises_at, write_text
from needs import require_source


def test_r2med_qrels_jsonl_matches_a_plain_json_parse() -> None:
    R2MED_QRELS = require_source("r2med-paper") / "demo-dataset" / "Biology-demo" / "qrels.jsonl"
    records = [json.loads(line) for line in R2MED_QRELS.read_text().splitlines() if line.strip()]
    qrels = read_qrels(R2MED_QRELS)
    assert qrels.column("qid").to_pylist() == [str(r["q_id"]) for r in records]
    assert qrels.column("docid").to_pylist() == [r["p_id"] for r in records]
    assert qrels.column("relevance").to_pylist() == [int(r["score"]) for r in records]


def test_jsonl_errors_name_the_line(tmp_path: Path) -> None:
    good = '{"qid": "q", "docid": "%s", "score": 1}\n'
    path = write_text(tmp_path / "run.jsonl", good % "a" + "\n" + good % "b" + '{"qid": "q", "docid": "c", "score": \n')
    with raises_at(path, 4, "expected one JSON object per line"):
        read_run(path)
    path = write_text(tmp_path / "types.jsonl", good % "a" + '{"qid": 5, "docid": "b", "score": 1}\n')
    with raises_at(path, 2, "'qid'", "line 1"):
        read_run(path)
    path = write_text(tmp_path / "nan.jsonl", good % "a" + '{"qid": "q", "docid": "b", "score": NaN}\n')
    with pytest.raises(InputError) as info:
        read_run(path)
    assert info.value.line == 2


def test_jsonl_numeric_ids_become_text(tmp_path: Path) -> None:
    path = write_text(tmp_path / "run.jsonl", '{"qid": 7, "docid": 12, "score": 0.5}\n')
    assert read_run(path).to_pylist() == [{"qid": "7", "docid": "12", "score": 0.5}]


@pytest.mark.parametrize("grade", ["1e30", "9.3e18", "1e19"])
def test_jsonl_grades_beyond_int64_are_an_input_error(tmp_path: Path, grade: str) -> None:
    path = write_text(tmp_path / "qrels.jsonl", '{"qid": "q", "docid": "a", "relevance": 1}\n\n'
                      f'{{"qid": "q", "docid": "b", "relevance": {grade}}}\n')
    with raises_at(path, 3, "that fits in 64 bits"):
        read_qrels(path)
