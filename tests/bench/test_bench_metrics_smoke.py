"""Smoke test of bench/bench_metrics.py on a tiny run (200 queries x 50 candidates).

Only proves the script runs end to end and that its correctness checks hold on the small run
(evalcore's docid-desc oblivious == pytrec_eval per query, evalcore identical on repeat).
No timing assertions: wall times on a shared machine are noise.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from needs import require_module

require_module("pytrec_eval")

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "bench_metrics.py"


def test_bench_metrics_runs_and_agrees_with_pytrec_eval(tmp_path):
    report = tmp_path / "report.md"
    raw = tmp_path / "results.json"
    cmd = [sys.executable, str(SCRIPT), "--sizes", "200x50", "--peers", "pytrec_eval,duckdb",
           "--repeats", "2", "--workdir", str(tmp_path / "work"), "--out", str(report), "--json", str(raw)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    (res,) = json.loads(raw.read_text())
    assert res["rows"] == 10_000 and res["queries"] == 200
    assert all(r["rc"] == 0 for r in res["tools"]["evalcore"]["runs"])
    assert res["checks"]["evalcore_repeat"]["identical"] is True
    assert res["checks"]["evalcore_ungrouped_equal"] is True  # row order does not change evalcore's values
    pt = res["checks"]["evalcore_vs_pytrec_eval"]
    assert pt["equal"] is True and pt["queries_compared"] == 200
    assert pt["max_abs_diff"] <= 1e-9
    # DuckDB ran twice and produced one value per query each time; its oblivious values (whatever the
    # tie-break happened to be) lie inside evalcore's [min, max]
    for name in ("duckdb", "duckdb_ungrouped"):
        assert len(res["checks"][f"{name}_repeats"]["changed_vs_first"]) == 1
        for per_run in res["checks"][f"{name}_vs_evalcore"]:
            assert all(per_run[m]["outside_min_max"] == 0 for m in ("ndcg@10", "mrr@10", "recall@100"))

    text = report.read_text()
    assert "| tool | rows | wall s | peak RSS MB | rows/s | notes |" in text
    for row in ("| evalcore |", "| evalcore, ungrouped input |", "| pytrec_eval |", "| duckdb |",
                "| duckdb, ungrouped input |"):
        assert row in text

    # the generated data has real ties, graded labels and an unretrieved relevant doc per query
    import pyarrow.parquet as pq

    data = next((tmp_path / "work").glob("data_200x50_*"))
    run = pq.read_table(data / "run.parquet").to_pandas()
    qrels = pq.read_table(data / "qrels.parquet").to_pandas()
    assert len(run) == 10_000 and not run.duplicated(["qid", "docid"]).any()
    assert run.duplicated(["qid", "score"]).any()
    assert set(qrels["relevance"]) == {0, 1, 2}
    unretrieved = qrels.merge(run, on=["qid", "docid"], how="left")["score"].isna()
    assert unretrieved.sum() == 200
