"""How the shipped per-query runs' systems co-vary across queries: the check behind the queries lens' bound for
published rows.

The bound takes the variance of a paired task difference as Var(A − B) ≤ Var(A) + Var(B), each side bounded by
Bhatia–Davis (a value in [0, 1] with mean μ has variance ≤ μ(1 − μ)). The first step holds when the two systems'
per-query scores are not negatively correlated (Cov(A, B) ≥ 0); with correlation r < 0 it can be short by the
factor 1 + |r| at most (2·sd_A·sd_B ≤ Var(A) + Var(B)). What the method needs in the end is weaker:

    Var(A − B) ≤ μ_A(1 − μ_A) + μ_B(1 − μ_B)        (the whole bound, "ratio" ≤ 1 below)

For every pair of systems of every shipped per-query condition (task, setting, precision, instruction, metric,
tie policy) and for both per-query values (``oblivious``, ``expected``), this prints Pearson's r of the two
systems' per-query scores within the task and the ratio Var(A − B) / (μ_A(1 − μ_A) + μ_B(1 − μ_B)) (variances
and means over the task's queries, divided by n). A system whose values do not vary within a task (the
constant scorer's expected p@1 on a task whose queries all have the same number of candidates) has no
correlation; its pairs are counted apart.

    python scripts/query_correlations.py [--data data] [--worst 10]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
KEYS = ["task", "setting", "precision", "instruction", "metric", "tie_policy"]
VALUES = ("oblivious", "expected")
SHORT = 1 + 1e-9  # a ratio above this: the bound is short by more than rounding


def pair_rows(data_dir: Path) -> pd.DataFrame:
    """One row per (condition, value, pair of systems): n queries, r (NaN when a side is constant), ratio."""
    found = []
    for path in sorted((data_dir / "real" / "query_metrics").glob("*.parquet")):
        frame = pd.read_parquet(path, columns=["system", *KEYS, "qid", *VALUES])
        for key, group in frame.groupby(KEYS, observed=True, sort=True):
            for value in VALUES:
                if value == "expected" and key[-1] != group_first_policy(frame, key):
                    continue  # the expected value does not depend on the tie policy: once per condition
                wide = group.pivot(index="qid", columns="system", values=value).dropna(axis=0, how="any")
                found.extend(_pairs(dict(zip(KEYS, key)), value, wide))
    return pd.DataFrame(found)


def group_first_policy(frame: pd.DataFrame, key: tuple) -> str:
    """The first tie policy (sorted) the condition ``key`` has: the expected value is taken under it."""
    same = np.ones(len(frame), dtype=bool)
    for name, value in zip(KEYS[:-1], key[:-1]):
        same &= (frame[name] == value).to_numpy()
    return sorted(frame.loc[same, "tie_policy"].unique())[0]


def _pairs(condition: dict, value: str, wide: pd.DataFrame) -> list[dict]:
    names = list(wide.columns)
    x = wide.to_numpy(dtype=np.float64)  # queries × systems
    n = x.shape[0]
    mean = x.mean(axis=0)
    constant = (x == x[:1]).all(axis=0)  # not var == 0: the mean of equal floats can miss them by an ulp
    centred = np.where(constant, 0.0, x - mean)
    var = (centred ** 2).mean(axis=0)
    bound = mean * (1 - mean)
    rows = []
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            cov = float((centred[:, a] * centred[:, b]).mean())
            r = np.nan if constant[a] or constant[b] else cov / np.sqrt(var[a] * var[b])
            var_diff = var[a] + var[b] - 2 * cov
            denominator = bound[a] + bound[b]
            ratio = var_diff / denominator if denominator > 0 else (0.0 if var_diff == 0 else np.inf)
            rows.append({**condition, "value": value, "system_a": names[a], "system_b": names[b], "n": n,
                         "r": r, "ratio": ratio})
    return rows


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per setting × metric × value: pairs, pairs with r defined, smallest r, how many below 0 and −0.05,
    how many with the bound short (ratio > 1), the largest ratio."""
    def one(group: pd.DataFrame) -> pd.Series:
        r = group["r"]
        return pd.Series({"pairs": len(group), "with_r": int(r.notna().sum()), "min_r": r.min(),
                          "median_r": r.median(), "r<0": int((r < 0).sum()), "r<-0.05": int((r < -0.05).sum()),
                          "ratio>1": int((group["ratio"] > SHORT).sum()), "max_ratio": group["ratio"].max()})
    return rows.groupby(["setting", "metric", "value"], observed=True).apply(one, include_groups=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO / "data")
    parser.add_argument("--worst", type=int, default=10, help="how many of the smallest correlations to list")
    args = parser.parse_args(argv)
    rows = pair_rows(args.data)
    if rows.empty:
        print(f"no per-query runs under {args.data / 'real' / 'query_metrics'}", file=sys.stderr)
        return 2
    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 20)
    defined = rows[rows["r"].notna()]
    print(f"{len(rows)} pairs × task × condition × value; {len(defined)} with a correlation "
          f"({len(rows) - len(defined)} involve a system constant within the task)")
    print(f"smallest r {defined['r'].min():.4f}; r < 0: {int((defined['r'] < 0).sum())}; "
          f"r < -0.05: {int((defined['r'] < -0.05).sum())}; ratio > 1: {int((rows['ratio'] > SHORT).sum())}; "
          f"largest ratio {rows['ratio'].max():.4f}\n")
    print(summary(rows).to_string(float_format=lambda v: f"{v:.4f}"))
    print(f"\nthe {args.worst} smallest correlations:")
    worst = defined.nsmallest(args.worst, "r")
    print(worst[[*KEYS, "value", "system_a", "system_b", "n", "r", "ratio"]].to_string(
        index=False, float_format=lambda v: f"{v:.4f}"))
    print(f"\nthe {args.worst} largest ratios:")
    print(rows.nlargest(args.worst, "ratio")[[*KEYS, "value", "system_a", "system_b", "n", "r", "ratio"]].to_string(
        index=False, float_format=lambda v: f"{v:.4f}"))
    negative = defined[defined["r"] < 0]
    if len(negative):
        involved = pd.concat([negative["system_a"], negative["system_b"]]).value_counts()
        print("\nsystems in the pairs with r < 0 (pairs each):")
        print(involved.to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
