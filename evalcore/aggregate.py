"""Aggregation across queries, tasks and systems: pure functions on numpy arrays / DataFrames.

Definitions (docs/DESIGN.md § Definitions):
- task score = mean over queries; G = (Π x_t)^(1/n) over tasks (a zero task makes G zero; NaN propagates);
  G_min / G_max / G_expected = G of the task mins / maxes / expected values (G is monotone).
- Each benchmark is ranked by its own official aggregate (:func:`official_aggregate`): RAR-b by G (its
  paper's geometric mean), R2MED by ``mean``, the arithmetic mean over tasks (the "Avg" of its site), CRUMB by
  ``mean`` too (its paper averages nDCG@10 and R@100 over its eight tasks);
  ``mean_min`` / ``mean_max`` / ``mean_expected`` are the mean of the task mins / maxes / expected values.
- ranks are competition ranks ("min": 1, 2, 2, 4), higher score = better.
- Borda: per task a system scores the number of other systems it beats plus ½ per tie, summed over tasks
  (= scipy ``rankdata(method="average") - 1`` per task), from sorted columns (memory linear in the systems).
  A leaderboard holds at most :func:`max_systems` systems (``TIEBREAK_MAX_SYSTEMS``, default 100,000).
- Rank intervals (LMArena style) from per-system intervals [lo, hi]:
  ``rank_lo`` (best plausible rank) = 1 + #{j : lo_j > hi_i}   (systems surely better than i);
  ``rank_hi`` (worst plausible rank) = #{j : hi_j >= lo_i}      (i itself + systems not surely worse).
- Uncertainty (intervals, rank sets, tests) is :mod:`evalcore.uncertainty`'s.
"""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np
import pandas as pd

from evalcore.errors import InputError

SCORE_COLUMNS = ("value", "expected", "min", "max")

# aggregate name -> what it is; the name is the column that holds it in a leaderboard
AGGREGATES = {"G": "geometric mean over tasks", "mean": "arithmetic mean over tasks"}
# each benchmark's own aggregate (its paper / site); others default to G
OFFICIAL_AGGREGATES = {"rar-b": "G", "r2med": "mean", "crumb": "mean"}
MAX_SYSTEMS_ENV = "TIEBREAK_MAX_SYSTEMS"
DEFAULT_MAX_SYSTEMS = 100_000
# the summary columns of a leaderboard and its exports (each lens' columns, store.answers.LENS_COLUMNS; the
# export provenance, store.answers.EXPORT_PROVENANCE); a task of the same name gets another column label
# (task_column_labels)
SUMMARY_COLUMNS = (
    "rank", "system", "G", "G_min", "G_max", "G_expected", "mean", "mean_min", "mean_max", "mean_expected",
    "borda", "n_tasks", "complete", "zero_task", "has_query_data", "ranked_by",
    *(f"{lens}_{column}" for lens in ("queries", "tasks") for column in ("lo", "hi", "rank_lo", "rank_hi", "tier",
                                                                         "first")),
    "level", "ranks", "board_notes",
)


def official_aggregate(benchmark: str | None) -> str:
    """The aggregate a benchmark is ranked by: ``G`` for RAR-b, ``mean`` for R2MED and CRUMB, ``G`` otherwise."""
    return OFFICIAL_AGGREGATES.get(str(benchmark or "").lower(), "G")


def max_systems(environ: dict | None = None) -> int:
    """The most systems one leaderboard may hold: ``$TIEBREAK_MAX_SYSTEMS`` (a positive integer), else 100,000."""
    environ = os.environ if environ is None else environ
    text = environ.get(MAX_SYSTEMS_ENV, "").strip()
    try:
        value = int(text) if text else DEFAULT_MAX_SYSTEMS
    except ValueError:
        raise InputError(f"{MAX_SYSTEMS_ENV}={text!r}: expected a positive whole number of systems") from None
    if value < 1:
        raise InputError(f"{MAX_SYSTEMS_ENV}={text!r}: expected a positive whole number of systems")
    return value


def check_system_count(n_systems: int) -> None:
    """InputError (one line naming the limit and how to raise it) past :func:`max_systems`."""
    limit = max_systems()
    if n_systems > limit:
        raise InputError(
            f"{n_systems:,} systems to rank exceed the limit of {limit:,} systems per leaderboard "
            f"(Borda points, rank intervals and pair checks grow with it); raise it with {MAX_SYSTEMS_ENV}={n_systems}"
        )


def task_column_labels(tasks: Sequence[str]) -> list[str]:
    """The column label of each task in a leaderboard: the task's name, or ``"<name> (task)"`` (repeated as
    needed) when the name is a summary column (``rank``, ``G``, ``system``...) or already taken."""
    taken = set(SUMMARY_COLUMNS)
    labels = []
    for task in tasks:
        label = str(task)
        while label in taken:
            label += " (task)"
        taken.add(label)
        labels.append(label)
    return labels


# -- scalar aggregates ----------------------------------------------------------------------------------
def geometric_mean(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """(Π x)^(1/n) along ``axis``; any zero gives 0, any NaN gives NaN; values must be ≥ 0."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape[axis] == 0:  # G of no tasks is undefined
        return np.full(np.delete(values.shape, axis), np.nan) if values.ndim > 1 else np.float64(np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.exp(np.mean(np.log(values), axis=axis))


def competition_ranks(scores: np.ndarray) -> np.ndarray:
    """Competition ("min") ranks, 1 = highest score: rank = 1 + #{j : score_j > score_i}. NaN → rank NaN."""
    scores = np.asarray(scores, dtype=np.float64)
    ranks = np.full(scores.shape, np.nan)
    finite = ~np.isnan(scores)
    ascending = np.sort(scores[finite])
    n_greater = ascending.size - np.searchsorted(ascending, scores[finite], side="right")
    ranks[finite] = 1 + n_greater
    return ranks


def borda_points(task_matrix: np.ndarray) -> np.ndarray:
    """Borda totals for a (systems × tasks) matrix without NaN: Σ_t (#beaten + ½ #tied others).

    Per task, from the sorted column: #beaten = #{j : x_j < x_i}, #tied others = #{j : x_j = x_i} − 1
    (O(n log n) time and O(n) memory per task; more than :func:`max_systems` systems are refused)."""
    x = np.asarray(task_matrix, dtype=np.float64)
    check_system_count(x.shape[0])
    points = np.zeros(x.shape[0])
    for column in x.T:
        ordered = np.sort(column)
        below = np.searchsorted(ordered, column, side="left")
        at_or_below = np.searchsorted(ordered, column, side="right")
        points += below + 0.5 * (at_or_below - below - 1)
    return points


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's τ-b (tie-corrected) between two score vectors; NaN with < 2 items or no variation."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.size < 2:
        return float("nan")
    upper = np.triu_indices(x.size, k=1)
    sign_x = np.sign(x[:, None] - x[None, :])[upper]
    sign_y = np.sign(y[:, None] - y[None, :])[upper]
    concordance = float(np.sum(sign_x * sign_y))
    denominator = np.sqrt(float(np.sum(sign_x != 0)) * float(np.sum(sign_y != 0)))
    return concordance / denominator if denominator > 0 else float("nan")


# -- pairs ---------------------------------------------------------------------------------------------
def flipped_pairs(systems: Sequence[str], g_a: np.ndarray, g_b: np.ndarray) -> pd.DataFrame:
    """Pairs strictly ordered one way under a and strictly the other way under b.

    Columns: system_1, system_2 (system_1 ahead under a), G_a_1, G_a_2, G_b_1, G_b_2.
    """
    names = np.asarray(systems, dtype=object)
    g_a = np.asarray(g_a, dtype=np.float64)
    g_b = np.asarray(g_b, dtype=np.float64)
    i, j = np.triu_indices(names.size, k=1)
    flipped = np.sign(g_a[i] - g_a[j]) * np.sign(g_b[i] - g_b[j]) < 0
    i, j = i[flipped], j[flipped]
    ahead_under_a = g_a[i] > g_a[j]
    first = np.where(ahead_under_a, i, j)
    second = np.where(ahead_under_a, j, i)
    return pd.DataFrame(
        {
            "system_1": names[first], "system_2": names[second],
            "G_a_1": g_a[first], "G_a_2": g_a[second], "G_b_1": g_b[first], "G_b_2": g_b[second],
        }
    )


def overlapping_pairs(systems: Sequence[str], lo: np.ndarray, hi: np.ndarray) -> pd.DataFrame:
    """Pairs whose closed intervals [lo, hi] intersect (rows with NaN bounds are ignored).

    Columns: system_1, system_2, lo_1, hi_1, lo_2, hi_2 (system_1 has the higher upper bound... or the
    earlier position on equal bounds).
    """
    names = np.asarray(systems, dtype=object)
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    i, j = np.triu_indices(names.size, k=1)
    overlap = (lo[i] <= hi[j]) & (lo[j] <= hi[i])  # False whenever a bound is NaN
    i, j = i[overlap], j[overlap]
    swap = hi[j] > hi[i]
    first, second = np.where(swap, j, i), np.where(swap, i, j)
    return pd.DataFrame(
        {
            "system_1": names[first], "system_2": names[second],
            "lo_1": lo[first], "hi_1": hi[first], "lo_2": lo[second], "hi_2": hi[second],
        }
    )


def rank_intervals(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LMArena-style (rank_lo, rank_hi) from score intervals; see module docstring. NaN bounds → NaN."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    known = ~(np.isnan(lo) | np.isnan(hi))
    rank_lo = np.full(lo.shape, np.nan)
    rank_hi = np.full(lo.shape, np.nan)
    lo_known, hi_known = lo[known], hi[known]
    # counted on the sorted bounds (O(n log n)): #{j : lo_j > hi_i} and #{j : hi_j >= lo_i}
    lo_sorted, hi_sorted = np.sort(lo_known), np.sort(hi_known)
    rank_lo[known] = 1 + lo_sorted.size - np.searchsorted(lo_sorted, hi_known, side="right")
    rank_hi[known] = hi_sorted.size - np.searchsorted(hi_sorted, lo_known, side="left")
    return rank_lo, rank_hi


# -- tables --------------------------------------------------------------------------------------------
def task_matrices(task_table: pd.DataFrame, tasks: Sequence[str]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(system names, {column: systems × tasks matrix}) for value/expected/min/max; missing cells NaN.

    Systems are sorted by name; a (system, task) appearing twice keeps its first row.
    """
    tasks = list(tasks)
    frame = task_table[task_table["task"].isin(tasks)].drop_duplicates(["system", "task"])
    system_codes, systems = pd.factorize(frame["system"], sort=True)
    task_codes = pd.Categorical(frame["task"], categories=tasks).codes
    matrices = {}
    for column in SCORE_COLUMNS:
        matrix = np.full((len(systems), len(tasks)), np.nan)
        if column in frame:
            numbers = pd.to_numeric(frame[column], errors="coerce")
            matrix[system_codes, task_codes] = numbers.to_numpy(dtype=np.float64, na_value=np.nan)
        matrices[column] = matrix
    return np.asarray(systems, dtype=object), matrices


def leaderboard_frames(
    task_table: pd.DataFrame, tasks: Sequence[str], aggregate: str = "G"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rank systems by ``aggregate`` (``G`` or ``mean``, see :data:`AGGREGATES`) over ``tasks`` from a task
    table (system, task, value, expected, min, max).

    Returns (ranked, incomplete). ``ranked``: rank, system, G, G_min, G_max, G_expected, mean, mean_min,
    mean_max, mean_expected, borda, n_tasks, complete, zero_task, then one column per task (oblivious
    values; labels from :func:`task_column_labels`), sorted by rank then system. A system is ranked only
    when every task has a finite value >= 0; the others are in ``incomplete``: system, n_tasks (tasks with a
    usable value), missing_tasks (the others), reason, then the task columns (NaN where unusable).
    """
    if aggregate not in AGGREGATES:
        raise ValueError(f"unknown aggregate {aggregate!r}: expected one of {', '.join(AGGREGATES)}")
    tasks = list(tasks)
    labels = task_column_labels(tasks)
    systems, matrices = task_matrices(task_table, tasks)
    all_values = matrices["value"]
    missing = np.isnan(all_values)
    with np.errstate(invalid="ignore"):
        unusable = ~missing & ~(np.isfinite(all_values) & (all_values >= 0))
    usable = ~missing & ~unusable
    complete = usable.all(axis=1) if tasks else np.zeros(len(systems), dtype=bool)
    check_system_count(int(complete.sum()))
    # an aggregate of usable values is a number; a row whose aggregate is not one is never ranked all the same
    with np.errstate(invalid="ignore", over="ignore"):
        chosen = (geometric_mean(all_values, axis=1) if aggregate == "G" else all_values.mean(axis=1)) \
            if tasks else np.full(len(systems), np.nan)
    not_a_number = complete & ~np.isfinite(chosen)
    complete &= ~not_a_number
    values = all_values[complete]

    def reason(row_missing, row_unusable, nan_aggregate) -> str:
        parts = []
        for flags, what in ((row_missing, "missing"),
                            (row_unusable, "no usable value (NaN, infinite or negative) for")):
            names = [t for t, flag in zip(tasks, flags) if flag]
            if names:
                parts.append(f"{what} {len(names)} of {len(tasks)} tasks: {', '.join(names[:5])}"
                             f"{' …' if len(names) > 5 else ''}")
        if nan_aggregate:
            parts.append(f"{aggregate} is not a number")
        return "; ".join(parts) or "no task"

    out = ~complete
    incomplete = pd.DataFrame(
        {
            "system": systems[out],
            "n_tasks": usable[out].sum(axis=1).astype(np.int64),
            "missing_tasks": [[t for t, ok in zip(tasks, row) if not ok] for row in usable[out]],
            "reason": [reason(m, u, n) for m, u, n in zip(missing[out], unusable[out], not_a_number[out])],
        }
    )
    incomplete = pd.concat(
        [incomplete, pd.DataFrame(np.where(usable[out], all_values[out], np.nan), columns=labels)], axis=1
    )
    ranked_aggregates = {"G": geometric_mean(values, axis=1),
                         "mean": values.mean(axis=1) if len(values) else np.zeros(0)}
    ranked = pd.DataFrame({
        "rank": competition_ranks(ranked_aggregates[aggregate]).astype(np.int64), "system": systems[complete],
        "G": ranked_aggregates["G"],
    })
    ranked["G_min"] = geometric_mean(matrices["min"][complete], axis=1)
    ranked["G_max"] = geometric_mean(matrices["max"][complete], axis=1)
    ranked["G_expected"] = geometric_mean(matrices["expected"][complete], axis=1)
    ranked["mean"] = ranked_aggregates["mean"]
    for column in ("min", "max", "expected"):
        ranked[f"mean_{column}"] = matrices[column][complete].mean(axis=1) if len(ranked) else np.zeros(0)
    ranked["borda"] = borda_points(values)
    ranked["n_tasks"] = len(tasks)
    ranked["complete"] = True
    ranked["zero_task"] = (values == 0).any(axis=1)
    ranked = pd.concat([ranked, pd.DataFrame(values, columns=labels)], axis=1)
    ranked = ranked.sort_values(["rank", "system"], kind="stable").reset_index(drop=True)
    return ranked, incomplete.reset_index(drop=True)


SWAP_LIMIT = 5_000
"""Most systems (with expected values) whose order pairs :func:`order_swaps` compares (quadratic in them)."""


def order_swaps(systems: Sequence[str], by_policy: np.ndarray, by_expected: np.ndarray) -> pd.DataFrame | None:
    """Pairs the chosen tie policy orders one way and the expected values (over all orderings of tied
    documents) the other: system_1 is ahead by policy (value_1 > value_2) and behind by expected value
    (expected_1 < expected_2). Systems with a NaN on either side are left out; None past :data:`SWAP_LIMIT`
    such systems. Columns: system_1, system_2, value_1, value_2, expected_1, expected_2 (by value_1, value_2
    descending)."""
    names = np.asarray(systems, dtype=object)
    policy = np.asarray(by_policy, dtype=np.float64)
    expected = np.asarray(by_expected, dtype=np.float64)
    known = np.flatnonzero(~np.isnan(policy) & ~np.isnan(expected))
    if known.size > SWAP_LIMIT:
        return None
    first, second = [], []
    for i in known:  # one row of comparisons at a time: memory linear in the systems
        behind = known[(policy[known] < policy[i]) & (expected[known] > expected[i])]
        first.extend([i] * behind.size)
        second.extend(behind.tolist())
    first, second = np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)
    frame = pd.DataFrame({"system_1": names[first], "system_2": names[second], "value_1": policy[first],
                          "value_2": policy[second], "expected_1": expected[first], "expected_2": expected[second]})
    return frame.sort_values(["value_1", "value_2", "system_1", "system_2"], ascending=[False, False, True, True],
                             kind="stable").reset_index(drop=True)


def condition_gap(table_a: pd.DataFrame, table_b: pd.DataFrame,
                  aggregate: str = "G") -> tuple[pd.DataFrame, pd.DataFrame]:
    """b − a per system × task (tasks present under both) and in ``aggregate`` (``G`` or ``mean``, the
    benchmark's own: :func:`official_aggregate`) over each system's shared tasks.

    Inputs have columns system, task, value. Returns (per_task: system, task, a, b, gap;
    per_system: system, <aggregate>_a, <aggregate>_b, gap, n_tasks), e.g. ``G_a`` / ``G_b``.
    """
    if aggregate not in AGGREGATES:
        raise ValueError(f"unknown aggregate {aggregate!r}: expected one of {', '.join(AGGREGATES)}")
    per_task = table_a[["system", "task", "value"]].merge(
        table_b[["system", "task", "value"]], on=["system", "task"], suffixes=("_a", "_b")
    ).rename(columns={"value_a": "a", "value_b": "b"})
    per_task["gap"] = per_task["b"] - per_task["a"]
    per_task = per_task.sort_values(["system", "task"]).reset_index(drop=True)
    if aggregate == "G":
        with np.errstate(divide="ignore"):
            values = per_task.assign(v_a=np.log(per_task["a"]), v_b=np.log(per_task["b"]))
    else:
        values = per_task.assign(v_a=per_task["a"], v_b=per_task["b"])
    grouped = values.groupby("system", sort=True)
    back = np.exp if aggregate == "G" else (lambda v: v)
    a, b = f"{aggregate}_a", f"{aggregate}_b"
    per_system = pd.DataFrame(
        {
            a: back(grouped["v_a"].mean()),
            b: back(grouped["v_b"].mean()),
            "n_tasks": grouped.size(),
        }
    ).reset_index()
    per_system["gap"] = per_system[b] - per_system[a]
    return per_task, per_system[["system", a, b, "gap", "n_tasks"]]
