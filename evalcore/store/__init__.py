"""The store: a data folder's results as answers to the dashboard's and the CLI's questions.

:class:`Store` is the one entry point (a facade); behind it, three parts with one concern each:

- :mod:`~evalcore.store.catalogue` — finds the parquet files, classifies them by their columns, validates them
  and skips what cannot be used, with the reason; loads the rest into DuckDB;
- :mod:`~evalcore.store.queries` — every question as SQL with bound parameters (task tables, facets, systems,
  tie summaries, per-query rows);
- :mod:`~evalcore.store.statistics` — the rows a board's uncertainty needs (:mod:`evalcore.uncertainty` does
  the maths), the paired randomization test;

plus :mod:`~evalcore.store.answers` (the question and answer types) and :mod:`~evalcore.store.derived` (the
derived data written beside each per-query file: its per-group sums, keyed by the file's sha256 and a format
version, which ``evalcore derive`` writes and the catalogue reads instead of scanning the file).

How a number flows (docs/ARCHITECTURE.md): run file → ``evalcore ingest`` (per-query rows, one parquet) →
``evalcore derive`` (its sums) → :class:`Store` (catalogue: sums checked, task means in ``task_results``) →
a question (queries / statistics) → a typed answer → a page.

A :meth:`Store.with_overlay` view answers the same questions with extra per-query rows held in memory (a
user's candidate run), never written anywhere.
"""
from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from evalcore import aggregate as _aggregate  # ``Store.leaderboard`` has a parameter named ``aggregate``
from evalcore import schema
from evalcore.errors import InputError
from evalcore.schema import CONDITION_KEY, DEFAULT_TIE_POLICY, QUERY_METRICS as QUERY_METRICS_COLUMNS
from evalcore.store import catalogue, derived, manifest, queries, statistics
from evalcore.store.answers import (CommonTasks, Condition, Gap, Leaderboard, LensSummary, LoadWarning, PairedTest,
                                    RankFlips, SkippedFile)
from evalcore.store.catalogue import DATA_ENV, RUNS_DIR, classify_parquet, data_dir, metric_bounded_by_one
from evalcore.store.statistics import query_matrix
from evalcore.uncertainty import query_counts

__all__ = [
    "CONDITION_KEY", "DATA_ENV", "DEFAULT_TIE_POLICY", "QUERY_METRICS_COLUMNS", "RUNS_DIR", "CommonTasks", "Condition",
    "Gap", "Leaderboard", "LensSummary", "LoadWarning", "PairedTest", "RankFlips", "SkippedFile", "Store",
    "classify_parquet", "data_dir", "metric_bounded_by_one", "query_matrix",
]

_ARROW_TYPES = {"VARCHAR": "string", "BOOLEAN": "bool", "DOUBLE": "float64", "BIGINT": "int64"}


class Store:
    """The results under a data folder: ``query_metrics``, ``task_scores`` and ``systems`` parquet files.

    ``data_dir`` defaults to ``$TIEBREAK_DATA`` or ``data`` (:func:`~evalcore.store.catalogue.data_dir`). Files
    are classified by schema; corrupt or foreign files are listed in :attr:`skipped` (and logged), rows left out
    in :attr:`warnings`; never fatal. Files under ``<data_dir>/runs/`` are raw runs (:meth:`runs`).
    Thread-safe: every question runs on cursors of its own; :meth:`reload` swaps in a new load atomically.
    """

    data_dir: Path
    skipped: list[SkippedFile]
    warnings: list[LoadWarning]

    def __init__(self, data_dir: str | Path | None = None) -> None:
        self.data_dir = catalogue.data_dir(data_dir)
        self._catalogue = catalogue.Catalogue(self.data_dir)
        self._lock = threading.Lock()  # guards the swap of what a reload loaded
        self._overlay: tuple | None = None  # (rows, sums, name) of a with_overlay view
        self._loaded: catalogue.Loaded | None = None
        self._db: queries.Database | None = None
        self.skipped, self.warnings = [], []
        self.reload()

    # -- loading ------------------------------------------------------------------------------------------
    def reload(self) -> None:
        """Rescan the data dir and rebuild the tables (new/removed/changed files take effect); a view made by
        :meth:`with_overlay` keeps its overlay."""
        loaded = self._catalogue.load()
        found = manifest.read(self.data_dir)
        if found.problem:
            loaded.skipped.append(SkippedFile(found.path, found.problem))
        counts = query_counts.read(self.data_dir)
        if counts.problem:
            loaded.skipped.append(SkippedFile(counts.path, counts.problem))
        db = queries.Database(loaded.conn, loaded.query_files, loaded.null_key_files, loaded.file_index_free,
                              loaded.file_sha256)
        if self._overlay is not None:
            rows, sums, _ = self._overlay
            db = db.with_overlay(rows, sums)
        with self._lock:
            self._loaded, self._db, self._manifest, self._counts = loaded, db, found, counts
            self.skipped, self.warnings = list(loaded.skipped), list(loaded.warnings)

    def _database(self) -> queries.Database:
        with self._lock:
            return self._db

    def cursor(self):
        """A new cursor on the loaded DuckDB database (tables ``task_results``, ``task_scores``, ``systems``,
        ``query_task_sums``, view ``query_metrics``): one per caller / thread."""
        return self._database().cursor()

    def fingerprint(self) -> str:
        """Cheap hash of the version (path, size, mtime, inode) of every parquet file under the data dir (no
        file is read)."""
        return catalogue.fingerprint(self.data_dir)

    @property
    def loaded_fingerprint(self) -> str:
        """:meth:`fingerprint` of the files as they were when the tables now served were loaded."""
        with self._lock:
            return self._loaded.fingerprint

    def is_stale(self) -> bool:
        """True when :meth:`fingerprint` differs from the one at the last load (then call :meth:`reload`)."""
        return self.fingerprint() != self.loaded_fingerprint

    @property
    def derived_sums(self) -> tuple[int, list[tuple[str, str]]]:
        """(how many per-query files' sums the last load read from their derived file, [(file, why its sums
        were computed in memory instead)])."""
        with self._lock:
            return self._loaded.sums_read, list(self._loaded.sums_computed)

    # -- the overlay (a candidate run evaluated against the shipped data) -----------------------------------
    def with_overlay(self, query_metrics, name: str = "candidate") -> "Store":
        """A view of this store whose every question also sees ``query_metrics``: per-query rows in memory (a
        pandas DataFrame or Arrow table with the contract's columns, e.g. ``evalcore.engine.evaluate`` output
        labelled with system and condition). Nothing is written anywhere; the loaded files are shared, not
        read again.

        The rows go through the checks a per-query file gets (NULL names, impossible values, repeated qids:
        :func:`~evalcore.store.catalogue.check_sums`), and may not repeat a (system, condition, task, metric)
        the data folder already holds (per-query or published): each is an :class:`InputError` naming
        ``name``, one line. The view answers exactly as a store over the data folder with the same rows
        ingested as one more file would.
        """
        import duckdb
        import pyarrow as pa

        if isinstance(query_metrics, pd.DataFrame):
            query_metrics = pa.Table.from_pandas(query_metrics, preserve_index=False)
        problem = catalogue.schema_problem(query_metrics.schema, schema.QUERY_METRICS, {})
        if problem is not None:
            raise InputError(f"{name}: expected per-query rows (query_metrics): {problem}")
        target = pa.schema([(column, _ARROW_TYPES[sql_type]) for column, sql_type in schema.QUERY_METRICS.items()])
        try:
            rows = query_metrics.select(list(schema.QUERY_METRICS)).cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise InputError(f"{name}: expected per-query rows (query_metrics): {exc}") from None
        scratch = duckdb.connect(":memory:")
        try:
            scratch.from_arrow(rows).create(queries.OVERLAY_TABLE)
            sums, problem, row_warnings = catalogue.check_sums(derived.sums_of_rows(scratch, queries.OVERLAY_TABLE))
        finally:
            scratch.close()
        if problem is not None or row_warnings:
            raise InputError(f"{name}: {problem or row_warnings[0]}")
        self._refuse_repeats(sums, name)
        view = object.__new__(Store)
        view.data_dir = self.data_dir
        view._catalogue = self._catalogue
        view._lock = threading.Lock()
        view._overlay = (rows, sums, name)
        with self._lock:
            loaded, db = self._loaded, self._db
        view._loaded = loaded
        view._manifest, view._counts = self._manifest, self._counts
        view._db = db.with_overlay(rows, sums)
        view.skipped, view.warnings = list(loaded.skipped), list(loaded.warnings)
        return view

    def _refuse_repeats(self, sums, name: str) -> None:
        """InputError when a group of ``sums`` (an overlay's) is a (system, condition, task, metric) the loaded
        data already holds (the overlay would be counted with it, or hide a published score)."""
        key = ", ".join(CONDITION_KEY)
        keys = sums.select(list(CONDITION_KEY)).to_pandas()
        held = self._database().frame(
            f"SELECT {key} FROM task_results WHERE list_contains(?::VARCHAR[], system)",
            [sorted(keys["system"].unique().tolist())],
        )
        held = held.assign(instruction=held["instruction"].astype("boolean"))
        keys = keys.assign(instruction=keys["instruction"].astype("boolean"))
        repeated = keys.merge(held, on=list(CONDITION_KEY))
        if len(repeated):
            first = repeated.iloc[0]
            raise InputError(
                f"{name}: {len(repeated)} (system, condition, task, metric) group(s) are already in "
                f"{self.data_dir}, e.g. system {first['system']!r}, task {first['task']!r}, metric "
                f"{first['metric']!r}, precision {first['precision']!r}: give the candidate another system name")

    # -- catalogue questions ------------------------------------------------------------------------------
    def facets(self) -> dict:
        """What exists, for building controls.

        Keys: ``benchmarks`` (list[str]); ``by_benchmark`` {benchmark: {metrics, settings, instructions
        (list[bool]), precisions, tie_policies, tasks (lists, sorted)}}; ``families`` (list[str]);
        ``size_range`` ((min, max) n_parameters or None); ``conditions`` (DataFrame: benchmark, setting,
        instruction, precision, tie_policy, metric, n_systems, n_tasks, has_query_data).
        """
        return queries.facets(self._database())

    def coverage(self) -> pd.DataFrame:
        """Per (benchmark, setting, metric, instruction, precision, tie_policy, system): ``n_tasks`` with a value
        and ``n_query_tasks`` of them from per-query rows. Finer than ``facets()["conditions"]``: it tells
        whether the *same* system has results under two conditions (with and without instruction, MCR and
        full), which a view comparing them needs."""
        return queries.coverage(self._database())

    def precision_kinds(self) -> pd.DataFrame:
        """(benchmark, setting, system, precision, precision_kind) for per-query files with the optional
        ``precision_kind`` column (inference: the model ran at that precision; storage: its output was stored
        at it; native: the system's own output). Empty when no file has the column."""
        return queries.precision_kinds(self._database())

    def systems(
        self,
        search: str | None = None,
        families: Iterable[str] | None = None,
        min_parameters: float | None = None,
        max_parameters: float | None = None,
        open_weights: bool | None = None,
        uses_instructions: bool | None = None,
        benchmark: str | None = None,
    ) -> pd.DataFrame:
        """Systems matching the filters (None = no filter; a size bound excludes unknown sizes).

        Columns: system, display_name, family, n_parameters, license, open_weights, uses_instructions,
        release_date, reference, source, revision, has_query_data. Includes systems that only appear in results
        (metadata NULL). ``search`` is a case-insensitive substring of system or display_name.
        """
        return queries.systems(self._database(), search, families, min_parameters, max_parameters, open_weights,
                               uses_instructions, benchmark)

    def runs(self) -> pd.DataFrame:
        """Raw run files under ``<data_dir>/runs/`` with their qrels (:func:`evalcore.store.catalogue.runs`)."""
        return catalogue.runs(self.data_dir)

    # -- results ------------------------------------------------------------------------------------------
    def task_table(self, cond: Condition, systems: Iterable[str] | None = None) -> pd.DataFrame:
        """One row per system × task under ``cond``.

        Columns: system, task, instruction, value, expected, min, max, n_queries, tied_share, source,
        has_query_data.
        """
        return queries.task_table(self._database(), cond, queries.as_list(systems))

    def leaderboard(
        self,
        cond: Condition,
        systems: Iterable[str] | None = None,
        tasks: Iterable[str] | None = None,
        aggregate: str | None = None,
        level: float = 0.95,
        ranks: str = "marginal",
        common_tasks: bool = False,
        uncertainty: bool = True,
    ) -> Leaderboard:
        """Systems ranked by ``aggregate`` (competition 'min' ranks) over ``tasks`` (None = the tasks the
        benchmark declares for ``cond.setting`` in the data's manifest (:mod:`evalcore.store.manifest`), else
        those present): ``G`` or ``mean``; None = the benchmark's own (:func:`evalcore.aggregate.official_aggregate`:
        G for RAR-b, mean for R2MED). Systems missing a task go to ``incomplete``; with ``common_tasks`` the
        board ranks every shown system on the tasks all of them have instead (:class:`CommonTasks` names them).

        With ``uncertainty`` every ranked row gets, through both lenses of :mod:`evalcore.uncertainty` ("on these
        tasks", "on new tasks like these"), its interval at ``level``, its rank set of kind ``ranks``
        ("marginal" or "simultaneous"), its tier and whether it could be #1, and the board its adjacent pairs'
        tests (:func:`statistics.lenses`). ``policy_swaps`` lists the pairs whose order by ``cond.tie_policy``
        differs from their order by expected values."""
        if not 0.0 < level < 1.0:
            raise ValueError("level must lie strictly between 0 and 1")
        db = self._database()
        ranked_by = aggregate or _aggregate.official_aggregate(cond.benchmark)
        names = queries.as_list(systems)
        table = queries.task_table(db, cond, names)
        present = sorted(table["task"].dropna().unique().tolist())
        declared = self._manifest.declared(cond.benchmark, cond.setting)
        if tasks is not None:
            board_tasks = queries.as_list(tasks)
        else:
            board_tasks = declared if declared is not None else present
        common = None
        task_list = board_tasks
        if common_tasks:
            usable = table[table["task"].isin(board_tasks) & table["value"].notna()]
            shown = usable["system"].nunique()
            per_task = usable.groupby("task")["system"].nunique()
            task_list = [t for t in board_tasks if shown and per_task.get(t, 0) == shown]
            common = CommonTasks(tasks=task_list, dropped=[t for t in board_tasks if t not in task_list],
                                 n_systems=int(shown))
        table = table[table["task"].isin(task_list)]
        ranked, incomplete = _aggregate.leaderboard_frames(table, task_list, ranked_by)
        if cond.instruction is None and len(incomplete):
            incomplete["reason"] = self._other_state_reasons(db, cond, table, incomplete, task_list)
        has_data = table.groupby("system")["has_query_data"].all()
        ranked.insert(
            ranked.columns.get_loc("zero_task") + 1, "has_query_data",
            ranked["system"].map(has_data).fillna(False).astype(bool),
        )
        labels = _aggregate.task_column_labels(task_list)
        summaries = {}
        if uncertainty:
            instruction_of = table.groupby("system")["instruction"].first()
            upper = 1.0 if metric_bounded_by_one(cond.metric) else float("inf")
            columns, summaries = statistics.lenses(db, cond, ranked, table, task_list, labels, ranked_by,
                                                   instruction_of, level, ranks, self._counts, upper)
            insert_at = ranked.columns.get_loc("has_query_data") + 1
            for offset, (name, values) in enumerate(columns.items()):
                ranked.insert(insert_at + offset, name, values)
        swaps = _aggregate.order_swaps(ranked["system"].to_numpy(dtype=object), ranked[ranked_by].to_numpy(),
                                       ranked[f"{ranked_by}_expected"].to_numpy())
        return Leaderboard(
            ranked=ranked,
            incomplete=incomplete,
            tasks=labels,
            zero_task_systems=ranked.loc[ranked["zero_task"], "system"].tolist(),
            ranked_by=ranked_by,
            task_names=list(task_list),
            policy_swaps=swaps,
            tie_policy=cond.tie_policy,
            level=float(level),
            ranks=ranks,
            lenses=summaries,
            declared_tasks=declared,
            tasks_without_results=[t for t in board_tasks if t not in present],
            common_tasks=common,
            notes=self._board_notes(declared),
        )

    def _board_notes(self, declared: list[str] | None) -> list[str]:
        """What a board must say of the data it stands on: files that could not be read, a task manifest that
        could not be used (a board whose tasks no manifest declares says so by ``declared_tasks`` None)."""
        notes = []
        unreadable = [item for item in self.skipped if item.path not in (self._manifest.path, self._counts.path)]
        if unreadable:
            first = unreadable[0]
            notes.append(f"{len(unreadable)} file(s) under the data folder could not be used, so a task or "
                         f"system may be missing here; first: {first.path}: {first.reason}")
        if self._manifest.problem:
            notes.append(f"{self._manifest.path}: {self._manifest.problem}; the tasks present in the data are "
                         "the board's tasks")
        if self._counts.problem:
            notes.append(f"{self._counts.path}: {self._counts.problem}; the queries lens cannot bound published "
                         "rows")
        return notes

    @staticmethod
    def _other_state_reasons(db: queries.Database, cond: Condition, table: pd.DataFrame, incomplete: pd.DataFrame,
                             tasks: list[str]) -> list[str]:
        """``incomplete``'s reasons, each followed by the missing tasks the system has under another instruction
        state ('any' takes one state per system: with, else without, else unknown)."""
        found = queries.states_of_tasks(db, cond, incomplete["system"].tolist(), tasks)
        state_of = table.groupby("system")["instruction"].first()
        labels = {True: "with instruction", False: "without instruction", None: "with unknown instruction use"}
        # each system's (task, state) in the rows' order, in one pass (a pandas filter per system cost ~1 ms
        # each: ~0.05 s of the default board's 58 systems not ranked)
        states_by_system: dict[str, list[tuple[str, bool | None]]] = {}
        for system, task, state in zip(found["system"], found["task"], found["instruction"]):
            states_by_system.setdefault(system, []).append((task, None if pd.isna(state) else bool(state)))
        reasons = []
        for system, missing, reason in zip(incomplete["system"], incomplete["missing_tasks"], incomplete["reason"]):
            missing = set(missing)
            chosen = queries.state(state_of, system)
            elsewhere: dict[str, list[str]] = {}
            for task, state in states_by_system.get(system, ()):
                if task in missing and state != chosen:
                    elsewhere.setdefault(labels[state], []).append(task)
            notes = [f"{len(names)} of them only {label} ({', '.join(sorted(names)[:3])}"
                     f"{' …' if len(names) > 3 else ''})" for label, names in elsewhere.items()]
            reasons.append(reason + ("; " + "; ".join(notes) + " — 'any' uses one instruction state per system"
                                     if notes else ""))
        return reasons

    def tie_summary(
        self, cond: Condition, systems: Iterable[str] | None = None, task: str | None = None
    ) -> pd.DataFrame:
        """Per system × precision (``cond.precision`` is ignored), from per-query data only.

        Columns: system, precision, oblivious, expected, min, max, range, bias, tied_share, n_tasks,
        n_queries. Values are means over tasks of task means (``task`` restricts to one task);
        tied_share = share of queries with ``tied_at_cutoff``.
        """
        return queries.tie_summary(self._database(), cond, queries.as_list(systems), task)

    def rank_flips(
        self,
        cond_a: Condition,
        cond_b: Condition,
        systems: Iterable[str] | None = None,
        tasks: Iterable[str] | None = None,
    ) -> RankFlips:
        """Ranks under two conditions by the benchmark's own aggregate (:func:`evalcore.aggregate.official_aggregate`
        of ``cond_a.benchmark``: G for RAR-b, the mean for R2MED and CRUMB, as the Leaderboard ranks) over the
        same tasks for both, flipped pairs, Kendall τ-b, pairs whose tie ranges overlap. The answer's columns
        carry the aggregate's name (``G_a`` or ``mean_a``, :attr:`RankFlips.aggregate`)."""
        db = self._database()
        aggregate = _aggregate.official_aggregate(cond_a.benchmark)
        table_a = queries.task_table(db, cond_a, queries.as_list(systems))
        table_b = queries.task_table(db, cond_b, queries.as_list(systems))
        if tasks is None:
            task_list = sorted(set(table_a["task"]) & set(table_b["task"]))
        else:
            task_list = queries.as_list(tasks)
        ranked_a, _ = _aggregate.leaderboard_frames(table_a[table_a["task"].isin(task_list)], task_list, aggregate)
        ranked_b, _ = _aggregate.leaderboard_frames(table_b[table_b["task"].isin(task_list)], task_list, aggregate)
        score, low, high = aggregate, f"{aggregate}_min", f"{aggregate}_max"
        both = ranked_a[["system", score, low, high]].merge(
            ranked_b[["system", score, low, high]], on="system", suffixes=("_a", "_b")
        ).sort_values("system").reset_index(drop=True)
        a, b = both[f"{score}_a"].to_numpy(), both[f"{score}_b"].to_numpy()
        both["rank_a"] = _aggregate.competition_ranks(a).astype(np.int64)
        both["rank_b"] = _aggregate.competition_ranks(b).astype(np.int64)
        both["rank_change"] = both["rank_b"] - both["rank_a"]
        ranks = both[["system", f"{score}_a", f"{score}_b", f"{low}_a", f"{high}_a", f"{low}_b", f"{high}_b",
                      "rank_a", "rank_b", "rank_change"]].sort_values(["rank_a", "system"]).reset_index(drop=True)
        names = both["system"].to_numpy(dtype=object)
        flips = _aggregate.flipped_pairs(names, a, b).rename(  # its columns say G whatever the scores are
            columns={f"G_{side}_{n}": f"{score}_{side}_{n}" for side in "ab" for n in (1, 2)})
        overlap_frames = []
        position = pd.Index(names)
        first = position.get_indexer(flips["system_1"].to_numpy(dtype=object))
        second = position.get_indexer(flips["system_2"].to_numpy(dtype=object))
        intervals_overlap = np.zeros(len(flips), dtype=bool)
        for label in ("a", "b"):
            lo, hi = both[f"{low}_{label}"].to_numpy(), both[f"{high}_{label}"].to_numpy()
            pairs = _aggregate.overlapping_pairs(names, lo, hi)
            pairs.insert(0, "condition", label)
            overlap_frames.append(pairs)
            intervals_overlap |= (lo[first] <= hi[second]) & (lo[second] <= hi[first])
        flips["intervals_overlap"] = intervals_overlap
        return RankFlips(
            ranks=ranks,
            flipped_pairs=flips,
            kendall_tau_b=_aggregate.kendall_tau_b(a, b),
            overlapping_pairs=pd.concat(overlap_frames, ignore_index=True),
            tasks=task_list,
            aggregate=aggregate,
        )

    def instruction_gap(self, cond: Condition, systems: Iterable[str] | None = None) -> Gap:
        """With − without instruction per system × task and in the benchmark's own aggregate (G for RAR-b, the
        mean for R2MED and CRUMB; ``cond.instruction`` ignored).
        a = without, b = with."""
        db, names = self._database(), queries.as_list(systems)
        without = queries.task_table(db, replace(cond, instruction=False), names)
        with_instruction = queries.task_table(db, replace(cond, instruction=True), names)
        aggregate = _aggregate.official_aggregate(cond.benchmark)
        per_task, per_system = _aggregate.condition_gap(without, with_instruction, aggregate)
        return Gap(per_task, per_system, "without instruction", "with instruction", aggregate)

    def mcr_vs_full(
        self, cond: Condition, systems: Iterable[str] | None = None, mcr_metric: str | None = None,
        full_setting: str = "full",
    ) -> Gap:
        """Full vs MCR per system × task and in the benchmark's own aggregate (``cond.setting`` ignored). a = ``full_setting``
        ('full' = the official corpus, 'full-pooled' = every candidate answer of the task pooled) with
        ``cond.metric``, b = mcr (``mcr_metric``, default ``cond.metric``)."""
        db, names = self._database(), queries.as_list(systems)
        full = queries.task_table(db, replace(cond, setting=full_setting), names)
        mcr = queries.task_table(db, replace(cond, setting="mcr", metric=mcr_metric or cond.metric), names)
        aggregate = _aggregate.official_aggregate(cond.benchmark)
        per_task, per_system = _aggregate.condition_gap(full, mcr, aggregate)
        return Gap(per_task, per_system, f"{full_setting} ({cond.metric})", f"mcr ({mcr_metric or cond.metric})",
                   aggregate)

    def chance(self, cond: Condition, tasks: Iterable[str] | None = None) -> pd.DataFrame:
        """Multiple-choice chance per task (``cond.setting`` should be ``mcr``): the accuracy (p@1) of a
        uniform pick among each question's candidates, the mean of 1 / n_candidates over the task's questions
        — the constant scorer's expected p@1 — with ``n_queries``. Columns: task, chance, n_queries; empty
        without per-query rows."""
        return queries.mcr_chance(self._database(), cond, queries.as_list(tasks))

    def compare(self, systems: Iterable[str], cond: Condition) -> pd.DataFrame:
        """Per-task values of a few systems: the :meth:`task_table` columns for those systems."""
        return self.task_table(cond, queries.as_list(systems))

    def _instruction_states(self, db: queries.Database, cond: Condition, names: list[str]) -> pd.Series | None:
        """Each system's resolved instruction state under ``cond`` when it says 'any', else None."""
        if cond.instruction is not None:
            return None
        return queries.task_table(db, cond, names).groupby("system")["instruction"].first()

    def query_diff(self, systems: Iterable[str], cond: Condition, task: str) -> pd.DataFrame:
        """Per-query values of a few systems on one task (long format).

        Columns: qid, system, oblivious, expected, min, max, n_candidates, tied_at_cutoff, spread
        (max − min of oblivious across the systems for that qid), differs (spread > 0).
        Only qids present for every requested system that has per-query data.
        """
        db, names = self._database(), queries.as_list(systems)
        rows = queries.per_query(
            db, cond, names, [task], self._instruction_states(db, cond, names),
            columns='qid, system, oblivious, expected, "min", "max", n_candidates, tied_at_cutoff',
        )
        if rows.empty:
            return rows.assign(spread=pd.Series(dtype=float), differs=pd.Series(dtype=bool))
        n_systems = rows["system"].nunique()
        per_qid = rows.groupby("qid")["system"].transform("nunique")
        rows = rows[per_qid == n_systems].copy()
        grouped = rows.groupby("qid")["oblivious"]
        rows["spread"] = grouped.transform("max") - grouped.transform("min")
        rows["differs"] = rows["spread"] > 0
        return rows.sort_values(["qid", "system"]).reset_index(drop=True)

    def paired_test(
        self,
        system_a: str,
        system_b: str,
        cond: Condition,
        task: str | None = None,
        n_resamples: int = 10000,
        seed: int = 0,
        value: str = "oblivious",
    ) -> PairedTest:
        """Paired randomization (sign-flip) test on per-query ``value``s ('oblivious' or the tie-aware
        'expected'); raises ValueError when the two systems share no per-query data under ``cond``."""
        db = self._database()
        return statistics.paired_test(db, system_a, system_b, cond, task,
                                      self._instruction_states(db, cond, [system_a, system_b]), n_resamples, seed,
                                      value)


def _adjacent_frame(ranked: pd.DataFrame, adjacent) -> pd.DataFrame | None:
    """The adjacent pairs' tests as a table of system names (None when not computed)."""
    if adjacent is None:
        return None
    names = ranked["system"].to_numpy(dtype=object)
    return pd.DataFrame({"system_1": names[adjacent.first], "system_2": names[adjacent.second],
                         "p_value": adjacent.p_value, "adjusted": adjacent.adjusted,
                         "differ": adjacent.differ.astype(bool), "kind": adjacent.kind.astype(object)})
