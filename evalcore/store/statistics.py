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

import numpy as np
import pandas as pd

from evalcore import aggregate, ranks
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
              n: int, seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The 95% percentile bootstrap intervals of G and of the mean over tasks of each of ``systems``:
    {"G": (lo, hi), "mean": (lo, hi)}, in the order of ``systems``."""
    task_samples, g_samples = bootstrap(db, cond, systems, tasks, instruction_of, n, seed)
    mean_samples = np.mean(np.stack(task_samples, axis=-1), axis=-1)
    found = {}
    for name, samples in (("G", g_samples), ("mean", mean_samples)):
        lo, hi = aggregate.percentile_interval(samples, level=INTERVAL_LEVEL, axis=0)
        found[name] = (np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64))
    return found


def cached_intervals(db: Database, cond: Condition, systems: list[str], tasks: list[str],
                     instruction_of: pd.Series | None, n: int, seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """:func:`intervals`, read from and written to the run-time cache (:mod:`evalcore.store.interval_cache`)
    when the deployment names one and the sha256 of every file the question reads is known."""
    if interval_cache.folder() is None:
        return intervals(db, cond, systems, tasks, instruction_of, n, seed)
    files = queries.files_of(db, cond, systems)
    if not files or any(f not in db.file_sha256 for f in files):
        return intervals(db, cond, systems, tasks, instruction_of, n, seed)
    question = {"benchmark": cond.benchmark, "metric": cond.metric, "setting": cond.setting,
                "instruction": cond.instruction, "precision": cond.precision, "tie_policy": cond.tie_policy,
                "systems": list(systems), "states": [queries.state(instruction_of, s) for s in systems],
                "tasks": list(tasks), "resamples": int(n), "seed": int(seed)}
    text = interval_cache.key(question, [db.file_sha256[f] for f in files])
    found = interval_cache.read(text, len(systems))
    if found is None:
        found = intervals(db, cond, systems, tasks, instruction_of, n, seed)
        interval_cache.write(text, found)
    return found


def leaderboard_intervals(db: Database, cond: Condition, ranked: pd.DataFrame, ranked_by: str, tasks: list[str],
                          instruction_of: pd.Series, n: int, seed: int) -> tuple[dict[str, np.ndarray], int]:
    """The interval columns of a leaderboard (G_lo, G_hi, mean_lo, mean_hi, rank_lo, rank_hi: NaN for systems
    without per-query data on every task; combined_lo, combined_hi, shared_rank: every system) and the number
    of resamples used (0 = none computed).

    Ranks admit ties (:mod:`evalcore.ranks`): the ranking aggregate's combined interval is the hull of its point,
    its bootstrap interval and its tie range [min, max]; shared_rank = 1 + the systems surely better, and
    [rank_lo, rank_hi] the ranks the combined intervals allow (shown for systems with a bootstrap interval)."""
    columns = {c: np.full(len(ranked), np.nan) for c in ("G_lo", "G_hi", "mean_lo", "mean_hi")}
    with_data = ranked.loc[ranked["has_query_data"], "system"].tolist()
    used = 0
    if n > 0 and with_data and tasks:
        found = cached_intervals(db, cond, with_data, tasks, instruction_of, n, seed)
        position = ranked.set_index("system").index.get_indexer(with_data)
        for name, (lo, hi) in found.items():
            columns[f"{name}_lo"][position] = lo
            columns[f"{name}_hi"][position] = hi
        used = n
    tied = ranks.tie_aware_ranks(ranked[ranked_by].to_numpy(dtype=np.float64),
                                 (columns[f"{ranked_by}_lo"], columns[f"{ranked_by}_hi"]),
                                 (ranked[f"{ranked_by}_min"].to_numpy(dtype=np.float64),
                                  ranked[f"{ranked_by}_max"].to_numpy(dtype=np.float64)))
    columns.update(rank_lo=tied.rank_lo, rank_hi=tied.rank_hi, combined_lo=tied.lo, combined_hi=tied.hi,
                   shared_rank=tied.shared_rank)
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
