"""The store questions the dashboard's views ask beyond the leaderboard: coverage, precision kinds and
the paired test on expected values — each checked against a computation straight from the parquet files
(pandas / numpy), not against the store's own code."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.store import Condition, Store

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "pages"))
import synthetic_data  # noqa: E402

REAL = ROOT / "data" / "real" / "query_metrics"


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    return synthetic_data.write_small(tmp_path_factory.mktemp("views"))


def test_coverage_counts_tasks_per_system_and_condition(synthetic):
    rows = pd.read_parquet(synthetic / "query_metrics_synthetic.parquet")
    keys = ["benchmark", "setting", "metric", "instruction", "precision", "tie_policy", "system"]
    expected = rows.groupby(keys)["task"].nunique().rename("n_tasks").reset_index()
    published = pd.read_parquet(synthetic / "task_scores_synthetic.parquet").assign(tie_policy="docid-desc")
    expected = pd.concat([expected, published.groupby(keys)["task"].nunique().rename("n_tasks").reset_index()])
    found = Store(synthetic).coverage()
    merged = expected.merge(found, on=keys, how="outer", indicator=True)
    assert (merged["_merge"] == "both").all(), merged[merged["_merge"] != "both"]
    assert (merged["n_tasks_x"] == merged["n_tasks_y"]).all()
    per_query = merged["benchmark"] == "rar-b"
    assert (merged.loc[per_query, "n_query_tasks"] == merged.loc[per_query, "n_tasks_x"]).all()
    assert (merged.loc[~per_query, "n_query_tasks"] == 0).all()
    tiny = merged[(merged["system"] == "tiny-partial")]
    assert set(tiny["n_tasks_x"]) == {3}, "tiny-partial misses one of the four rar-b tasks"


def test_precision_kinds_are_the_files_distinct_kinds(synthetic, tmp_path):
    assert Store(synthetic).precision_kinds().empty, "no file carries the optional column"
    rows = pd.read_parquet(synthetic / "query_metrics_synthetic.parquet")
    kind = np.where(rows["precision"].eq("fp32"), "native", np.where(rows["system"].eq("bge-large"), "inference",
                                                                      "storage"))
    rows.assign(precision_kind=kind).to_parquet(tmp_path / "with_kinds.parquet", index=False)
    found = Store(tmp_path).precision_kinds()
    expected = (rows.assign(precision_kind=kind)[["benchmark", "setting", "system", "precision", "precision_kind"]]
                .drop_duplicates().sort_values(["benchmark", "setting", "system", "precision"]).reset_index(drop=True))
    pd.testing.assert_frame_equal(found.reset_index(drop=True), expected, check_dtype=False)


def test_shipped_precision_kinds_name_every_real_row():
    files = sorted(REAL.glob("*.parquet"))
    if not files:
        pytest.fail("data/real ships no per-query files")
    expected = pd.concat([pd.read_parquet(f, columns=["system", "precision", "precision_kind"]) for f in files])
    expected = expected.drop_duplicates().astype(str)
    found = Store(ROOT / "data").precision_kinds()
    assert set(map(tuple, found[["system", "precision", "precision_kind"]].to_numpy().tolist())) == set(
        map(tuple, expected.to_numpy().tolist()))
    kind_of = found.drop_duplicates(["system", "precision"]).set_index(["system", "precision"])["precision_kind"]
    assert kind_of[("tiebreak-run/all-MiniLM-L6-v2", "bf16")] == "inference"
    assert kind_of[("tiebreak-run/bm25s", "bf16")] == "storage"


def _sign_flip_p(differences: np.ndarray, n: int, seed: int) -> float:
    """Two-sided sign-flip p-value by brute force: flip each sign with probability ½, n times."""
    rng = np.random.default_rng(seed)
    observed = abs(differences.mean())
    signs = rng.choice([-1.0, 1.0], size=(n, differences.size))
    extreme = np.abs((signs * differences).mean(axis=1)) >= observed - 1e-12
    return (1 + extreme.sum()) / (1 + n)


@pytest.mark.parametrize("value", ["expected", "oblivious"])
def test_paired_test_on_expected_or_oblivious_values(synthetic, value):
    rows = pd.read_parquet(synthetic / "query_metrics_synthetic.parquet")
    cond = Condition("rar-b", "ndcg@10", "full", False, "bf16")
    mine = rows[(rows["task"] == "PIQA") & (rows["setting"] == "full") & (rows["instruction"] == False)  # noqa: E712
                & (rows["precision"] == "bf16")]
    wide = mine.pivot(index="qid", columns="system", values=value)
    differences = (wide["bge-large"] - wide["e5-small"]).to_numpy()
    test = Store(synthetic).paired_test("bge-large", "e5-small", cond, task="PIQA", value=value)
    assert test.value == value and test.n_queries == len(differences)
    assert test.observed_diff == pytest.approx(differences.mean(), abs=1e-12)
    reference = _sign_flip_p(differences, 20000, seed=1)
    assert test.p_value == pytest.approx(reference, abs=0.02)


def test_paired_test_refuses_another_value(synthetic):
    with pytest.raises(ValueError, match="expected"):
        Store(synthetic).paired_test("bge-large", "e5-small", Condition("rar-b"), task="PIQA", value="max; DROP")


def test_mcr_chance_is_the_constant_scorers_expected_accuracy():
    """Chance per MCR task (the mean of 1 / n_candidates over the questions) equals the expected p@1 of the
    shipped constant scorer — computed by the engine from the qrels over every ordering of its all-tied
    candidates — on every task and precision; and it does not move with the instruction state."""
    rows = pd.read_parquet(REAL, filters=[("setting", "==", "mcr"), ("metric", "==", "p@1"),
                                          ("system", "==", "tiebreak-run/constant")])
    store = Store(ROOT / "data")
    for precision, of_precision in rows.groupby("precision"):
        constant = of_precision.groupby("task")["expected"].mean()
        for instruction in (None, True, False):
            found = store.chance(Condition("rar-b", "p@1", "mcr", instruction, precision)).set_index("task")
            assert found.index.tolist() == sorted(constant.index), precision
            assert np.allclose(found["chance"], constant.reindex(found.index), rtol=0, atol=1e-12), precision
            assert (found["n_queries"] == of_precision.groupby("task")["qid"].nunique().reindex(found.index)).all()
    assert store.chance(Condition("r2med", "ndcg@10", "full", None, "fp32")).empty  # no per-query rows


def test_mcr_chance_takes_each_questions_full_candidate_count(tmp_path):
    """A system that ranked fewer candidates of a question does not raise the question's chance."""
    rows = pd.read_parquet(ROOT / "data" / "real" / "query_metrics", filters=[
        ("setting", "==", "mcr"), ("metric", "==", "p@1"), ("precision", "==", "fp32"), ("task", "==", "PIQA"),
        ("system", "in", ["tiebreak-run/constant", "tiebreak-run/bm25s"])])
    rows = rows.drop_duplicates(["system", "qid"]).head(0)  # the schema only
    base = {c: None for c in rows.columns}
    made = [dict(base, system=s, benchmark="rar-b", task="T", setting="mcr", instruction=False,
                 precision="fp32", metric="p@1", qid=q, oblivious=0.0, expected=0.0, min=0.0, max=0.0,
                 tie_policy="docid-desc", n_candidates=n, tied_at_cutoff=False, source="test")
            for s, q, n in (("a", "q1", 4), ("b", "q1", 2), ("a", "q2", 2), ("b", "q2", 2))]
    frame = pd.DataFrame(made).astype({c: rows[c].dtype for c in rows.columns if c in ("n_candidates",)})
    (tmp_path / "query_metrics").mkdir()
    frame.to_parquet(tmp_path / "query_metrics" / "t.parquet", index=False)
    found = Store(tmp_path).chance(Condition("rar-b", "p@1", "mcr", None, "fp32"))
    assert found["chance"].tolist() == [(1 / 4 + 1 / 2) / 2] and found["n_queries"].tolist() == [2]
