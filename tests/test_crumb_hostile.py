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


# -- what one label or run file may cost: the limits every input has ------------------------------------------
def _replace_label(path: Path, value: str) -> None:
    """Line 2's first full_document_qrels label written as ``value`` (raw JSON text)."""
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])
    record["full_document_qrels"][0]["label"] = "@@"
    lines[1] = json.dumps(record).replace('"@@"', value)
    path.write_text("\n".join(lines) + "\n")


VALUE_CASES = {
    "label beyond int64 (1e19)": ("1e19", "does not fit in 64 bits"),
    "a 400-digit integer label": ("1" + "0" * 400, "beyond float64"),
    "a 5,000-digit integer label": ("1" + "0" * 5000, "more than 4,300 digits"),
    "a label nested 100,000 deep": ("[" * 100_000 + "]" * 100_000, "more than 100 levels of nesting"),
}


@pytest.mark.parametrize("case", sorted(VALUE_CASES))
def test_labels_out_of_range_or_nested_too_deep_are_one_line(capsys, crumb_copy, case):
    """1e19 and a 400-digit integer ended in OverflowError, 100,000 levels in RecursionError."""
    crumb_dir, runs, data = crumb_copy
    value, expected = VALUE_CASES[case]
    _replace_label(crumb_dir / LABELS, value)
    code, err = _import(capsys, crumb_dir, runs, data)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{crumb_dir / LABELS}:2: " in err and expected in err
    assert _written(data) == []


def test_a_run_nested_too_deep_is_one_line(capsys, crumb_copy):
    crumb_dir, runs, data = crumb_copy
    _replace_line(runs / RUN, 2, '{"query": {"id": "ct-2"}, "items": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, err = _import(capsys, crumb_dir, runs, data)
    assert code == 2 and f"{runs / RUN}:2: more than 100 levels of nesting" in err
    assert _written(data) == []


def _import_in_child(crumb_dir: Path, runs: Path, data: Path, env: dict, seconds: float = 90):
    """import-crumb in a child process bounded in time and memory (2 GiB), so that an input that never ends or
    never comes fails the test instead of eating the machine or hanging the run."""
    import os
    import resource
    import subprocess
    import sys

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    try:
        return subprocess.run([sys.executable, "-m", "evalcore", "import-crumb", str(runs), "--crumb", str(crumb_dir),
                               "--data", str(data)], capture_output=True, text=True, timeout=seconds,
                              preexec_fn=bounded, cwd=Path(__file__).resolve().parents[1], env={**os.environ, **env})
    except subprocess.TimeoutExpired:
        pytest.fail(f"import-crumb did not finish in {seconds} s")


def test_labels_that_never_end_stop_at_the_line_length_limit(crumb_copy):
    """Labels symlinked to /dev/zero grew to a MemoryError after 1.5 GB: the line length limit stops them (set
    to 8 MiB here so the test reads 8 MiB, not 64)."""
    crumb_dir, runs, data = crumb_copy
    (crumb_dir / LABELS).unlink()
    (crumb_dir / LABELS).symlink_to("/dev/zero")
    done = _import_in_child(crumb_dir, runs, data, {"TIEBREAK_MAX_LINE_BYTES": str(8 << 20)})
    assert done.returncode == 2, done.stderr[-300:]
    assert f"{crumb_dir / LABELS}:1: more than 8,388,608 bytes in one line" in done.stderr
    assert "TIEBREAK_MAX_LINE_BYTES" in done.stderr and _written(data) == []


def test_labels_in_a_fifo_without_a_writer_are_waited_for_then_refused(crumb_copy):
    """A FIFO nobody writes into hung import-crumb: the documented wait (TIEBREAK_FIFO_WAIT_SECONDS) applies."""
    import os

    crumb_dir, runs, data = crumb_copy
    (crumb_dir / LABELS).unlink()
    os.mkfifo(crumb_dir / LABELS)
    done = _import_in_child(crumb_dir, runs, data, {"TIEBREAK_FIFO_WAIT_SECONDS": "1"}, seconds=60)
    assert done.returncode == 2, done.stderr[-300:]
    assert f"{crumb_dir / LABELS}: a FIFO that no process opened for writing in 1 s" in done.stderr
    assert _written(data) == []


def test_labels_past_the_input_size_limit_are_one_line(capsys, crumb_copy, monkeypatch):
    crumb_dir, runs, data = crumb_copy
    monkeypatch.setenv("TIEBREAK_MAX_INPUT_BYTES", "100")
    code, err = _import(capsys, crumb_dir, runs, data)
    assert code == 2 and "more than 100 bytes after decompression" in err and "TIEBREAK_MAX_INPUT_BYTES" in err
    assert _written(data) == []


@pytest.mark.parametrize("which", ["runs folder", "one run file in it"])
def test_a_runs_folder_the_user_cannot_enter_is_one_line(which):
    """A RUNS folder its user may not enter ended in a PermissionError traceback. Run as a user the permission
    bits bind (tests run as root: see tests/unprivileged.py)."""
    from unprivileged import evalcore_as_user, shared_folder

    with shared_folder() as folder:
        crumb_dir = folder / "crumb"
        shutil.copytree(FIXTURES, crumb_dir)
        runs = crumb_dir / "runs" / "minilm"
        runs.chmod(0o000)
        target = runs if which == "runs folder" else runs / RUN
        done = evalcore_as_user("import-crumb", target, "--crumb", crumb_dir, "--data", folder / "data")
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
        assert "Permission denied" in done.stderr and str(target) in done.stderr
        assert not (folder / "data").exists()
