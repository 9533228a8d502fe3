"""A leaderboard's uncertainty through both lenses: what :meth:`evalcore.store.Store.leaderboard` asks for its
ranked rows (numpy and plain data in, :class:`Lens` out; the store reads the rows, this module does the maths).

For each lens (:mod:`~evalcore.uncertainty.queries_lens`: "on these tasks"; :mod:`~evalcore.uncertainty.tasks_lens`:
"on new tasks like these"), every ranked row gets its interval of the board's aggregate
(:mod:`~evalcore.uncertainty.intervals`), its rank set of the chosen kind (:mod:`~evalcore.uncertainty.rank_sets`)
and its tier; the board gets its adjacent pairs' tests and, when none differs, the reason
(:mod:`~evalcore.uncertainty.separability`). Everything is a closed form or a sort: the same board gives the same
numbers, in milliseconds, with no seed and no cache.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from evalcore.uncertainty import intervals, queries_lens, rank_sets, separability, tasks_lens
from evalcore.uncertainty.estimates import LENSES, Estimates
from evalcore.uncertainty.rank_sets import KINDS

QUESTIONS = {"queries": "on these tasks", "tasks": "on new tasks like these"}
"""What each lens answers, in the words every view, export and the API use."""


@dataclass(frozen=True)
class Lens:
    """One lens' answer for a board's ranked rows (in their order): ``available`` False with a one-line
    ``reason`` when the lens cannot speak of this board (then every array is NaN / empty)."""

    name: str
    available: bool
    reason: str
    lo: np.ndarray
    hi: np.ndarray
    rank_lo: np.ndarray   # float: NaN where unavailable
    rank_hi: np.ndarray
    tier: np.ndarray      # int, 0 where unavailable
    above: np.ndarray     # bool S × S: [i, j] = j surely above i
    adjacent: separability.AdjacentPairs | None
    none_differ: separability.NoneDiffer | None
    included: np.ndarray  # bool: rows inside the model (False: a zero task under G)

    @property
    def could_be_first(self) -> np.ndarray:
        return self.available & (self.rank_lo == 1)


def unavailable(name: str, size: int, reason: str) -> Lens:
    """A lens that says nothing of a board of ``size`` rows, and why."""
    nan = np.full(size, np.nan)
    return Lens(name, False, reason, nan, nan.copy(), nan.copy(), nan.copy(), np.zeros(size, dtype=np.int64),
                np.zeros((size, size), dtype=bool), None, None, np.zeros(size, dtype=bool))


def answer(est: Estimates, level: float, kind: str, upper: float = math.inf) -> Lens:
    """Intervals, rank sets, tiers and adjacent pairs of rows already in the board's order."""
    lo, hi = intervals.intervals(est, level, upper)
    sets = rank_sets.rank_sets(est, level, kind)
    tier = separability.tiers(sets.above, est.points)
    pairs = separability.adjacent_pairs(est, np.arange(est.size), 1.0 - level)
    return Lens(est.lens, True, "", lo, hi, sets.rank_lo.astype(np.float64), sets.rank_hi.astype(np.float64), tier,
                sets.above, pairs, separability.why_none(pairs), est.included.copy())


def tasks_answer(scores: np.ndarray, aggregate: str, level: float, kind: str, upper: float = math.inf) -> Lens:
    """The tasks lens of a board (``scores``: ranked rows × tasks, in the board's order)."""
    if scores.shape[1] < 2:
        return unavailable("tasks", scores.shape[0], "one task: nothing can be said of other tasks like it")
    return answer(tasks_lens.estimates(scores, aggregate), level, kind, upper)


def queries_answer(scores: np.ndarray, aggregate: str, level: float, kind: str, n_queries: list[int | None],
                   task_names: list[str], per_query: queries_lens.PerQuery | None = None,
                   ties: tuple[np.ndarray, np.ndarray] | None = None, upper: float = math.inf) -> Lens:
    """The queries lens of a board: ``n_queries`` per task (None where unknown; needed only where a row has no
    per-query values), ``per_query`` the rows that have them, ``ties`` their task-level tie ranges."""
    size, n_tasks = scores.shape
    if n_tasks == 0:
        return unavailable("queries", size, "no task")
    if not (np.isfinite(scores).all() and (scores >= 0).all() and (scores <= 1).all()):
        return unavailable("queries", size, "the metric is not bounded by [0, 1], so no variance bound applies")
    with_values = np.zeros(size, dtype=bool)
    counts = np.array([np.nan if n is None else float(n) for n in n_queries])
    if per_query is not None and len(per_query.rows):
        with_values[per_query.rows] = True
    missing = [name for name, n in zip(task_names, counts) if not np.isfinite(n)]
    if missing and not with_values.all():
        shown = ", ".join(missing[:3]) + (" …" if len(missing) > 3 else "")
        return unavailable("queries", size, f"no recorded query count for {shown} (data/query_counts.json), so a "
                                            "published score's variance cannot be bounded")
    counts = np.where(np.isfinite(counts), counts, 1.0)  # only per-query rows read these tasks
    est = queries_lens.estimates(scores, counts, aggregate, per_query, ties)
    return answer(est, level, kind, upper)


def both(scores: np.ndarray, aggregate: str, level: float, kind: str, n_queries: list[int | None],
         task_names: list[str], per_query: queries_lens.PerQuery | None = None,
         ties: tuple[np.ndarray, np.ndarray] | None = None, upper: float = math.inf) -> dict[str, Lens]:
    """{lens name: :class:`Lens`} for both lenses (:data:`LENSES`)."""
    if kind not in KINDS:
        raise ValueError(f"ranks must be one of {', '.join(KINDS)}, not {kind!r}")
    found = {"queries": queries_answer(scores, aggregate, level, kind, n_queries, task_names, per_query, ties, upper),
             "tasks": tasks_answer(scores, aggregate, level, kind, upper)}
    return {name: found[name] for name in LENSES}
