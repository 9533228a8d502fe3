"""``evalcore.explain`` on MCR runs re-scored from the shipped task inputs: the lexical and baseline systems
(bm25s, tfidf-cosine, uniform-random, constant) scored again on ``data/tasks`` with the generator's own scorers
(scripts/make_real_runs.py), every task, without instruction. Each value the shipped per-query rows record
(fp32 under docid-desc and input-order, p@1 and nDCG@10; means computed here with pandas) must be reproduced by
that policy, and each shipped bf16 / fp16 value (those systems' scores stored rounded: ``storage``) by that
policy in the matching rounding of ``precision=True``.
The dense and sparse models need their packages and are covered by tests/test_explain.py from the recorded rows."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore import explain
from needs import require_module

ROOT = Path(__file__).resolve().parents[1]
TASKS_DIR = ROOT / "data" / "tasks" / "rar-b"
TASKS = sorted(pd.read_parquet(TASKS_DIR / "queries.parquet", columns=["task"])["task"].unique())
SYSTEMS = ("bm25s", "tfidf-cosine", "uniform-random", "constant")
METRICS = ("p@1", "ndcg@10")


def generator():
    spec = importlib.util.spec_from_file_location("make_real_runs", ROOT / "scripts" / "make_real_runs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


def mcr_runs(task_name: str) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """{system: MCR run (qid, docid, score) in candidate order}, the MCR qrels — from data/tasks only."""
    require_module("bm25s", "pip install -r requirements-models.txt")
    require_module("sklearn", "pip install -r requirements-models.txt")
    make = generator()
    queries = pd.read_parquet(TASKS_DIR / "queries.parquet", filters=[("task", "==", task_name)]).sort_values("qid")
    documents = pd.read_parquet(TASKS_DIR / "documents.parquet", filters=[("task", "==", task_name)]).sort_values("docid")
    assert documents["docid"].tolist() == [f"p{i:05d}" for i in range(len(documents))]  # the pool, in order
    candidates = pd.read_parquet(TASKS_DIR / "candidates.parquet", filters=[("task", "==", task_name)])
    by_query = dict(tuple(candidates.groupby("qid", sort=False)))
    pool_index = [by_query[qid]["pool_docid"].str[1:].astype(int).to_numpy() for qid in queries["qid"]]
    task = make.Task(task_name, queries["qid"].tolist(), queries["text"].tolist(), queries["instruction"].tolist(),
                     documents["text"].tolist(), pool_index, np.zeros(len(queries), np.int64), len(queries))
    scorers = {"bm25s": make.bm25_scorer(task, task.queries), "tfidf-cosine": make.tfidf_scorer(task, task.queries),
               "uniform-random": make.random_scorer(task), "constant": make.constant_scorer(task)}
    runs = {}
    for system, scorer in scorers.items():
        parts = []
        for block in make.query_blocks(len(task.qids), len(task.pool_texts)):
            scores = scorer(block)
            for i, row in enumerate(range(block.start, block.stop)):
                qid = task.qids[row]
                parts.append(pd.DataFrame({"qid": qid, "docid": by_query[qid]["docid"].to_numpy(),
                                           "score": scores[i, task.candidate_pool_idx[row]]}))
        runs[system] = pd.concat(parts, ignore_index=True)
    qrels = pd.read_parquet(TASKS_DIR / "qrels.parquet", filters=[("task", "==", task_name), ("setting", "==", "mcr")])
    return runs, qrels[["qid", "docid", "relevance"]]


def shipped_means(task_name: str) -> pd.Series:
    frame = pd.read_parquet(ROOT / "data" / "real" / "query_metrics" / f"rar-b_{task_name}.parquet")
    for column in ("system", "setting", "precision", "metric", "tie_policy"):
        frame[column] = frame[column].astype(str)
    frame = frame[(frame["setting"] == "mcr") & (frame["instruction"] == False)  # noqa: E712
                  & frame["system"].isin([f"tiebreak-run/{s}" for s in SYSTEMS])]
    return frame.groupby(["system", "precision", "metric", "tie_policy"])["oblivious"].mean()


@pytest.mark.slow
@pytest.mark.parametrize("task_name", TASKS)
def test_rescored_lexical_and_baseline_runs_reproduce_every_recorded_value(task_name):
    runs, qrels = mcr_runs(task_name)
    means = shipped_means(task_name)
    checked = 0
    for system, run in runs.items():
        recorded = means.loc[f"tiebreak-run/{system}"]
        reported = [explain.reported_number(repr(float(value)), task=task_name, metric=metric,
                                            label=f"{precision}|{policy}")
                    for (precision, metric, policy), value in recorded.items()]
        verdicts = explain.explain_run(run, qrels, list(METRICS), reported, task=task_name, precision=True)
        for verdict in verdicts:
            precision, policy = verdict.reported.label.split("|")
            if precision == "fp32":
                assert verdict.kind == "reproduced" and policy in verdict.policies, (system, verdict.line)
            else:
                reach = {condition: (kind, policies) for condition, kind, policies in verdict.precision}
                assert reach[precision][0] == "reproduced" and policy in reach[precision][1], (system, precision,
                                                                                                verdict.line)
            checked += 1
    assert checked == len(means) and {p for _, p, _, _ in means.index} == {"fp32", "bf16", "fp16"}
