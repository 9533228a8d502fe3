"""data/tasks/ (scripts/make_task_texts.py) carries exactly the ids the shipped real runs use.

Checked against the shipped results, not against the script: every qid of data/real's rows is a query here and
vice versa; every MCR query has as many candidates as the shipped rows' ``n_candidates``; the full-pooled qrels
equal the qrels shipped with the raw runs (data/runs/), whose docids are pool documents here; and the seeded
uniform-random scorer, re-scored over these candidates and this pool and evaluated with these qrels, reproduces
the shipped per-query values of ``tiebreak-run/uniform-random`` (so ids, candidate order and relevance all match).
The files' own consistency (a fresh generation gives the same bytes) needs the RAR-b sources.
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalcore
from needs import require_source

REPO_ROOT = Path(__file__).resolve().parents[2]
TASKS = REPO_ROOT / "data" / "tasks" / "rar-b"
REAL = REPO_ROOT / "data" / "real" / "query_metrics"
RUNS = REPO_ROOT / "data" / "runs"
RANDOM = "tiebreak-run/uniform-random"


def _script(name: str):
    path = REPO_ROOT / "scripts" / f"{name}.py"
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tables() -> dict[str, pd.DataFrame]:
    found = {name: pd.read_parquet(TASKS / f"{name}.parquet") for name in ("queries", "documents", "candidates",
                                                                           "qrels")}
    assert all(len(t) for t in found.values())
    return found


def _shipped(task: str, columns: list[str], **equal) -> pd.DataFrame:
    rows = pd.read_parquet(REAL / f"rar-b_{task}.parquet", columns=sorted(set(columns) | set(equal)))
    for name, value in equal.items():
        rows = rows[rows[name] == value]
    return rows


def _tasks() -> list[str]:
    return sorted(p.stem.removeprefix("rar-b_") for p in REAL.glob("rar-b_*.parquet"))


@pytest.mark.parametrize("task", _tasks())
def test_qids_and_candidate_counts_match_the_shipped_rows(tables, task):
    rows = _shipped(task, ["qid", "n_candidates"], setting="mcr")
    queries = tables["queries"][tables["queries"]["task"] == task]
    assert set(rows["qid"].astype(str)) == set(queries["qid"])
    assert queries["text"].str.len().gt(0).all() and queries["instruction"].str.len().gt(0).all()
    counts = tables["candidates"][tables["candidates"]["task"] == task].groupby("qid").size()
    shipped = rows.groupby(rows["qid"].astype(str))["n_candidates"].agg(["min", "max"])
    assert (shipped["min"] == shipped["max"]).all(), "MCR ranks every candidate: one count per query"
    assert counts.reindex(shipped.index).tolist() == shipped["max"].tolist()
    full = _shipped(task, ["qid"], setting="full-pooled")
    assert set(full["qid"].astype(str)) == set(queries["qid"])


@pytest.mark.parametrize("run_qrels", sorted(RUNS.glob("*_qrels.parquet")), ids=lambda p: p.stem)
def test_full_pooled_qrels_equal_the_raw_runs_qrels(tables, run_qrels):
    task = run_qrels.stem.split("_")[1]
    shipped = pd.read_parquet(run_qrels)[["qid", "docid", "relevance"]].astype({"qid": str, "docid": str})
    mine = tables["qrels"][(tables["qrels"]["task"] == task) & (tables["qrels"]["setting"] == "full-pooled")]
    key = ["qid", "docid"]
    pd.testing.assert_frame_equal(mine[key + ["relevance"]].sort_values(key).reset_index(drop=True),
                                  shipped.sort_values(key).reset_index(drop=True), check_dtype=False)
    run = pd.read_parquet(next(RUNS.glob(f"rar-b_{task}_full_*_fp32.parquet")), columns=["docid"])
    pool = set(tables["documents"].loc[tables["documents"]["task"] == task, "docid"])
    assert set(run["docid"].astype(str)) <= pool


@pytest.mark.parametrize("task", _tasks())
def test_random_scorer_over_these_ids_reproduces_the_shipped_values(tables, task):
    """The uniform-random scores depend only on (task, query row, pool size): scored over this pool and these
    candidates and evaluated with these qrels, the first 40 queries give the shipped values exactly."""
    make_real_runs = _script("make_real_runs")
    queries = tables["queries"][tables["queries"]["task"] == task].sort_values("qid").head(40)
    pool = tables["documents"][tables["documents"]["task"] == task].sort_values("docid")
    position = {docid: i for i, docid in enumerate(pool["docid"])}
    candidates = tables["candidates"][tables["candidates"]["task"] == task]
    qrels = tables["qrels"][tables["qrels"]["task"] == task]
    mcr_rows, full_rows = [], []
    for row, qid in enumerate(queries["qid"]):
        assert qid == f"q{row:05d}" or int(qid[1:]) == row
        scores = make_real_runs.random_scores(task, int(qid[1:]), len(pool))
        mine = candidates[candidates["qid"] == qid]
        mcr_rows.append(pd.DataFrame({"qid": qid, "docid": mine["docid"],
                                      "score": scores[[position[d] for d in mine["pool_docid"]]].astype(np.float64)}))
        full_rows.append(pd.DataFrame({"qid": qid, "docid": pool["docid"], "score": scores.astype(np.float64)}))
    for setting, rows, metrics in (("mcr", mcr_rows, ["p@1", "ndcg@10"]), ("full-pooled", full_rows, ["ndcg@10"])):
        run = pd.concat(rows, ignore_index=True)
        relevant = qrels[(qrels["setting"] == setting) & qrels["qid"].isin(queries["qid"])]
        found = evalcore.evaluate(run, relevant[["qid", "docid", "relevance"]], metrics, tie_policy="docid-desc")
        shipped = _shipped(task, ["qid", "metric", "oblivious", "expected"], system=RANDOM, setting=setting,
                           precision="fp32", instruction=False, tie_policy="docid-desc")
        shipped = shipped.assign(qid=shipped["qid"].astype(str), metric=shipped["metric"].astype(str))
        merged = found.merge(shipped, on=["qid", "metric"], suffixes=("", "_shipped"))
        assert len(merged) == len(queries) * len(metrics), (setting, len(merged))
        np.testing.assert_allclose(merged["oblivious"], merged["oblivious_shipped"], atol=1e-12)
        np.testing.assert_allclose(merged["expected"], merged["expected_shipped"], atol=1e-12)


def test_a_fresh_generation_gives_the_shipped_bytes(tmp_path):
    require_source("rarb-mcr")
    make_task_texts = _script("make_task_texts")
    assert make_task_texts.main(["--out", str(tmp_path)]) == 0
    for shipped in sorted(TASKS.glob("*.parquet")):
        fresh = tmp_path / "rar-b" / shipped.name
        assert hashlib.sha256(fresh.read_bytes()).digest() == hashlib.sha256(shipped.read_bytes()).digest(), shipped


def test_the_store_does_not_load_task_texts():
    from evalcore.store import Store

    store = Store(REPO_ROOT / "data")
    assert not [s for s in store.skipped if "/tasks/" in s.path]
    assert not store.facets()["conditions"].empty
