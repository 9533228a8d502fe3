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


@pytest.mark.parametrize("row", [2, 1], ids=["a later row", "the first row"])
def test_a_row_nested_past_the_limit_is_one_line_not_a_crash(tmp_path: Path, row: int) -> None:
    """pyarrow's JSON reader crashed the process (SIGSEGV) on a row with a value nested 100,000 deep; the nesting
    limit refuses it first. In a child process, so a regression fails the test instead of killing the run."""
    import subprocess
    import sys

    deep = '{"qid": "q2", "docid": "d1", "score": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    good = '{"qid": "q1", "docid": "d1", "score": 1}'
    run = write_text(tmp_path / "run.jsonl", (good + "\n" + deep if row == 2 else deep + "\n" + good) + "\n")
    qrels = write_text(tmp_path / "qrels.txt", "q1 0 d1 1\n")
    done = subprocess.run([sys.executable, "-m", "evalcore", "evaluate", "--run", str(run), "--qrels", str(qrels)],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    assert done.stderr.strip() == (f"evalcore evaluate: error: {run}:{row}: more than 100 levels of nesting in one "
                                   "JSON value (the JSON nesting limit; raise TIEBREAK_MAX_JSON_DEPTH to read it, "
                                   "0 = no limit)")


def test_a_deep_row_within_the_limit_is_read_and_a_lower_limit_refuses_it(tmp_path: Path, monkeypatch) -> None:
    path = write_text(tmp_path / "run.jsonl", '{"qid": "q1", "docid": "d1", "score": 1, "x": [[["[[[["]]]}\n')
    assert read_run(path).num_rows == 1  # brackets inside a string do not nest
    monkeypatch.setenv("TIEBREAK_MAX_JSON_DEPTH", "2")
    with raises_at(path, 1, "more than 2 levels of nesting"):
        read_run(path)
