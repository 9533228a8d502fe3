"""The drill-down's "Rank of the relevant document": read from a system's MRR@10 min and max over the orderings
of its tied documents (best = 1 / max, worst = 1 / min, 0 = below the top 10), in words.

Unit tests on hand-made values, and an independent cross-check on the shipped raw run (data/runs): the best and
worst rank of each query's relevant document counted by brute force from the run's scores and qrels (no engine)
equal the ranks derived from (a) the stored per-query MRR@10 rows of the same system and condition
(data/real/query_metrics) and (b) the engine's tie-aware MRR@10 of the run cast to bf16 (many ties).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ui import drilldown
from ui.data import TaskTexts

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "data" / "runs"
REAL = ROOT / "data" / "real" / "query_metrics"
RUN = RUNS / "rar-b_WinoGrande_full_all-MiniLM-L6-v2_fp32.parquet"
QRELS = RUNS / "rar-b_WinoGrande_full_qrels.parquet"
SYSTEM = "tiebreak-run/all-MiniLM-L6-v2"


# ------------------------------------------------------------------------------------------- hand-made values
@pytest.mark.parametrize(("low", "high", "words"), [
    (1.0, 1.0, "1"),
    (1 / 3, 1 / 3, "3"),
    (0.1, 0.1, "10"),
    (0.2, 0.5, "2–5 (tied)"),
    (0.1, 1.0, "1–10 (tied)"),
    (0.0, 1.0, "1–>10 (tied)"),
    (0.0, 1 / 7, "7–>10 (tied)"),
    (0.0, 0.0, "below the top 10"),
    (float(np.float32(1 / 3)), float(np.float32(1 / 6)) * 2, "3"),  # stored at float32: still rank 3
    (float("nan"), 0.5, ""),
    (0.5, None, ""),
])
def test_rank_words(low, high, words):
    assert drilldown.rank_words(low, high) == words


@pytest.mark.parametrize(("low", "high", "bounds"), [
    (1.0, 1.0, (1, 1)),
    (0.25, 0.5, (2, 4)),
    (0.0, 1 / 9, (9, None)),
    (0.0, 0.0, (None, None)),
])
def test_rank_bounds(low, high, bounds):
    assert drilldown.rank_bounds(low, high) == bounds


def test_the_cutoff_is_a_parameter():
    assert drilldown.rank_words(1 / 20, 1 / 20, cutoff=20) == "20"
    assert drilldown.rank_words(0.0, 1 / 4, cutoff=5) == "4–>5 (tied)"
    assert drilldown.rank_words(0.0, 0.0, cutoff=5) == "below the top 5"
    with pytest.raises(ValueError):
        drilldown.rank_words(1 / 6, 1 / 6, cutoff=5)


@pytest.mark.parametrize(("low", "high"), [
    (0.5, 0.2),          # min above max
    (0.2, 0.0),          # min above max, max below the cutoff
    (0.4, 0.4),          # 1 / 0.4 = 2.5 is no rank
    (1 / 11, 1 / 11),    # rank 11 has reciprocal rank 0 at @10
    (-0.5, 0.5),
    (0.5, 1.5),
])
def test_values_that_are_not_reciprocal_ranks_are_refused(low, high):
    with pytest.raises(ValueError):
        drilldown.rank_bounds(low, high)


def test_relevant_ranks_per_system():
    rows = pd.DataFrame({
        "system": ["a", "b", "c", "a", "b"],
        "qid": ["q1", "q1", "q1", "q2", "q2"],
        "min": [1 / 3, 0.0, 0.4, 1.0, 0.0],
        "max": [1 / 3, 0.5, 0.4, 1.0, 0.0],
    })
    shown = drilldown.relevant_ranks(rows, "q1", ["b", "a", "c", "d"])
    assert shown.index.tolist() == ["b", "a", "c", "d"]
    assert shown.tolist() == ["2–>10 (tied)", "3", "?", ""]  # c: not a reciprocal rank; d: no row
    assert drilldown.relevant_ranks(rows, "q2", ["a", "b"]).tolist() == ["1", "below the top 10"]
    assert drilldown.relevant_ranks(rows.iloc[:0], "q1", ["a"]) is None
    assert drilldown.relevant_ranks(None, "q1", ["a"]) is None


def _texts(relevant: int) -> TaskTexts:
    qrels = pd.DataFrame({"setting": ["full-pooled"] * (relevant + 1), "qid": ["q1"] * relevant + ["q2"],
                          "docid": [f"d{i}" for i in range(relevant + 1)], "relevance": [1] * (relevant + 1)})
    empty = pd.DataFrame()
    return TaskTexts(queries=empty, documents=empty, candidates=empty, qrels=qrels)


def test_the_help_says_first_relevant_when_a_query_has_several():
    one = drilldown._rank_help(_texts(1), "full-pooled", "q1")
    several = drilldown._rank_help(_texts(3), "full-pooled", "q1")
    assert "1 / max" in one and "1 / min" in one and "first" not in one
    assert "3 relevant documents" in several and "first (highest-ranked) relevant one" in several
    assert "first (highest-ranked) relevant one" in drilldown._rank_help(None, "full-pooled", "q1")


# ------------------------------------------------------------------------------------------ brute force
def brute_force_ranks(run: pd.DataFrame, qrels: pd.DataFrame, cutoff: int = 10) -> pd.DataFrame:
    """Per qid: the best and worst rank of its single relevant document over all orderings of tied scores,
    counted from the scores (best = 1 + #documents scored strictly higher, worst = #documents scored at least
    as high); None where that rank is below the top ``cutoff`` (a relevant document missing from the run is
    below the run's top 100)."""
    relevant = qrels[qrels["relevance"] > 0]
    assert relevant.groupby("qid").size().eq(1).all(), "one relevant document per query"
    out = {}
    run_by_qid = {qid: group for qid, group in run.groupby("qid", observed=True)}
    for qid, docid in zip(relevant["qid"], relevant["docid"]):
        group = run_by_qid.get(qid)
        if group is None:
            continue
        scores = group["score"].to_numpy()
        mine = scores[group["docid"].to_numpy() == docid]
        if len(mine) == 0:
            best = worst = math.inf
        else:
            best = 1 + int((scores > mine[0]).sum())
            worst = int((scores >= mine[0]).sum())
        out[qid] = (best if best <= cutoff else None, worst if worst <= cutoff else None)
    return pd.DataFrame.from_dict(out, orient="index", columns=["best", "worst"], dtype=object)


def derived_ranks(rows: pd.DataFrame) -> pd.DataFrame:
    bounds = [drilldown.rank_bounds(lo, hi) for lo, hi in zip(rows["min"], rows["max"])]
    return pd.DataFrame(bounds, index=rows["qid"].astype(str).to_numpy(), columns=["best", "worst"], dtype=object)


def _same(derived: pd.DataFrame, brute: pd.DataFrame) -> None:
    assert sorted(derived.index) == sorted(brute.index)
    derived = derived.loc[brute.index]
    mismatched = [(qid, tuple(derived.loc[qid]), tuple(brute.loc[qid])) for qid in brute.index
                  if tuple(derived.loc[qid]) != tuple(brute.loc[qid])]
    assert not mismatched, mismatched[:10]


@pytest.fixture(scope="module")
def shipped_run():
    if not (RUN.exists() and QRELS.exists()):
        pytest.fail("data/runs ships the WinoGrande MiniLM run and its qrels")
    run = pd.read_parquet(RUN).astype({"qid": str, "docid": str})
    qrels = pd.read_parquet(QRELS).astype({"qid": str, "docid": str})
    return run, qrels


def test_stored_mrr_rows_give_the_brute_force_ranks_of_the_shipped_run(shipped_run):
    """The run file is the stored full-pooled, fp32, without-instruction MiniLM run (its .json says so): its
    stored MRR@10 min / max, read through the derivation, are the ranks counted from its scores."""
    run, qrels = shipped_run
    stored = pd.read_parquet(REAL / "rar-b_WinoGrande.parquet", filters=[
        ("system", "==", SYSTEM), ("setting", "==", "full-pooled"), ("precision", "==", "fp32"),
        ("instruction", "==", False), ("metric", "==", "mrr@10"), ("tie_policy", "==", "docid-desc")])
    assert len(stored) == qrels["qid"].nunique() == 1267
    brute = brute_force_ranks(run, qrels)
    _same(derived_ranks(stored), brute)
    # the cases the words distinguish all occur: a single rank, beyond the top 10, and a tie
    assert (brute["best"] == brute["worst"]).any() and brute["best"].isna().any()
    assert ((brute["best"] != brute["worst"]) & brute["best"].notna()).any(), "fp32 ties on duplicate answers"


def test_engine_mrr_of_the_bf16_cast_run_gives_the_brute_force_ranks(shipped_run):
    """The run's scores rounded to bf16 (ml_dtypes, as a bf16 pipeline stores them) tie a lot: the engine's
    tie-aware MRR@10 min / max, read through the derivation, are the ranks counted from the rounded scores."""
    import ml_dtypes

    from evalcore.engine import evaluate

    run, qrels = shipped_run
    cast = run.assign(score=run["score"].to_numpy(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64))
    rows = evaluate(cast, qrels, metrics=["mrr@10"])
    brute = brute_force_ranks(cast, qrels)
    _same(derived_ranks(rows), brute)
    tied = brute[(brute["best"] != brute["worst"]) & brute["best"].notna()]
    assert len(tied) >= 20, "bf16 ties decide many ranks"
    assert tied["worst"].isna().any() and tied["worst"].notna().any(), "ties inside and across the cutoff"
    words = {qid: drilldown.rank_words(lo, hi) for qid, lo, hi in zip(rows["qid"], rows["min"], rows["max"])}
    for qid, (best, worst) in tied.iterrows():
        assert words[qid] == (f"{best}–>10 (tied)" if worst is None else f"{best}–{worst} (tied)")
