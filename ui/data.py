"""The dashboard's data API: one function per question a page asks, each a typed call into
:class:`evalcore.store.Store`, cached.

A page first takes a :class:`Snapshot` of its data folder (:func:`snapshot`: the folder and the fingerprint of
its parquet files as the store loaded them), then asks questions of it::

    data = snapshot(data_dir)
    board = leaderboard(data, cond, systems=("e5-small", "bge-large"))

**What is kept.** Each question's answer is kept (:func:`ui.memo.answers`, ``st.cache_data``) under *the
snapshot and the question's arguments*: new, changed or removed files give a new fingerprint and thus fresh
answers; the same question from any browser session is answered once. (The store itself is opened once per
process and data folder, :func:`ui.memo.resource`, and rescanned when its files change.) Every memo of the
dashboard is declared in :mod:`ui.memo`; :func:`clear_answers` clears them all.
"""
from __future__ import annotations

import argparse
import functools
import inspect
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ParamSpec, TypeVar

import pandas as pd

from evalcore.provenance import Provenance, load as load_provenance
from evalcore.store import Condition, Gap, Leaderboard, LoadWarning, PairedTest, RankFlips, SkippedFile, Store, data_dir
from ui import gate, memo
from ui.upload_eval import SOURCE_WORDS

LOG = logging.getLogger("tiebreak.app")
APP_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = APP_ROOT / "data"
RESCAN_SECONDS = 2.0
"""How often (at most) a data folder is checked for added, removed or changed parquet files."""

Systems = Iterable[str] | None  # None = every system


def data_dir_from(argv: list[str] | None = None, environ: dict | None = None) -> Path:
    """``--data DIR`` after ``streamlit run app.py --``, else ``$TIEBREAK_DATA``, else the shipped ``data/``."""
    flag = _data_flag(tuple(sys.argv[1:] if argv is None else argv))
    return data_dir(flag, default=DEFAULT_DATA_DIR, environ=environ).resolve()


@memo.derived("the --data flag", "ui/data.py", "the process's argv (parsed once per distinct argv)", maxsize=8)
def _data_flag(argv: tuple[str, ...]) -> str | None:
    """The ``--data`` value of ``argv``, parsed once per distinct argv: every script run asks (twice), and a new
    ``ArgumentParser`` looks for gettext catalogues on disk each time (~3 ms of a ~45 ms rerun)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--data", default=None)
    return parser.parse_known_args(list(argv))[0].data


# -------------------------------------------------------------------------------------------- the store
@dataclass(frozen=True)
class Snapshot:
    """A data folder as the store loaded it: the folder and the fingerprint of its parquet files then."""

    data_dir: Path
    fingerprint: str
    overlay: str = ""
    """The digest of the browser session's own evaluated run (:class:`SessionRun`), '' for none: questions
    about a snapshot with an overlay are answered over :meth:`Store.with_overlay` and memoised in that session
    only (never in the shared answer cache)."""


@dataclass(frozen=True)
class SessionRun:
    """A browser session's own evaluated run (``ui/upload.py``) as the data API uses it. The frame
    (``ui/navigation.py``) hands one to :func:`begin_run` at the start of every script run; this module never
    looks for it. ``digest()``: the run's digest, '' for none; ``store(base, fingerprint, digest)``: the
    overlay view of the folder's store ``base``; ``remember(key, compute)``: ``compute()`` memoised in the
    session."""

    digest: Callable[[], str]
    store: Callable[[Store, str, str], Store]
    remember: Callable[[tuple, Callable[[], object]], object]


_script_run = threading.local()


def begin_run(session_run: SessionRun | None) -> None:
    """The frame calls this at the start of every script run of a browser session: the questions asked in this
    run (this thread) see ``session_run``'s overlay. A thread no frame began (the warm start) sees none."""
    _script_run.session = session_run


def _session_run() -> SessionRun | None:
    return getattr(_script_run, "session", None)


@memo.resource("the store of a data folder", "ui/data.py",
               "one per data folder path; it rescans the folder (at most every 2 s) and reloads when a parquet file "
               "was added, removed or changed; its catalogue keeps each per-query file's sums and check verdict "
               "under the file's path, size, mtime and inode, so a reload reads only the files that changed")
def _store(data_dir: str) -> Store:
    return Store(data_dir)


_last_scan: dict[str, tuple[float, str]] = {}  # data dir -> (when its files were last checked, fingerprint)
memo.listed("a data folder's last scan", "ui/data.py", "process",
            "the data folder path: when its files were last checked and their fingerprint then",
            clear=_last_scan.clear, size=lambda: len(_last_scan))
_rescan_lock = threading.Lock()


def snapshot(data_dir: Path) -> Snapshot:
    """The data folder's current :class:`Snapshot`; opens its store on first use and reloads it when files
    were added, removed or changed (checked at most every :data:`RESCAN_SECONDS`)."""
    key = str(data_dir)
    store = _store(key)
    now = time.monotonic()
    checked_at, fingerprint = _last_scan.get(key, (-RESCAN_SECONDS, ""))
    if now - checked_at >= RESCAN_SECONDS:
        with _rescan_lock:
            if store.is_stale():
                LOG.info("data under %s changed; reloading", key)
                store.reload()
            fingerprint = store.loaded_fingerprint  # a file changing after the reload is caught next time
            _last_scan[key] = (now, fingerprint)
    session_run = _session_run()
    return Snapshot(Path(key), fingerprint, session_run.digest() if session_run is not None else "")


def skipped_files(data: Snapshot) -> list[SkippedFile]:
    """Parquet files under the folder the store could not load, each with the reason."""
    return list(_store(str(data.data_dir)).skipped)


def load_warnings(data: Snapshot) -> list[LoadWarning]:
    """Rows of loaded files the store left out or changed at load, each with the file and why."""
    return list(_store(str(data.data_dir)).warnings)


# -------------------------------------------------------------------------------------------- questions
P = ParamSpec("P")
R = TypeVar("R")


def _hashable(value):
    if isinstance(value, (list, tuple)):
        return tuple(value)
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(value))
    return value


KEY_OF = {
    Snapshot: lambda snap: (str(snap.data_dir), snap.fingerprint, snap.overlay),
    Condition: lambda cond: (cond.benchmark, cond.metric, cond.setting, cond.instruction, cond.precision,
                             cond.tie_policy),
}
"""How the answer cache keys a snapshot and a condition: their fields as a tuple (every field, so two that
differ never share an answer). Streamlit's generic hashing of a dataclass walked it through ``__reduce__``,
~0.1 ms per argument on every question of every rerun."""


_ANSWERS = memo.answers(
    "each answer", "ui/data.py",
    "the data folder and the fingerprint of its files at the last load, plus the question's arguments by name "
    "(defaults filled in); at most 512 per question, for an hour", max_entries=512, ttl=3600, hash_funcs=KEY_OF)
_FILE_ANSWERS = memo.answers(
    "an answer read from other files", "ui/data.py",
    "the files' paths with their size and modification time, plus the question's other arguments: a task's "
    "texts and qrels (the task), the what-if's re-scored run (target precision, scoring, metric, tie policy)",
    max_entries=512, ttl=3600, hash_funcs=KEY_OF)


class DataChanged(RuntimeError):
    """The data folder was reloaded after the snapshot a question was asked about was taken: the answer would
    mix the new files into a page drawn from the old ones (or be kept under the old snapshot's key). The frame
    (``ui/navigation.py``) draws the whole page again from a new snapshot."""


def _current(arguments: dict) -> None:
    """Raise :class:`DataChanged` when a snapshot among ``arguments`` is not what its folder's store serves."""
    for value in arguments.values():
        if isinstance(value, Snapshot) and value.fingerprint \
                and _store(str(value.data_dir)).loaded_fingerprint != value.fingerprint:
            raise DataChanged(f"{value.data_dir} was reloaded since this page's snapshot")


def _of_its_snapshot(compute: Callable[P, R]) -> Callable[P, R]:
    """``compute``, answering only from the files of the snapshot it is asked about: checked before and after
    (a reload during the computation would have mixed files into it), :class:`DataChanged` otherwise (never
    cached)."""

    @functools.wraps(compute)
    def checked(**arguments):
        _current(arguments)
        answer = compute(**arguments)
        _current(arguments)
        return answer

    return checked


def _question(compute: Callable[P, R], kept=_ANSWERS) -> Callable[P, R]:
    """One question, its answers kept by ``kept`` (:func:`ui.memo.answers`). The cache key is every argument by
    name, in the signature's order, defaults filled in (lists and sets as tuples): however a page spells the
    call, the same question finds the same answer. An answer is computed only from its snapshot's files
    (:class:`DataChanged` otherwise)."""
    signature = inspect.signature(compute)
    compute = _of_its_snapshot(compute)
    cached = kept(compute)

    @functools.wraps(compute)
    def ask(*args: P.args, **kwargs: P.kwargs) -> R:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = {name: _hashable(value) for name, value in bound.arguments.items()}
        if any(isinstance(value, Snapshot) and value.overlay for value in arguments.values()):
            session_run = _session_run()  # a session's own run: its answers stay in that session
            if session_run is None:
                return compute(**arguments)
            return session_run.remember((compute.__qualname__, *arguments.items()), lambda: compute(**arguments))
        return cached(**arguments)

    ask.clear = cached.clear  # type: ignore[attr-defined]
    return ask


def folder_store(data: Snapshot) -> Store:
    """The data folder's own store (without the session's overlay): what an uploaded run is checked against."""
    return _store(str(data.data_dir))


def _store_of(data: Snapshot) -> Store:
    store = _store(str(data.data_dir))
    session_run = _session_run()
    if data.overlay and session_run is not None:
        return session_run.store(store, data.fingerprint, data.overlay)
    return store


@_question
def facets(data: Snapshot) -> dict:
    """What exists (benchmarks, conditions, tasks, families): :meth:`Store.facets`."""
    return _store_of(data).facets()


@_question
def systems(data: Snapshot, *, search: str | None = None, families: Systems = None,
            min_parameters: float | None = None, max_parameters: float | None = None,
            open_weights: bool | None = None, uses_instructions: bool | None = None,
            benchmark: str | None = None) -> pd.DataFrame:
    """Systems and their metadata, filtered: :meth:`Store.systems`."""
    return _store_of(data).systems(search=search, families=families, min_parameters=min_parameters,
                                   max_parameters=max_parameters, open_weights=open_weights,
                                   uses_instructions=uses_instructions, benchmark=benchmark)


@_question
def leaderboard(data: Snapshot, cond: Condition, *, systems: Systems = None, aggregate: str | None = None,
                level: float = 0.95, ranks: str = "marginal", common_tasks: bool = False,
                uncertainty: bool = True) -> Leaderboard:
    """Systems ranked by ``aggregate`` (None = the benchmark's own: G for RAR-b, the mean for R2MED) with
    intervals, rank ranges and tiers through both lenses (``level``, ``ranks``: marginal or simultaneous; none
    without ``uncertainty``); with ``common_tasks``, on the tasks all ``systems`` have: :meth:`Store.leaderboard`.
    With ``uncertainty`` it is computed under the process's gate (:mod:`ui.gate`: a bounded number at once,
    :class:`ui.gate.Busy` beyond); a kept answer never waits there."""
    store = _store_of(data)
    if not uncertainty:
        return store.leaderboard(cond, systems=systems, aggregate=aggregate, level=level, ranks=ranks,
                                 common_tasks=common_tasks, uncertainty=uncertainty)
    return gate.run(f"leaderboard {cond.benchmark}/{cond.setting}/{cond.metric} ({ranks}, {level})",
                    store.leaderboard, cond, systems=systems, aggregate=aggregate, level=level, ranks=ranks,
                    common_tasks=common_tasks, uncertainty=uncertainty)


@_question
def tie_summary(data: Snapshot, cond: Condition, *, systems: Systems = None, task: str | None = None) -> pd.DataFrame:
    """Tie statistics per system × precision: :meth:`Store.tie_summary`."""
    return _store_of(data).tie_summary(cond, systems=systems, task=task)


@_question
def rank_flips(data: Snapshot, cond_a: Condition, cond_b: Condition, *, systems: Systems = None,
               tasks: Systems = None) -> RankFlips:
    """Ranks under two conditions (by G over ``tasks``, default the tasks both share), flipped and
    overlapping pairs: :meth:`Store.rank_flips`."""
    return _store_of(data).rank_flips(cond_a, cond_b, systems=systems, tasks=tasks)


@_question
def chance(data: Snapshot, cond: Condition, *, tasks: Systems = None) -> pd.DataFrame:
    """Multiple-choice chance per task: :meth:`Store.chance`."""
    return _store_of(data).chance(cond, tasks=tasks)


@_question
def instruction_gap(data: Snapshot, cond: Condition, *, systems: Systems = None) -> Gap:
    """With − without instruction per system × task and in G: :meth:`Store.instruction_gap`."""
    return _store_of(data).instruction_gap(cond, systems=systems)


@_question
def mcr_vs_full(data: Snapshot, cond: Condition, *, systems: Systems = None, mcr_metric: str | None = None,
                full_setting: str = "full") -> Gap:
    """Full retrieval vs multiple choice per system × task and in G: :meth:`Store.mcr_vs_full`."""
    return _store_of(data).mcr_vs_full(cond, systems=systems, mcr_metric=mcr_metric, full_setting=full_setting)


@_question
def per_task(data: Snapshot, systems: Iterable[str], cond: Condition) -> pd.DataFrame:
    """A few systems' value on every task: :meth:`Store.compare`."""
    return _store_of(data).compare(systems, cond)


@_question
def query_diff(data: Snapshot, systems: Iterable[str], cond: Condition, task: str,
               value: str = "oblivious") -> pd.DataFrame:
    """A few systems' per-query values on one task (:meth:`Store.query_diff`), with ``spread`` (max − min across
    the systems) and ``differs`` (spread > 0) of ``value``: 'oblivious' (the store's) or the tie-aware
    'expected'."""
    rows = _store_of(data).query_diff(systems, cond, task)
    if value != "oblivious" and len(rows):
        grouped = rows.groupby("qid")[value]
        rows = rows.assign(spread=grouped.transform("max") - grouped.transform("min"))
        rows = rows.assign(differs=rows["spread"] > 0)
    return rows


@_question
def paired_test(data: Snapshot, system_a: str, system_b: str, cond: Condition, *,
                task: str | None = None, value: str = "oblivious") -> PairedTest | None:
    """Paired randomization test of two systems on their per-query ``value``s, 'oblivious' or the tie-aware
    'expected' (:meth:`Store.paired_test`); None when they share no per-query data."""
    try:
        return _store_of(data).paired_test(system_a, system_b, cond, task=task, value=value)
    except ValueError:
        return None


@_question
def coverage(data: Snapshot) -> pd.DataFrame:
    """Tasks per system × condition, and how many from per-query rows: :meth:`Store.coverage`."""
    return _store_of(data).coverage()


@_question
def provenance(data: Snapshot) -> Provenance:
    """Where the folder's numbers come from (``provenance.json``: source, repository, commit, write date):
    :func:`evalcore.provenance.load`; empty when the folder has no provenance file. An uploaded run's rows
    are named as the visitor's upload (``ui.upload_eval.SOURCE_WORDS``)."""
    from dataclasses import replace

    return replace(load_provenance(data.data_dir), names=SOURCE_WORDS)


@_question
def precision_kinds(data: Snapshot) -> pd.DataFrame:
    """What each (benchmark, setting, system, precision) means — inference / storage / native:
    :meth:`Store.precision_kinds` (empty when no file says)."""
    return _store_of(data).precision_kinds()


@_question
def task_table(data: Snapshot, cond: Condition, *, systems: Systems = None) -> pd.DataFrame:
    """One row per system × task under ``cond`` (a field set to None is not filtered on):
    :meth:`Store.task_table`."""
    return _store_of(data).task_table(cond, systems)


@_question
def sources(data: Snapshot, cond: Condition, *, systems: Systems = None) -> tuple[str, ...]:
    """The distinct ``source`` values of the rows under ``cond`` (a field set to None is not filtered on): what
    a view's "Sources:" caption names. A small answer: a view need not copy the whole task table out of the
    cache for it on every rerun."""
    table = _store_of(data).task_table(cond, systems)
    if "source" not in table:
        return ()
    return tuple(sorted({str(value) for value in table["source"].dropna().tolist()}))


@dataclass(frozen=True)
class TaskTexts:
    """The texts behind one task's per-query rows (``<data>/tasks/<benchmark>/``, scripts/make_task_texts.py):
    queries (qid, text, instruction, and ``flat_text``: the text on one line, whitespace runs as one space —
    what tables and option labels cut to a snippet), documents (docid, text: the pooled candidates), candidates
    (qid, docid, pool_docid: each query's MCR candidates in order), qrels (setting, qid, docid, relevance)."""

    queries: pd.DataFrame
    documents: pd.DataFrame
    candidates: pd.DataFrame
    qrels: pd.DataFrame


TASK_TEXT_TABLES = ("queries", "documents", "candidates", "qrels")


@functools.partial(_question, kept=_FILE_ANSWERS)
def _task_texts(folder: str, versions: tuple, task: str) -> TaskTexts | None:
    import pyarrow.dataset as ds

    tables = {}
    for name in TASK_TEXT_TABLES:
        table = ds.dataset(Path(folder) / f"{name}.parquet").to_table(filter=ds.field("task") == task)
        tables[name] = table.drop_columns([c for c in ("benchmark", "task") if c in table.column_names]).to_pandas()
    queries = tables["queries"]
    queries["flat_text"] = [" ".join(str(text).split()) if isinstance(text, str) else "" for text in queries["text"]]
    return TaskTexts(**tables) if len(queries) else None


def task_texts(data: Snapshot, benchmark: str, task: str) -> TaskTexts | None:
    """The texts and qrels of one task, or None when the data folder ships none for it (a folder without
    ``tasks/<benchmark>/``, an unreadable file, a task it does not hold); cached under the files' versions."""
    from evalcore.store.catalogue import TASKS_DIR

    folder = Path(data.data_dir) / TASKS_DIR / benchmark
    try:
        versions = tuple((name, os.stat(folder / f"{name}.parquet").st_size,
                          os.stat(folder / f"{name}.parquet").st_mtime_ns) for name in TASK_TEXT_TABLES)
        return _task_texts(str(folder), versions, task)
    except Exception as exc:  # missing or unreadable: the view shows ids only, and says why
        LOG.info("no task texts for %s/%s under %s: %s", benchmark, task, folder, exc)
        return None


@_question
def runs(data: Snapshot) -> pd.DataFrame:
    """The raw runs under ``runs/`` with their qrels, for the what-if: :meth:`Store.runs`."""
    return _store_of(data).runs()


@functools.partial(_question, kept=_FILE_ANSWERS)
def _rescored(run_path: str, qrels_path: str, versions: tuple, to: str, scoring: str, metric: str,
              tie_policy: str) -> pd.DataFrame:
    from evalcore.precision import what_if as rescore

    return rescore(run_path, qrels_path, to=to, scoring=scoring, metrics=(metric,), tie_policy=tie_policy)


def what_if(run_path: str, qrels_path: str, *, to: str, scoring: str, metric: str, tie_policy: str) -> pd.DataFrame:
    """A shipped FP32 run re-scored at ``to`` with and without HPS, tie-aware (:func:`evalcore.precision.what_if`);
    cached under the version (size, mtime) of the run and qrels files."""
    versions = tuple((p, os.stat(p).st_size, os.stat(p).st_mtime_ns) for p in (run_path, qrels_path))
    return _rescored(run_path, qrels_path, versions, to, scoring, metric, tie_policy)


@dataclass(frozen=True)
class ExplainExample:
    """The worked example of "Compare with a reported number": the shipped raw runs (``runs/``) against the
    same system's shipped numbers at another precision (bf16) and at its own (fp32), one verdict per row
    (:func:`evalcore.explain.verdict_frame`)."""

    verdicts: pd.DataFrame
    system: str
    runs: tuple[str, ...]
    metric: str


@_question
def explain_example(data: Snapshot, metric: str = "ndcg@10") -> ExplainExample | None:
    """Each shipped raw run (every tie policy, and rounded to bf16 / fp16 with and without HPS) against its
    system's shipped ``metric`` under docid-desc at bf16 and at the run's own precision; None when the folder
    has no raw run whose system has those rows."""
    from evalcore import explain

    store = _store_of(data)
    frames, names, system = [], [], ""
    for run in store.runs().itertuples(index=False):
        reported = []
        for precision in ("bf16", run.precision):
            cond = Condition(run.benchmark, metric, run.setting, bool(run.instruction), precision, "docid-desc")
            rows = store.task_table(cond, [run.system])
            rows = rows[rows["task"] == run.task].assign(tie_policy="docid-desc")
            reported += explain.reported_from_system(rows, f"{run.system} {precision}", metric)
        if len(reported) < 2:
            continue
        frames.append(explain.verdict_frame(explain.explain_run(run.path, run.qrels_path, [metric], reported,
                                                                task=run.task, precision=True)))
        names.append(Path(run.path).name)
        system = run.system
    if not frames:
        return None
    return ExplainExample(pd.concat(frames, ignore_index=True), system, tuple(names), metric)


def explain_rows(rows, reported_text: str, metric: str, system_numbers: tuple = ()) -> pd.DataFrame:
    """Verdicts for a browser session's evaluated run (per-query rows of the ``query_metrics`` contract):
    ``reported_text`` holds one ``[TASK/][METRIC=]VALUE`` a line or comma (``metric`` where none is named),
    ``system_numbers`` reported numbers taken from a system (:func:`system_numbers`). Not kept: it is the
    session's own run, and a grouping of its rows is fast. InputError (one line) for a bad number."""
    from dataclasses import replace

    from evalcore import explain

    frame = rows.to_pandas() if hasattr(rows, "to_pandas") and not isinstance(rows, pd.DataFrame) else rows
    tasks = set(frame["task"].astype(str))
    system_numbers = tuple(number for number in system_numbers if number.task in tasks)  # the run's tasks only
    specs = [part.strip() for line in str(reported_text).splitlines() for part in line.split(",") if part.strip()]
    reported = [explain.reported_spec(spec) for spec in specs]
    reported = [number if number.metric else replace(number, metric=metric) for number in reported]
    return explain.verdict_frame(explain.explain_rows(frame, [*reported, *system_numbers]))


@_question
def system_numbers(data: Snapshot, system: str, cond: Condition) -> tuple:
    """``system``'s task-level numbers under ``cond`` for every named tie policy its rows carry (``cond``'s
    tie policy is ignored), as :class:`evalcore.explain.Reported`."""
    from evalcore import explain

    store = _store_of(data)
    frames = []
    for policy in explain.NAMED_POLICIES:
        policy_cond = Condition(cond.benchmark, cond.metric, cond.setting, cond.instruction, cond.precision, policy)
        frames.append(store.task_table(policy_cond, [system]).assign(tie_policy=policy))
    return tuple(explain.reported_from_system(pd.concat(frames, ignore_index=True), system, cond.metric))


@memo.answers("the Evaluate page's inputs zip", "ui/data.py",
              "the data folder, the version (size, mtime) of each shipped task file, the benchmark and setting; "
              "the last 8", max_entries=8)
def inputs_zip(data_dir: str, versions: tuple, benchmark: str, setting: str) -> bytes:
    """The ``evalcore tasks export`` files as a zip, built once per version of the shipped task files."""
    from evalcore.candidate import export_zip

    return export_zip(data_dir, benchmark, setting)


def clear_answers() -> None:
    """Forget everything the dashboard keeps in memory: every memo in :data:`ui.memo.REGISTRY` (tests)."""
    memo.clear_all()
