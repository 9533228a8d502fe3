"""The store's side of a leaderboard's uncertainty: the rows :mod:`evalcore.uncertainty` needs, read from the
database — per-query values of the rows that have them, in one canonical column order (:func:`query_matrix`),
their task-level tie ranges and the tasks' query counts — and the paired randomization test of the Compare view.
The maths lives in :mod:`evalcore.uncertainty`.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from evalcore.store import queries
from evalcore.store.answers import LENS_COLUMNS, Condition, LensSummary, PairedTest
from evalcore.store.queries import Database
from evalcore.uncertainty import board as lens_board
from evalcore.uncertainty import queries_lens
from evalcore.uncertainty.paired_test import paired_randomization_test
from evalcore.uncertainty.query_counts import QueryCounts

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


PAIRED_VALUES = ("oblivious", "expected")
"""The per-query values a paired test may compare: as reported, or tie-aware expected."""


def paired_test(db: Database, system_a: str, system_b: str, cond: Condition, task: str | None,
                instruction_of: pd.Series | None, n_resamples: int, seed: int,
                value: str = "oblivious") -> PairedTest:
    """Paired randomization (sign-flip) test on per-query ``value``s (one of :data:`PAIRED_VALUES`; see
    :func:`evalcore.paired_randomization_test`); ValueError when the two systems share no per-query
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
    observed, p_value = paired_randomization_test(per_task, n_resamples=n_resamples, seed=seed)
    return PairedTest(system_a, system_b, task, observed, p_value, len(wide), len(per_task), n_resamples, value)


def lenses(db: Database, cond: Condition, ranked: pd.DataFrame, table: pd.DataFrame, tasks: list[str],
           labels: list[str], ranked_by: str, instruction_of: pd.Series | None, level: float, kind: str,
           counts: QueryCounts, upper: float = math.inf) -> tuple[dict[str, np.ndarray], dict[str, LensSummary]]:
    """Both lenses of a board's ``ranked`` rows (in their order; ``table`` the task rows they were ranked from,
    ``tasks`` / ``labels`` the task names and their column labels): the columns ``<lens>_<name>``
    (:data:`LENS_COLUMNS`) and a :class:`LensSummary` per lens."""
    size = len(ranked)
    scores = ranked[labels].to_numpy(dtype=np.float64) if size else np.zeros((0, len(labels)))
    with_data = ranked["has_query_data"].to_numpy(dtype=bool) if size else np.zeros(0, dtype=bool)
    per_query, ties = None, None
    if with_data.any() and tasks:
        per_query, ties = _per_query_inputs(db, cond, ranked, table, tasks, instruction_of, with_data)
    n_queries = counts.counts_for(cond.benchmark, cond.setting, tasks)
    found = lens_board.both(scores, ranked_by, level, kind, n_queries, tasks, per_query, ties, upper)
    names = ranked["system"].to_numpy(dtype=object)
    columns, summaries = {}, {}
    for name, lens in found.items():
        values = {"lo": lens.lo, "hi": lens.hi, "rank_lo": lens.rank_lo, "rank_hi": lens.rank_hi,
                  "tier": lens.tier, "first": lens.could_be_first}
        columns.update({f"{name}_{column}": values[column] for column in LENS_COLUMNS})
        summaries[name] = _summary(lens, names)
    return columns, summaries


def _summary(lens: lens_board.Lens, names: np.ndarray) -> LensSummary:
    question = lens_board.QUESTIONS[lens.name]
    if not lens.available:
        return LensSummary(lens.name, question, False, lens.reason)
    pairs = lens.adjacent
    adjacent = pd.DataFrame({"system_1": names[pairs.first], "system_2": names[pairs.second],
                             "statistic": pairs.statistic, "p_value": pairs.p_value, "adjusted": pairs.adjusted,
                             "differ": pairs.differ.astype(bool)})
    strongest = None
    if lens.none_differ is not None:
        none = lens.none_differ
        strongest = {"system_1": str(names[none.first]), "system_2": str(names[none.second]),
                     "p_value": none.p_value, "threshold": none.threshold, "n_tested": none.n_tested}
    return LensSummary(lens.name, question, True, "", adjacent, lens.above, strongest)


def _per_query_inputs(db: Database, cond: Condition, ranked: pd.DataFrame, table: pd.DataFrame, tasks: list[str],
                      instruction_of: pd.Series | None,
                      with_data: np.ndarray) -> tuple[queries_lens.PerQuery, tuple[np.ndarray, np.ndarray]]:
    """The per-query values (oblivious, the board's points) of the rows that have them, and every row's task-level
    tie range (NaN where unknown: published rows)."""
    positions = np.flatnonzero(with_data)
    systems = ranked["system"].to_numpy(dtype=object)[positions].tolist()
    rows = queries.per_query_codes(db, cond, systems, tasks, instruction_of)
    matrix, key_task = query_matrix(rows["system_code"], rows["task_code"], rows["query_key"], rows["oblivious"],
                                    len(systems))
    per_query = queries_lens.PerQuery(positions, matrix, key_task)
    index = {name: i for i, name in enumerate(ranked["system"])}
    task_index = {name: t for t, name in enumerate(tasks)}
    low = np.full((len(ranked), len(tasks)), np.nan)
    high = low.copy()
    known = table[table["system"].isin(systems) & table["task"].isin(tasks)]
    r = known["system"].map(index).to_numpy(dtype=np.int64)
    t = known["task"].map(task_index).to_numpy(dtype=np.int64)
    low[r, t] = pd.to_numeric(known["min"], errors="coerce").to_numpy(dtype=np.float64)
    high[r, t] = pd.to_numeric(known["max"], errors="coerce").to_numpy(dtype=np.float64)
    return per_query, (low, high)
