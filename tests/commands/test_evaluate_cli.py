"""`evalcore evaluate` end to end: output formats, --per-query parquet, and bad input (exit code 2, one
line naming file and line, no output file left behind)."""
from __future__ import annotations

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from evalcore.cli import main

RUN = "q1 Q0 a 1 0.5 s\nq1 Q0 b 2 0.5 s\nq1 Q0 c 3 0.2 s\nq2 Q0 x 1 1.0 s\nq2 Q0 y 2 0.0 s\n"
QRELS = "q1 0 a 1\nq1 0 c 2\nq2 0 y 1\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "run.trec").write_text(RUN)
    (tmp_path / "qrels.txt").write_text(QRELS)
    return tmp_path


def test_json_summary_and_per_query_parquet(files, capsys):
    out = files / "pq.parquet"
    code = main(["evaluate", "--run", str(files / "run.trec"), "--qrels", str(files / "qrels.txt"),
                 "--metrics", "ndcg@2,p@1", "--per-query", str(out), "--format", "json"])
    assert code == 0
    summary = {row["metric"]: row for row in json.loads(capsys.readouterr().out)}
    per_query = pq.read_table(out).to_pandas()
    assert set(per_query.columns) >= {"qid", "metric", "oblivious", "expected", "min", "max", "n_candidates",
                                      "tied_at_cutoff", "tie_policy"}
    for metric, rows in per_query.groupby("metric"):
        assert summary[metric]["expected"] == pytest.approx(rows["expected"].mean())
        assert summary[metric]["range"] == pytest.approx(rows["max"].mean() - rows["min"].mean())
    # q1: a and b tie at 0.5; docid-desc puts b (unjudged) first -> p@1 oblivious 0, expected 1/2
    q1 = per_query[(per_query.qid == "q1") & (per_query.metric == "p@1")].iloc[0]
    assert (q1.oblivious, q1.expected, q1["min"], q1["max"], bool(q1.tied_at_cutoff)) == (0.0, 0.5, 0.0, 1.0, True)


@pytest.mark.parametrize("run_text, line, needle", [
    ("q1 Q0 a 1 0.5 s\nq1 Q0 b 2 nope s\n", 2, "score"),
    ("q1 Q0 a 1 0.5 s\nq1 Q0 b 2 0.5\n", 2, "6"),
    ("q1 Q0 a 1 0.5 s\nq1 Q0 a 2 0.4 s\n", 2, "duplicate"),
    ("q1 Q0 a 1 inf s\n", 1, "finite"),
    ("", None, "empty"),
])
def test_bad_run_exits_2_with_file_and_line(files, capsys, run_text, line, needle):
    bad = files / "bad.trec"
    bad.write_text(run_text)
    out = files / "out.parquet"
    code = main(["evaluate", "--run", str(bad), "--qrels", str(files / "qrels.txt"), "--per-query", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert str(bad) + (f":{line}:" if line else ":") in err and needle in err.lower()
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in files.iterdir()) == ["bad.trec", "qrels.txt", "run.trec"]


@pytest.mark.parametrize("qrels_text, needle", [("q1 0 a 1.5\n", "integer"), ("q1 0 a -1\n", "grade")])
def test_bad_qrels_exit_2(files, capsys, qrels_text, needle):
    bad = files / "bad-qrels.txt"
    bad.write_text(qrels_text)
    assert main(["evaluate", "--run", str(files / "run.trec"), "--qrels", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1:" in err and needle in err.lower()


def test_module_entry_point_has_no_traceback(files):
    bad = files / "bad.trec"
    bad.write_bytes(b"\xff\xfe\x00garbage\n")
    done = subprocess.run([sys.executable, "-m", "evalcore", "evaluate", "--run", str(bad), "--qrels",
                           str(files / "qrels.txt")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr and str(bad) in done.stderr
