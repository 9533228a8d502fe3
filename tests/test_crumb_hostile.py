"""``evalcore import-crumb`` on hostile CRUMB files: one line naming the file and line, exit code 2, and
nothing written (no per-query file, no derived sums, an earlier import untouched)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalcore.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "crumb"
LABELS = Path("clinical_trial") / "eval" / "query_labels.jsonl"
RUN = "clinical_trial_minilm.jsonl"


@pytest.fixture
def crumb_copy(tmp_path):
    """A writable copy of the fixture folder: (CRUMB folder, runs folder of minilm, data folder)."""
    crumb_dir = tmp_path / "crumb"
    shutil.copytree(FIXTURES, crumb_dir)
    return crumb_dir, crumb_dir / "runs" / "minilm", tmp_path / "data"


def _import(capsys, crumb_dir: Path, runs: Path, data: Path, *extra: str) -> tuple[int, str]:
    code = main(["import-crumb", str(runs), "--crumb", str(crumb_dir), "--data", str(data), *extra])
    return code, capsys.readouterr().err


def _written(data: Path) -> list[str]:
    return sorted(str(p.relative_to(data)) for p in data.rglob("*.parquet")) if data.exists() else []


def _replace_line(path: Path, number: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[number - 1] = text
    path.write_text("\n".join(lines) + "\n")


def _edit_record(path: Path, number: int, edit) -> None:
    lines = path.read_text().splitlines()
    record = json.loads(lines[number - 1])
    edit(record)
    _replace_line(path, number, json.dumps(record))


LABEL_CASES = {
    "bad JSON": (lambda p: _replace_line(p, 2, '{"query_id": "ct-2", "passage_qrels": ['), "expected one JSON object"),
    "not an object": (lambda p: _replace_line(p, 2, '["ct-2"]'), "found list"),
    "missing key": (lambda p: _edit_record(p, 2, lambda r: r.pop("full_document_qrels")), "'full_document_qrels'"),
    "NaN label": (lambda p: _replace_line(p, 2, p.read_text().splitlines()[1].replace('"label": 2.0', '"label": NaN')),
                  "NaN"),
    "negative label": (lambda p: _edit_record(p, 2, lambda r: r["full_document_qrels"][0].update(label=-1.0)), ">= 0"),
    "text label": (lambda p: _edit_record(p, 2, lambda r: r["full_document_qrels"][0].update(label="2")),
                   "finite number"),
    "judgement without id": (lambda p: _edit_record(p, 2, lambda r: r["full_document_qrels"][0].pop("id")), "\"id\""),
    "query twice": (lambda p: _edit_record(p, 2, lambda r: r.update(query_id="ct-1")), "first on line 1"),
    "conflicting labels": (lambda p: _edit_record(p, 2, lambda r: r["full_document_qrels"].append(
        {"id": r["full_document_qrels"][0]["id"], "label": 3.0})), "judged twice"),
}


@pytest.mark.parametrize("case", sorted(LABEL_CASES))
def test_hostile_labels_name_file_and_line_and_write_nothing(capsys, crumb_copy, case):
    crumb_dir, runs, data = crumb_copy
    damage, expected = LABEL_CASES[case]
    damage(crumb_dir / LABELS)
    code, err = _import(capsys, crumb_dir, runs, data)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert f"{crumb_dir / LABELS}:2: " in err and expected in err
    assert _written(data) == []


RUN_CASES = {
    "bad JSON": (lambda p: _replace_line(p, 2, '{"query": {"id": "ct-2"}, "items": [{"id": "NCT12:0",'),
                 "expected one JSON object"),
    "id without chunk under MaxP": (lambda p: _edit_record(p, 2, lambda r: r["items"][1].update(id="NCT12")),
                                    "DOC:CHUNK"),
    "empty document part": (lambda p: _edit_record(p, 2, lambda r: r["items"][1].update(id=":3")), "DOC:CHUNK"),
    "item without score": (lambda p: _edit_record(p, 2, lambda r: r["items"][0].pop("score")), "\"score\""),
    "NaN score": (lambda p: _replace_line(p, 2, p.read_text().splitlines()[1].replace('"score": 0.5', '"score": NaN', 1)),
                  "NaN"),
    "no query id": (lambda p: _edit_record(p, 2, lambda r: r.pop("query")), "query id"),
    "query twice": (lambda p: _edit_record(p, 2, lambda r: r.update(query={"id": "ct-1"})), "first on line 1"),
    "item twice": (lambda p: _edit_record(p, 2, lambda r: r["items"].append(dict(r["items"][0]))), "appears twice"),
}


@pytest.mark.parametrize("case", sorted(RUN_CASES))
def test_hostile_runs_name_file_and_line_and_write_nothing(capsys, crumb_copy, case):
    crumb_dir, runs, data = crumb_copy
    damage, expected = RUN_CASES[case]
    damage(runs / RUN)
    code, err = _import(capsys, crumb_dir, runs, data)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert f"{runs / RUN}:2: " in err and expected in err
    assert _written(data) == []


def test_a_bad_file_among_good_ones_leaves_an_earlier_import_untouched(capsys, crumb_copy):
    crumb_dir, runs, data = crumb_copy
    assert _import(capsys, crumb_dir, crumb_dir / "runs" / "bm25", data)[0] == 0
    before = {name: (data / name).read_bytes() for name in _written(data)}
    _edit_record(runs / "paper_retrieval_minilm.jsonl", 1, lambda r: r["items"][0].update(score=float("inf")))
    code, err = _import(capsys, crumb_dir, runs, data)
    assert code == 2 and "paper_retrieval_minilm.jsonl:1: " in err
    assert {name: (data / name).read_bytes() for name in _written(data)} == before


def test_folder_problems_are_one_line(capsys, crumb_copy):
    crumb_dir, runs, data = crumb_copy
    (runs / "notes.txt").write_text("not a run\n")
    code, err = _import(capsys, crumb_dir, runs, data)
    assert code == 2 and "notes.txt: cannot tell the task" in err
    (runs / "notes.txt").unlink()
    shutil.copy(runs / RUN, runs / "clinical_trial_again.jsonl")
    code, err = _import(capsys, crumb_dir, runs, data)
    assert code == 2 and "a second run for clinical_trial" in err
    (runs / "clinical_trial_again.jsonl").unlink()
    (crumb_dir / "legal_qa" / "eval" / "query_labels.jsonl").unlink()
    code, err = _import(capsys, crumb_dir, runs, data)
    assert code == 2 and "query_labels.jsonl: file not found" in err
    assert _written(data) == []


def test_the_same_import_twice_is_refused(capsys, crumb_copy):
    crumb_dir, runs, data = crumb_copy
    assert _import(capsys, crumb_dir, runs, data)[0] == 0
    written = _written(data)
    code, err = _import(capsys, crumb_dir, runs, data)
    assert code == 2 and "already" in err
    assert _written(data) == written


def test_a_trec_run_without_chunk_ids_under_maxp_names_its_line(capsys, crumb_copy):
    crumb_dir, _, data = crumb_copy
    runs = crumb_dir / "runs" / "bm25"
    trec = runs / "clinical_trial.trec"
    lines = trec.read_text().splitlines()
    lines[3] = lines[3].replace("NCT11:0", "NCT11")
    trec.write_text("\n".join(lines) + "\n")
    code, err = _import(capsys, crumb_dir, runs, data)
    assert code == 2 and f"{trec}:4: " in err and "DOC:CHUNK" in err
    assert _written(data) == []


def test_binary_garbage_is_one_line(capsys, crumb_copy):
    crumb_dir, runs, data = crumb_copy
    first = (crumb_dir / LABELS).read_bytes().splitlines()[0]
    (crumb_dir / LABELS).write_bytes(first + b"\n\xff\xfe\x00garbage\n")
    code, err = _import(capsys, crumb_dir, runs, data)
    assert code == 2 and f"{crumb_dir / LABELS}:2: expected UTF-8" in err and len(err.strip().splitlines()) == 1
    assert _written(data) == []
