"""The assumption behind the queries lens' bound for published rows — two systems' per-query scores are not
negatively correlated, so Var(A − B) ≤ Var(A) + Var(B) ≤ μ_A(1 − μ_A) + μ_B(1 − μ_B) — checked on every pair of
shipped per-query runs, recomputed here with pandas (``DataFrame.corr`` / ``DataFrame.cov``), independently of
scripts/query_correlations.py (which prints the table; it is cross-checked against this on one task).

What the shipped runs say (pinned below, so a change of the data or of the finding fails here):

- The smallest correlation is −0.638 (SpartQA · mcr · nDCG@10, oblivious values): the constant scorer, whose
  oblivious value is decided by the tie policy alone, against a real model. Its bound still holds: nDCG@10 is
  graded, so μ(1 − μ) exceeds its variance by far (ratio 0.20).
- Between real systems (neither the constant nor the uniform-random scorer) the smallest correlation is −0.164:
  WinoGrande · mcr, bm25s against splade-tiny (twin sentences with opposite answers make near-chance systems
  disagree), 5.8 standard errors below 0 at 1,267 queries — a real negative correlation, not noise.
- The whole bound holds on every pair for the graded metrics (nDCG@10, MRR@10: ratio ≤ 0.82). It fails only for
  the 0/1 metrics (p@1; recall@100 with one relevant answer), where Bhatia–Davis is attained and has no slack:
  there the ratio is 1 − r, up to 1.203 — a standard error too small by a factor √1.203 = 1.097 at worst.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
QUERY_METRICS = ROOT / "data" / "real" / "query_metrics"
KEYS = ["setting", "precision", "instruction", "metric", "tie_policy"]
BASELINES = {"tiebreak-run/constant", "tiebreak-run/uniform-random"}


def pairs_of(path: Path) -> pd.DataFrame:
    """Every pair of systems under every condition of one per-query file: r and the bound's ratio."""
    frame = pd.read_parquet(path, columns=["system", "task", *KEYS, "qid", "oblivious", "expected"])
    task = str(frame["task"].iloc[0])
    found = []
    for value in ("oblivious", "expected"):
        # the expected value does not depend on the tie policy: taken once, under the first one
        first = frame.groupby(KEYS[:-1], observed=True)["tie_policy"].transform(lambda s: sorted(s.unique())[0])
        rows = frame if value == "oblivious" else frame[frame["tie_policy"] == first]
        wide = rows.pivot_table(index=[*KEYS, "qid"], columns="system", values=value, observed=True)
        for key, scores in wide.groupby(level=list(range(len(KEYS))), observed=True):
            scores = scores.dropna(axis=1, how="all")
            assert not scores.isna().any().any(), (task, key)  # every system of a condition has every query
            r = scores.corr().to_numpy()
            cov = scores.cov(ddof=0).to_numpy()
            mean = scores.mean().to_numpy()
            first_i, second_i = np.triu_indices(len(mean), 1)
            bound = mean * (1 - mean)
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = ((np.diag(cov)[first_i] + np.diag(cov)[second_i] - 2 * cov[first_i, second_i])
                         / (bound[first_i] + bound[second_i]))
            names = np.asarray(scores.columns)
            found.append(pd.DataFrame({"task": task, **dict(zip(KEYS, key)), "value": value, "n": len(scores),
                                       "system_a": names[first_i], "system_b": names[second_i],
                                       "r": r[first_i, second_i], "ratio": ratio}))
    return pd.concat(found, ignore_index=True)


@pytest.fixture(scope="module")
def pairs() -> pd.DataFrame:
    files = sorted(QUERY_METRICS.glob("*.parquet"))
    assert len(files) == 8
    return pd.concat([pairs_of(path) for path in files], ignore_index=True)


def real(pairs: pd.DataFrame) -> pd.DataFrame:
    return pairs[~pairs["system_a"].isin(BASELINES) & ~pairs["system_b"].isin(BASELINES)]


def test_every_pair_of_every_condition_is_checked(pairs):
    assert len(pairs) == 20544
    assert pairs["task"].nunique() == 8 and set(pairs["value"]) == {"oblivious", "expected"}
    assert pairs["r"].notna().sum() == 18620  # the rest pair a system constant within the task


def test_the_smallest_correlation_is_the_constant_scorers_tie_order(pairs):
    worst = pairs.loc[pairs["r"].idxmin()]
    assert worst["r"] == pytest.approx(-0.638, abs=5e-4)
    assert (worst["task"], worst["setting"], worst["metric"], worst["value"]) == ("SpartQA", "mcr", "ndcg@10",
                                                                                   "oblivious")
    assert "tiebreak-run/constant" in (worst["system_a"], worst["system_b"])
    assert worst["ratio"] < 0.21  # graded metric: the bound keeps its slack


def test_between_real_systems_the_smallest_correlation_is_winogrande(pairs):
    found = real(pairs)
    worst = found.loc[found["r"].idxmin()]
    assert worst["r"] == pytest.approx(-0.1635, abs=5e-4)
    assert (worst["task"], worst["setting"], worst["value"]) == ("WinoGrande", "mcr", "oblivious")
    assert worst["r"] * np.sqrt(worst["n"]) < -5  # far beyond sampling noise of a zero correlation
    below = found[found["r"] < -0.05]
    assert set(below["task"]) == {"WinoGrande", "TempReasonL2Pure", "SpartQA"}
    assert len(below) == 75


def test_the_bound_holds_for_graded_metrics_and_fails_only_for_zero_one_metrics(pairs):
    worst = pairs.groupby("metric")["ratio"].max()
    assert worst["ndcg@10"] < 0.80 and worst["mrr@10"] < 0.82
    assert worst["p@1"] == pytest.approx(1.2031, abs=5e-4)
    assert worst["recall@100"] == pytest.approx(1.1302, abs=5e-4)
    over = pairs[pairs["ratio"] > 1 + 1e-9]
    assert set(over["metric"]) == {"p@1", "recall@100"}
    assert len(over) == 1022
    # a 0/1 value (oblivious p@1, recall@100) attains Bhatia–Davis, Var = μ(1 − μ): the bound is short exactly
    # when the covariance is negative (ratio = 1 − 2 Cov / (Var A + Var B))
    zero_one = pairs[pairs["metric"].isin(["p@1", "recall@100"]) & (pairs["value"] == "oblivious")
                     & pairs["r"].notna() & (pairs["r"].abs() > 1e-9)]
    assert ((zero_one["ratio"] > 1) == (zero_one["r"] < 0)).all()


def test_the_script_prints_what_pandas_finds(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import query_correlations
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    folder = tmp_path / "real" / "query_metrics"
    folder.mkdir(parents=True)
    (folder / "rar-b_WinoGrande.parquet").symlink_to(QUERY_METRICS / "rar-b_WinoGrande.parquet")
    theirs = query_correlations.pair_rows(tmp_path)
    ours = pairs_of(QUERY_METRICS / "rar-b_WinoGrande.parquet")
    key = ["task", *KEYS, "value", "system_a", "system_b"]
    merged = theirs.astype({"instruction": bool}).merge(ours, on=key, suffixes=("_script", "_pandas"))
    assert len(merged) == len(ours) == len(theirs)
    both = merged["r_pandas"].notna()
    assert (merged["r_script"].notna() == both).all()
    np.testing.assert_allclose(merged.loc[both, "r_script"], merged.loc[both, "r_pandas"], atol=1e-9)
    np.testing.assert_allclose(merged["ratio_script"], merged["ratio_pandas"], atol=1e-9)
    assert query_correlations.main(["--data", str(tmp_path), "--worst", "3"]) == 0
    printed = capsys.readouterr().out
    assert f"{ours['r'].min():.4f}" in printed and f"{ours['ratio'].max():.4f}" in printed
