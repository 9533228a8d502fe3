"""The statistics: bootstrap intervals of a leaderboard's aggregates and ranks, and the paired randomization
test, computed from per-query rows (:mod:`evalcore.store.queries`) with :mod:`evalcore.aggregate`'s kernels.

Bootstrap over queries (docs/DESIGN.md § Definitions): per task, resample the task's queries with replacement,
the same resample for every system (paired); a system's task mean is over its own queries, G / mean over tasks
per resample, and the 95% percentile interval of those. The resample counts are drawn per column of the
systems × queries matrix (:func:`evalcore.aggregate.shared_resample_counts`), so the columns are put in one
canonical order (:func:`query_matrix`): the same rows give the same interval whatever order a scan, a file
layout or an in-memory overlay delivers them in.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalcore import aggregate, rank_sets, ranks, separability, task_resampling
from evalcore.store import interval_cache, queries
from evalcore.store.answers import Condition, PairedTest
from evalcore.store.queries import Database

INTERVAL_LEVEL = 0.95


def query_matrix(
    system_code: np.ndarray, task_code: np.ndarray, query_key: np.ndarray, values: np.ndarray, n_systems: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-query rows → (systems × queries matrix, NaN where a system lacks a query; task code of each column).

    Columns are the distinct ``query_key`` values (a hash of task and qid) sorted by task code, then key.
    When the rows come as one block per system, every block holding the same keys in the same order (one
    file per system, written in one order), the blocks are stacked as they are and the columns put in that
    order; otherwise the keys are factorised. Both give the same matrix.
    """
    system_code = np.asarray(system_code)
    query_key = np.asarray(query_key)
    values = np.asarray(values, dtype=np.float64)
    task_code = np.asarray(task_code).astype(np.int64, copy=False)
    n_rows = len(query_key)
    if n_rows:
        starts = np.concatenate(([0], np.flatnonzero(system_code[1:] != system_code[:-1]) + 1))
        width = n_rows // len(starts)
        block_systems = system_code[starts]
        if (width * len(starts) == n_rows and np.array_equal(np.diff(starts), np.full(len(starts) - 1, width))
                and len(np.unique(block_systems)) == len(block_systems)):
            keys = query_key.reshape(len(starts), width)
            if (keys == keys[0]).all() and len(np.unique(keys[0])) == width:
                order = np.lexsort((keys[0], task_code[:width]))
                matrix = np.full((n_systems, width), np.nan)
                matrix[block_systems] = values.reshape(len(starts), width)[:, order]
                return matrix, task_code[:width][order]
    key_codes, keys = pd.factorize(query_key)
    keys = np.asarray(keys)
    key_task = np.empty(len(keys), dtype=np.int64)
    key_task[key_codes] = task_code
    order = np.lexsort((keys, key_task))
    column = np.empty(len(keys), dtype=np.int64)
    column[order] = np.arange(len(keys))
    matrix = np.full((n_systems, len(keys)), np.nan)
    matrix[system_code, column[key_codes]] = values
    return matrix, key_task[order]


def bootstrap(db: Database, cond: Condition, systems: list[str], tasks: list[str], instruction_of: pd.Series | None,
              n: int, seed: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Paired bootstrap of ``systems`` over ``tasks``: (per task, resamples × systems task means; resamples ×
    systems G), systems in the given order."""
    rows = queries.per_query_codes(db, cond, systems, tasks, instruction_of)
    matrix, key_task = query_matrix(rows["system_code"], rows["task_code"], rows["query_key"], rows["oblivious"],
                                    len(systems))
    matrices = [matrix[:, key_task == t] for t in range(len(tasks))]
    return aggregate.bootstrap_task_and_g(matrices, n_resamples=n, seed=seed)


def intervals(db: Database, cond: Condition, systems: list[str], tasks: list[str], instruction_of: pd.Series | None,
              n: int, seed: int, level: float = INTERVAL_LEVEL) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The percentile bootstrap intervals (at ``level``, 95% by default) of G and of the mean over tasks of
    each of ``systems``: {"G": (lo, hi), "mean": (lo, hi)}, in the order of ``systems``."""
    task_samples, g_samples = bootstrap(db, cond, systems, tasks, instruction_of, n, seed)
    mean_samples = np.mean(np.stack(task_samples, axis=-1), axis=-1)
    found = {}
    for name, samples in (("G", g_samples), ("mean", mean_samples)):
        lo, hi = aggregate.percentile_interval(samples, level=level, axis=0)
        found[name] = (np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64))
    return found


def cached_intervals(db: Database, cond: Condition, systems: list[str], tasks: list[str],
                     instruction_of: pd.Series | None, n: int, seed: int,
                     level: float = INTERVAL_LEVEL) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """:func:`intervals`, read from and written to the run-time cache (:mod:`evalcore.store.interval_cache`)
    when the deployment names one and the sha256 of every file the question reads is known."""
    if interval_cache.folder() is None:
        return intervals(db, cond, systems, tasks, instruction_of, n, seed, level)
    files = queries.files_of(db, cond, systems)
    if not files or any(f not in db.file_sha256 for f in files):
        return intervals(db, cond, systems, tasks, instruction_of, n, seed, level)
    question = {"benchmark": cond.benchmark, "metric": cond.metric, "setting": cond.setting,
                "instruction": cond.instruction, "precision": cond.precision, "tie_policy": cond.tie_policy,
                "systems": list(systems), "states": [queries.state(instruction_of, s) for s in systems],
                "tasks": list(tasks), "resamples": int(n), "seed": int(seed)}
    if level != INTERVAL_LEVEL:  # the default's keys stay those written before the level was a choice
        question["level"] = float(level)
    text = interval_cache.key(question, [db.file_sha256[f] for f in files])
    found = interval_cache.read(text, len(systems))
    if found is None:
        found = intervals(db, cond, systems, tasks, instruction_of, n, seed, level)
        interval_cache.write(text, found)
    return found


def leaderboard_intervals(db: Database, cond: Condition, ranked: pd.DataFrame, ranked_by: str, tasks: list[str],
                          instruction_of: pd.Series, n: int, seed: int,
                          level: float = INTERVAL_LEVEL) -> tuple[dict[str, np.ndarray], int]:
    """The interval columns over queries and ties of a leaderboard (G_lo, G_hi, mean_lo, mean_hi,
    combined_rank_lo, combined_rank_hi: NaN for systems without per-query data on every task; combined_lo,
    combined_hi, combined_shared_rank: every system) and the number of resamples used (0 = none computed).

    Ranks admit ties (:mod:`evalcore.ranks`): the ranking aggregate's combined interval is the hull of its point,
    its bootstrap interval over queries and its tie range [min, max]; combined_shared_rank = 1 + the systems
    surely better by it, and [combined_rank_lo, combined_rank_hi] the ranks the combined intervals allow (for
    systems with a bootstrap interval). The task-level ranks every row has are :func:`task_level`'s."""
    columns = {c: np.full(len(ranked), np.nan) for c in ("G_lo", "G_hi", "mean_lo", "mean_hi")}
    with_data = ranked.loc[ranked["has_query_data"], "system"].tolist()
    used = 0
    if n > 0 and with_data and tasks:
        found = cached_intervals(db, cond, with_data, tasks, instruction_of, n, seed, level)
        position = ranked.set_index("system").index.get_indexer(with_data)
        for name, (lo, hi) in found.items():
            columns[f"{name}_lo"][position] = lo
            columns[f"{name}_hi"][position] = hi
        used = n
    tied = ranks.tie_aware_ranks(ranked[ranked_by].to_numpy(dtype=np.float64),
                                 (columns[f"{ranked_by}_lo"], columns[f"{ranked_by}_hi"]),
                                 (ranked[f"{ranked_by}_min"].to_numpy(dtype=np.float64),
                                  ranked[f"{ranked_by}_max"].to_numpy(dtype=np.float64)))
    columns.update(combined_rank_lo=tied.rank_lo, combined_rank_hi=tied.rank_hi, combined_lo=tied.lo,
                   combined_hi=tied.hi, combined_shared_rank=tied.shared_rank)
    return columns, used


PAIRED_VALUES = ("oblivious", "expected")
"""The per-query values a paired test may compare: as reported, or tie-aware expected."""


def paired_test(db: Database, system_a: str, system_b: str, cond: Condition, task: str | None,
                instruction_of: pd.Series | None, n_resamples: int, seed: int,
                value: str = "oblivious") -> PairedTest:
    """Paired randomization (sign-flip) test on per-query ``value``s (one of :data:`PAIRED_VALUES`; see
    :func:`evalcore.aggregate.paired_randomization_test`); ValueError when the two systems share no per-query
    data under ``cond``."""
    if value not in PAIRED_VALUES:
        raise ValueError(f"value must be one of {', '.join(PAIRED_VALUES)}, not {value!r}")
    rows = queries.per_query(db, cond, [system_a, system_b], None if task is None else [task], instruction_of,
                             columns=f"system, task, qid, {value}")
    wide = rows.pivot_table(index=["task", "qid"], columns="system", values=value, aggfunc="mean")
    if system_a not in wide.columns or system_b not in wide.columns:
        raise ValueError(f"no per-query data for both {system_a!r} and {system_b!r} under {cond}")
    wide = wide.dropna(subset=[system_a, system_b])
    if wide.empty:
        raise ValueError(f"{system_a!r} and {system_b!r} share no queries under {cond}")
    differences = (wide[system_a] - wide[system_b]).groupby(level="task")
    per_task = [group.to_numpy() for _, group in differences]
    observed, p_value = aggregate.paired_randomization_test(per_task, n_resamples=n_resamples, seed=seed)
    return PairedTest(system_a, system_b, task, observed, p_value, len(wide), len(per_task), n_resamples, value)


# -- over tasks: what every row with task scores has ---------------------------------------------------------
TASK_LEVEL_COLUMNS = ("G_task_lo", "G_task_hi", "mean_task_lo", "mean_task_hi", "shared_rank", "rank_lo", "rank_hi",
                      "tier", "could_be_first")
"""The columns :func:`task_level` adds to a leaderboard's ranked rows."""


@dataclass(frozen=True)
class TaskLevel:
    """What the paired bootstrap over tasks says of a board (:mod:`evalcore.task_resampling`,
    :mod:`evalcore.rank_sets`, :mod:`evalcore.separability`): ``columns`` (:data:`TASK_LEVEL_COLUMNS`, in the
    ranked rows' order), ``surely_above`` (bool systems × systems: [i, j] = j surely better than i) and
    ``adjacent`` (the neighbours' tests)."""

    columns: dict
    surely_above: np.ndarray
    adjacent: separability.AdjacentPairs | None


def task_level(ranked: pd.DataFrame, task_labels: list[str], ranked_by: str, n: int, seed: int, level: float,
               query_p_values: np.ndarray | None = None, upper: float = math.inf) -> TaskLevel:
    """The task-level interval of G and of the mean, the rank set of ``ranked_by`` (shared_rank = rank_lo =
    1 + the systems surely better; rank_hi), the tier and "could be #1" of every ranked row, and the adjacent
    pairs' tests (``query_p_values``: one per adjacent pair, over queries where both have per-query data, NaN
    elsewhere; ``upper``: the largest value the metric takes, where it has one). ``n`` = 0 resamples: no interval,
    shared_rank the competition rank, tier 0."""
    size = len(ranked)
    nan = np.full(size, np.nan)
    columns = {"G_task_lo": nan, "G_task_hi": nan.copy(), "mean_task_lo": nan.copy(), "mean_task_hi": nan.copy(),
               "shared_rank": ranked["rank"].to_numpy(dtype=np.int64) if size else np.zeros(0, dtype=np.int64),
               "rank_lo": nan.copy(), "rank_hi": nan.copy(), "tier": np.zeros(size, dtype=np.int64),
               "could_be_first": np.zeros(size, dtype=bool)}
    if n <= 0 or size == 0 or not task_labels:
        return TaskLevel(columns, np.zeros((size, size), dtype=bool), None)
    scores = ranked[task_labels].to_numpy(dtype=np.float64)
    n_tasks = scores.shape[1]
    counts = task_resampling.resample_counts(n_tasks, n, seed)
    for name in ("G", "mean"):
        samples = task_resampling.aggregate_samples(scores, counts, name)
        lo, hi = task_resampling.score_intervals(samples, ranked[name].to_numpy(dtype=np.float64), n_tasks, level,
                                                 upper)
        columns[f"{name}_task_lo"], columns[f"{name}_task_hi"] = lo, hi
        if name == ranked_by:
            sets = rank_sets.rank_sets(samples, ranked[name].to_numpy(dtype=np.float64), n_tasks, level)
    columns.update(shared_rank=sets.rank_lo, rank_lo=sets.rank_lo.astype(np.float64),
                   rank_hi=sets.rank_hi.astype(np.float64), could_be_first=sets.rank_lo == 1)
    order = np.arange(size)  # the ranked rows come best first
    alpha = 1.0 - level
    columns["tier"] = separability.tiers(order, scores, ranked_by, seed, alpha)
    adjacent = separability.adjacent_pairs(order, scores, ranked_by, query_p_values, seed, alpha)
    return TaskLevel(columns, sets.above, adjacent)


TASK_LEVEL_VERSION = 1
"""Bump whenever a change alters what :func:`task_level` answers for the same scores and parameters."""


def cached_task_level(ranked: pd.DataFrame, task_labels: list[str], ranked_by: str, n: int, seed: int, level: float,
                      query_p_values: np.ndarray | None = None, upper: float = math.inf,
                      private: bool = False) -> TaskLevel:
    """:func:`task_level`, read from and written to the run-time cache (:mod:`evalcore.store.interval_cache`,
    ``$TIEBREAK_CACHE/ranges/``) when the deployment names one — never for a ``private`` board (one holding a
    visitor's run, which is kept in memory only). The key holds the task scores themselves (their sha256), the
    systems' names and order, the aggregate, the parameters and the adjacent p-values over queries: the same
    board, the same answer."""
    if private or interval_cache.folder() is None or n <= 0 or len(ranked) == 0 or not task_labels:
        return task_level(ranked, task_labels, ranked_by, n, seed, level, query_p_values, upper)
    import hashlib

    scores = np.ascontiguousarray(ranked[list(task_labels) + ["G", "mean"]].to_numpy(dtype=np.float64))
    question = {"kind": "task_level", "version": TASK_LEVEL_VERSION, "systems": ranked["system"].tolist(),
                "tasks": list(task_labels), "ranked_by": ranked_by, "resamples": int(n), "seed": int(seed),
                "level": float(level), "upper": None if math.isinf(upper) else float(upper),
                "scores": hashlib.sha256(scores.tobytes()).hexdigest(),
                "query_p": None if query_p_values is None else [None if np.isnan(v) else float(v)
                                                                for v in query_p_values]}
    text = interval_cache.key(question, [])
    stored = interval_cache.read_arrays(text)
    size = len(ranked)
    if stored is not None:
        try:
            return _task_level_from(stored, size)
        except (KeyError, TypeError, ValueError):
            pass
    found = task_level(ranked, task_labels, ranked_by, n, seed, level, query_p_values, upper)
    adjacent = found.adjacent
    interval_cache.write_arrays(text, {**found.columns, "surely_above": found.surely_above,
                                       "first": adjacent.first, "second": adjacent.second,
                                       "p_value": adjacent.p_value, "adjusted": adjacent.adjusted,
                                       "differ": adjacent.differ, "kind": adjacent.kind.astype(str)})
    return found


def _task_level_from(stored: dict, size: int) -> TaskLevel:
    """A :class:`TaskLevel` from a cache entry's arrays (ValueError when they do not fit ``size`` systems)."""
    kinds = {"shared_rank": np.int64, "tier": np.int64, "could_be_first": bool}
    columns = {name: np.asarray(stored[name], dtype=kinds.get(name, np.float64)) for name in TASK_LEVEL_COLUMNS}
    above = np.asarray(stored["surely_above"], dtype=bool).reshape(size, size)
    if any(values.shape != (size,) for values in columns.values()):
        raise ValueError("a cache entry of another board")
    adjacent = separability.AdjacentPairs(
        np.asarray(stored["first"], dtype=np.int64), np.asarray(stored["second"], dtype=np.int64),
        np.asarray(stored["p_value"], dtype=np.float64), np.asarray(stored["adjusted"], dtype=np.float64),
        np.asarray(stored["differ"], dtype=bool), np.asarray(stored["kind"], dtype=object))
    return TaskLevel(columns, above, adjacent)


def adjacent_query_p_values(db: Database, cond: Condition, ranked: pd.DataFrame, tasks: list[str],
                            instruction_of: pd.Series | None) -> np.ndarray:
    """Per adjacent pair of ``ranked`` (its rows' order), the p-value over queries where both systems have
    per-query results, NaN elsewhere: the paired sign-flip test on the tie-aware expected values
    (:func:`evalcore.aggregate.paired_randomization_test`'s statistic T = Σ_q w_q d_q, w_q = 1 / (tasks ·
    queries of q's task), over the queries both have), with its randomization distribution taken as normal —
    exact mean 0 and variance Σ_q w_q² d_q², thousands of queries — so p = erfc(|T| / √(2 Σ w² d²))."""
    with_data = ranked["has_query_data"].to_numpy(dtype=bool)
    both = with_data[:-1] & with_data[1:]
    p = np.full(max(len(ranked) - 1, 0), np.nan)
    if not both.any():
        return p
    names = ranked["system"].tolist()
    pairs = [(names[i], names[i + 1]) for i in np.flatnonzero(both)]
    involved = sorted({name for pair in pairs for name in pair})
    rows = queries.per_query_codes(db, cond, involved, tasks, instruction_of, value="expected")
    matrix, key_task = query_matrix(rows["system_code"], rows["task_code"], rows["query_key"], rows["expected"],
                                    len(involved))
    code = {name: i for i, name in enumerate(involved)}
    for index, (a, b) in zip(np.flatnonzero(both), pairs):
        d = matrix[code[a]] - matrix[code[b]]
        paired = ~np.isnan(d)
        if not paired.any():
            continue
        per_task = np.bincount(key_task[paired], minlength=len(tasks)).astype(np.float64)
        weights = 1.0 / (np.count_nonzero(per_task) * per_task[key_task[paired]])
        statistic = float((weights * d[paired]).sum())
        variance = float((weights * weights * d[paired] * d[paired]).sum())
        p[index] = 1.0 if variance == 0 else math.erfc(abs(statistic) / math.sqrt(2.0 * variance))
    return p
