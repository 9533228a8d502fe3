"""One line, never a traceback or a JVM stack trace: an MTEB result file nested 200,000 levels
deep, values an importer leaves out (a ``warning:`` line each, prefixed like every CLI line), and the checks
``evaluate --engine spark`` makes before a Spark session starts (a TREC text run; a per-query folder that Spark
would empty although it holds an input or unrelated files). None of these tests starts Spark."""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.cli import main


def call(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def mteb_tree(root: Path, task_json: str) -> Path:
    revision = root / "results" / "org__model" / "rev1"
    revision.mkdir(parents=True)
    (revision / "model_meta.json").write_text(json.dumps({"name": "org/model", "use_instructions": False}))
    (revision / "PIQA.json").write_text(task_json)
    return revision / "PIQA.json"


def test_an_mteb_file_nested_200000_levels_is_one_line(tmp_path):
    task = mteb_tree(tmp_path, '{"task_name": "PIQA", "scores": ' + "[" * 200_000 + "]" * 200_000 + "}")
    code, _, stderr = call(["import-mteb", str(tmp_path), "--out", str(tmp_path / "out")])
    assert code == 2 and "Traceback" not in stderr and "RecursionError" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"evalcore import-mteb: error: {task}: "), stderr
    assert not (tmp_path / "out").exists()


def test_values_an_importer_leaves_out_are_warning_lines_of_the_command(tmp_path):
    """45.3 (a percentage stored as a score) is left out with one prefixed warning line, the rest imported."""
    mteb_tree(tmp_path, json.dumps({"task_name": "PIQA", "mteb_version": "1.12.0", "scores": {"test": [
        {"hf_subset": "default", "ndcg_at_10": 45.3, "recall_at_10": 0.5, "main_score": 0.25}]}}))
    code, stdout, stderr = call(["import-mteb", str(tmp_path), "--out", str(tmp_path / "out")])
    assert code == 0, stderr
    warnings = stderr.strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("evalcore import-mteb: warning: "), stderr
    assert "ndcg_at_10" in warnings[0] and "45.3" in warnings[0]
    scores = pq.read_table(tmp_path / "out" / "mteb_task_scores.parquet").to_pandas()
    assert set(scores["metric"]) == {"recall@10"}


@pytest.fixture
def spark_files(tmp_path):
    (tmp_path / "run.trec").write_text("q1 Q0 a 1 0.5 s\n")
    (tmp_path / "qrels.txt").write_text("q1 0 a 1\n")
    pq.write_table(pa.table({"qid": ["q1"], "docid": ["a"], "score": [0.5]}), tmp_path / "run.parquet")
    return tmp_path


def spark_argv(files: Path, run: str, *extra: str) -> list[str]:
    return ["evaluate", "--engine", "spark", "--run", str(files / run), "--qrels", str(files / "qrels.txt"), *extra]


@pytest.mark.parametrize("run, named", [("run.trec", "run.trec"), ("*.trec", "run.trec"),
                                        ("folder", "folder/text.run")])  # Spark reads every file of a folder
def test_spark_refuses_a_text_run_before_starting(spark_files, run, named):
    """It printed a Java stack trace (Spark read the TREC text as parquet)."""
    (spark_files / "folder").mkdir()
    pq.write_table(pa.table({"qid": ["q1"], "docid": ["a"], "score": [0.5]}), spark_files / "folder" / "part-0.parquet")
    (spark_files / "folder" / "text.run").write_text("q1 Q0 a 1 0.5 s\n")
    code, _, stderr = call(spark_argv(spark_files, run))
    assert code == 2 and "Traceback" not in stderr and "java" not in stderr.lower()
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"evalcore evaluate: error: {spark_files / named}: ")
    assert "--engine spark reads parquet runs only" in lines[0]


def test_spark_refuses_a_per_query_folder_it_would_empty(spark_files):
    """Spark's overwrite empties the per-query folder first: a folder holding the run, or anything a per-query
    output never writes (a home folder, say), is refused and left as it was."""
    own = spark_files / "runs"
    own.mkdir()
    pq.write_table(pa.table({"qid": ["q1"], "docid": ["a"], "score": [0.5]}), own / "part-0.parquet")
    code, _, stderr = call(spark_argv(spark_files, "runs/part-0.parquet", "--per-query", str(own)))
    assert code == 2 and "holds the input" in stderr and len(stderr.strip().splitlines()) == 1
    assert (own / "part-0.parquet").exists()

    home = spark_files / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("years of work")
    code, _, stderr = call(spark_argv(spark_files, "run.parquet", "--per-query", str(home)))
    assert code == 2 and "'thesis.tex'" in stderr and len(stderr.strip().splitlines()) == 1
    assert (home / "thesis.tex").read_text() == "years of work"

    code, _, stderr = call(spark_argv(spark_files, "run.parquet", "--per-query", str(spark_files / "qrels.txt")))
    assert code == 2 and "found a file" in stderr
