"""What the store is asked (:class:`Condition`) and what it answers with: plain dataclasses, no behaviour
beyond what :class:`Leaderboard`'s exports share (:meth:`~Leaderboard.rows`, :meth:`~Leaderboard.export_frame`)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from evalcore.schema import DEFAULT_TIE_POLICY


@dataclass(frozen=True)
class Condition:
    """One evaluation condition; ``None`` means 'any' (for ``instruction``: one state per system, see
    :mod:`evalcore.store`)."""

    benchmark: str
    metric: str = "ndcg@10"
    setting: str = "full"  # 'full' | 'mcr'
    instruction: bool | None = False
    precision: str = "fp32"
    tie_policy: str = DEFAULT_TIE_POLICY


@dataclass
class SkippedFile:
    """A parquet file (or a folder) under the data dir that was not loaded, and why."""

    path: str
    reason: str


@dataclass
class LoadWarning:
    """Rows of a loaded file that were left out or changed at load (the rest of the file is used), and why."""

    path: str
    message: str


EXPORT_PROVENANCE = ("level", "ranks", "board_notes")
"""The columns :meth:`Leaderboard.export_frame` adds after a board's own: the level and the kind of its rank sets,
and what is wrong with its data (``board_notes``, only when something is)."""

LENS_COLUMNS = ("lo", "hi", "rank_lo", "rank_hi", "tier", "first")
"""What each lens adds to every ranked row, as ``<lens>_<name>`` (e.g. ``queries_rank_lo``): the interval of the
board's aggregate, the rank set (of the board's kind), the tier and whether the row could be #1."""


@dataclass(frozen=True)
class LensSummary:
    """What one lens (:mod:`evalcore.uncertainty`) says of a whole board: whether it can speak of it (``reason``
    when not), its adjacent pairs' tests (system_1 above system_2 in the board's order, statistic, one-sided
    p_value — NaN when not tested —, adjusted (Holm), differ), which rows are surely above which
    (``surely_above[i, j]``: ranked row j surely above row i) and, when no pair differs, the strongest pair
    against Holm's first threshold (``strongest``: system_1, system_2, p_value, threshold, n_tested)."""

    name: str
    question: str
    available: bool
    reason: str = ""
    adjacent: pd.DataFrame | None = None
    surely_above: np.ndarray | None = None
    strongest: dict | None = None

    @property
    def n_differ(self) -> int:
        return 0 if self.adjacent is None else int(self.adjacent["differ"].sum())

    @property
    def n_pairs(self) -> int:
        return 0 if self.adjacent is None else len(self.adjacent)

    @property
    def n_tested(self) -> int:
        return 0 if self.adjacent is None else int(self.adjacent["p_value"].notna().sum())


@dataclass(frozen=True)
class CommonTasks:
    """A common-task ranking: the ``tasks`` every shown system has (the board's order), the board's other tasks
    ``dropped``, over ``n_systems`` shown systems."""

    tasks: list
    dropped: list
    n_systems: int


@dataclass
class Leaderboard:
    """Result of :meth:`Store.leaderboard`."""

    ranked: pd.DataFrame  # rank, system, G, G_min, G_max, G_expected, mean, mean_min, mean_max, mean_expected,
    #                       borda, n_tasks, complete, zero_task, has_query_data, then for each lens of
    #                       evalcore.uncertainty ("queries", "tasks"; :data:`LENS_COLUMNS`): <lens>_lo, <lens>_hi
    #                       (interval of ``ranked_by``), <lens>_rank_lo, <lens>_rank_hi (rank set of kind
    #                       ``ranks``), <lens>_tier, <lens>_first (could be #1) — NaN / 0 / False where the lens
    #                       says nothing —, then one column per task (``tasks``). ``rank`` is the competition
    #                       rank of the point values of ``ranked_by``; rows come in its order.
    incomplete: pd.DataFrame  # system, n_tasks, missing_tasks (list[str]), reason (str), then the task columns
    #                           (values where usable, else NaN)
    tasks: list[str]  # the task columns of ``ranked``, in order (a task's name, or "<name> (task)" when its
    #                   name is a summary column such as "rank" or "G": see aggregate.task_column_labels)
    zero_task_systems: list[str] = field(default_factory=list)  # ranked systems with G = 0 from a zero task
    ranked_by: str = "G"  # the aggregate ``rank`` follows: "G" (geometric mean) or "mean" (arithmetic mean)
    task_names: list[str] = field(default_factory=list)  # the task names of ``tasks``, in the same order
    policy_swaps: pd.DataFrame | None = None  # pairs ordered one way by ``tie_policy`` and the other by their
    #   expected values (aggregate.order_swaps: system_1 ahead by policy, behind by expected; value_1/2,
    #   expected_1/2 in ``ranked_by``); empty = no pair; None = not computed (too many systems)
    tie_policy: str | None = None  # the tie policy of the oblivious values ranked
    level: float = 0.95  # of every interval, rank set and test
    ranks: str = "marginal"  # the kind of the rank sets: "marginal" (each row at ``level``) or "simultaneous"
    lenses: dict = field(default_factory=dict)  # lens name -> LensSummary ({} = uncertainty not asked for)
    declared_tasks: list[str] | None = None  # the benchmark's declared tasks for this setting (None: undeclared)
    tasks_without_results: list[str] = field(default_factory=list)  # declared tasks no system has rows for
    common_tasks: CommonTasks | None = None  # set when the board ranks on the tasks all shown systems have
    notes: list[str] = field(default_factory=list)  # what the board must say of its data (unreadable files, …)

    def lens(self, name: str) -> LensSummary | None:
        """The :class:`LensSummary` of ``name`` ("queries" or "tasks"), None when not computed."""
        return self.lenses.get(name)

    def export_frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (rows of this board, e.g. :meth:`rows`) with what every export of it carries: the level and
        kind of its rank sets (:data:`EXPORT_PROVENANCE`) and, when something is wrong with the data,
        ``board_notes``."""
        frame = frame.assign(level=self.level if self.lenses else None, ranks=self.ranks if self.lenses else None)
        notes = self.data_notes()
        return frame.assign(board_notes=notes) if notes else frame

    def data_notes(self) -> str:
        """What the board stands on, in one line ("" when nothing is wrong): declared tasks without results and
        files that could not be read — what an export carries on every row."""
        parts = []
        if self.tasks_without_results:
            parts.append(f"declared task(s) with no results at all: {', '.join(self.tasks_without_results)}")
        return "; ".join(parts + list(self.notes))

    def rows(self) -> pd.DataFrame:
        """Every system, ranked ones first (by rank) then the systems not ranked: the ``ranked`` columns, with
        ``rank`` and the aggregates empty, ``complete`` False and ``n_tasks`` counting usable tasks for the
        latter (their task values where usable). What an export carries."""
        rest = self.incomplete.drop(columns=["missing_tasks", "reason"], errors="ignore").assign(complete=False)
        frame = pd.concat([self.ranked, rest], ignore_index=True)
        frame["rank"] = frame["rank"].astype("Int64")
        frame["complete"] = frame["complete"].astype(bool)
        for column in ("has_query_data", "zero_task"):
            if column in frame:
                frame[column] = frame[column].astype("boolean")
        return frame[list(self.ranked.columns)] if len(self.ranked.columns) else frame


@dataclass
class RankFlips:
    """Result of :meth:`Store.rank_flips` (systems complete under both conditions only), ranked by
    ``aggregate``, the benchmark's own (``G`` for RAR-b, ``mean`` for R2MED and CRUMB); ``<agg>`` below is it."""

    ranks: pd.DataFrame  # system, <agg>_a, <agg>_b, <agg>_min_a, <agg>_max_a, <agg>_min_b, <agg>_max_b, rank_a,
    #                      rank_b, rank_change (= rank_b - rank_a; positive = moved down)
    flipped_pairs: pd.DataFrame  # system_1, system_2 (system_1 ranked above system_2 under a, below under b),
    #                              <agg>_a_1, <agg>_a_2, <agg>_b_1, <agg>_b_2, intervals_overlap (bool: the tie
    #                              ranges [<agg>_min, <agg>_max] overlap in a or b)
    kendall_tau_b: float  # between <agg>_a and <agg>_b (NaN with < 2 systems)
    overlapping_pairs: pd.DataFrame  # condition ('a'|'b'), system_1, system_2, lo_1, hi_1, lo_2, hi_2
    #                                  (pairs whose tie-aware [<agg>_min, <agg>_max] intervals overlap; published
    #                                   rows without min/max are not included)
    tasks: list[str] = field(default_factory=list)  # tasks the aggregate was computed over (present under both)
    aggregate: str = "G"  # what ranks: the column prefix above (G_a or mean_a); of one task, that task's score


@dataclass
class Gap:
    """Result of :meth:`Store.instruction_gap` / :meth:`Store.mcr_vs_full`: b − a per task and in the
    benchmark's own aggregate (G for RAR-b, the mean for R2MED and CRUMB)."""

    per_task: pd.DataFrame  # system, task, a, b, gap (= b - a)
    per_system: pd.DataFrame  # system, <aggregate>_a, <aggregate>_b, gap (= b - a), n_tasks (tasks under both)
    label_a: str  # e.g. 'without instruction' / 'full'
    label_b: str  # e.g. 'with instruction' / 'mcr'
    aggregate: str = "G"  # the column prefix of per_system: G_a / G_b or mean_a / mean_b


@dataclass
class PairedTest:
    """Result of :meth:`Store.paired_test` (two-sided paired randomization / sign-flip test)."""

    system_a: str
    system_b: str
    task: str | None  # None = all shared tasks (statistic = mean over tasks of the per-task mean difference)
    observed_diff: float  # mean(a - b) of the per-query ``value``s
    p_value: float  # (1 + #{|resampled| >= |observed|}) / (1 + n_resamples)
    n_queries: int  # paired queries used
    n_tasks: int
    n_resamples: int
    value: str = "oblivious"  # which per-query values were compared: oblivious or expected
