"""Everything the dashboard keeps between calls, declared in one place: each memo is made here (or, when it is
data on disk or inside an evalcore object, listed here) with a name, where it lives, its scope and its key, so
:func:`clear_all` misses none and docs/ARCHITECTURE.md's table "What is kept, and under which key" lists exactly
:data:`REGISTRY` (tests/ui/test_memo.py checks both).

Scopes: ``process`` (one per server process, shared by every browser session), ``session`` (one browser
session's ``st.session_state``), ``disk`` (files keyed by the sha256 of what they were computed from: they
survive a restart by design and are not cleared here; a changed source file simply misses).

The mechanisms, one per kind of thing kept:

- :func:`answers` — ``st.cache_data`` (answers copied out on every hit: a page may change what it gets);
- :func:`resource` — ``st.cache_resource`` (one shared object, e.g. a data folder's store);
- :func:`derived` — an LRU memo in this process for values derived from a snapshot's cached answers that a rerun
  asks for many times (returned as they are: callers never change them);
- :class:`Lru` — an LRU store a module fills itself (the drawn figures);
- :func:`listed` — a memo kept by other code (a session's state, a middleware's files, an evalcore cache), with
  how to clear and count it.
"""
from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import streamlit as st

SCOPES = ("process", "session", "disk")


@dataclass
class Memo:
    """One registered memo. ``clear`` forgets everything it keeps (None: on disk, never cleared here);
    ``size`` counts what it keeps now (entries, or computations since the last clear where the storage cannot
    be counted)."""

    name: str
    where: str
    scope: str
    key: str
    clear: Callable[[], None] | None
    size: Callable[[], int] | None


REGISTRY: dict[str, Memo] = {}
_LOCK = threading.Lock()


def register(memo: Memo) -> Memo:
    if memo.scope not in SCOPES:
        raise ValueError(f"{memo.name}: scope {memo.scope!r} is not one of {SCOPES}")
    if (memo.clear is None) != (memo.scope == "disk"):
        raise ValueError(f"{memo.name}: only a memo on disk goes without a clear")
    with _LOCK:
        if memo.name in REGISTRY and REGISTRY[memo.name].where != memo.where:
            raise ValueError(f"two memos named {memo.name!r}: {REGISTRY[memo.name].where} and {memo.where}")
        REGISTRY[memo.name] = memo
    return memo


def listed(name: str, where: str, scope: str, key: str, clear: Callable[[], None] | None = None,
           size: Callable[[], int] | None = None) -> Memo:
    """Register a memo kept by other code (see the module docstring)."""
    return register(Memo(name, where, scope, key, clear, size))


def clear_all() -> None:
    """Forget everything every registered memo keeps (except what is on disk)."""
    for memo in list(REGISTRY.values()):
        if memo.clear is not None:
            memo.clear()


# -------------------------------------------------------------------------------------------- st.cache_*
@dataclass
class _Group:
    """The functions cached under one registered name, with the count of computations since the last clear
    (``st.cache_data`` does not say how many entries it holds)."""

    functions: list = field(default_factory=list)
    computed: int = 0

    def clear(self) -> None:
        for function in self.functions:
            function.clear()
        self.computed = 0


def _cached(name: str, where: str, key: str, make: Callable[[Callable], Callable]) -> Callable[[Callable], Callable]:
    group = _Group()
    register(Memo(name, where, "process", key, group.clear, lambda: group.computed))

    def decorate(compute: Callable) -> Callable:
        @functools.wraps(compute)
        def counted(*args, **kwargs):
            group.computed += 1
            return compute(*args, **kwargs)

        cached = make(counted)
        group.functions.append(cached)
        return cached

    return decorate


def answers(name: str, where: str, key: str, **options) -> Callable[[Callable], Callable]:
    """A decorator: ``st.cache_data(show_spinner=False, **options)`` registered as ``name`` (every function it
    decorates is one more part of that memo)."""
    return _cached(name, where, key, st.cache_data(show_spinner=False, **options))


def resource(name: str, where: str, key: str, **options) -> Callable[[Callable], Callable]:
    """A decorator: ``st.cache_resource(show_spinner=False, **options)`` registered as ``name``."""
    return _cached(name, where, key, st.cache_resource(show_spinner=False, **options))


# -------------------------------------------------------------------------------------------- in this process
def derived(name: str, where: str, key: str, maxsize: int) -> Callable[[Callable], Callable]:
    """A decorator: ``functools.lru_cache(maxsize)`` registered as ``name`` (hashable arguments; the value is
    shared, never to be changed by a caller)."""

    def decorate(compute: Callable) -> Callable:
        cached = functools.lru_cache(maxsize=maxsize)(compute)
        register(Memo(name, where, "process", key, cached.cache_clear, lambda: cached.cache_info().currsize))
        return cached

    return decorate


class Lru:
    """A thread-safe store of at most ``maxsize`` values, the least recently used dropped first, registered as
    ``name``."""

    def __init__(self, name: str, where: str, key: str, maxsize: int) -> None:
        self.maxsize = maxsize
        self._values: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        register(Memo(name, where, "process", key, self.clear, self.__len__))

    def get(self, key: Hashable):
        with self._lock:
            value = self._values.get(key)
            if value is not None:
                self._values.move_to_end(key)
            return value

    def put(self, key: Hashable, value) -> None:
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self.maxsize:
                self._values.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def __len__(self) -> int:
        return len(self._values)


# -------------------------------------------------------------------------------------------- kept outside ui/
def _lru(module: str, name: str) -> Callable[[], Callable]:
    """A ``functools.lru_cache`` function of another module, looked up when used (its module may be imported
    after this one, or be a page's)."""
    import importlib

    return lambda: getattr(importlib.import_module(module), name)


ELSEWHERE: dict[str, tuple[str, str]] = {}
"""The memos kept by a ``functools.lru_cache`` outside this module: name -> (module, function)."""


def _list_lru(name: str, where: str, key: str, module: str, function: str) -> None:
    found = _lru(module, function)
    ELSEWHERE[name] = (module, function)
    listed(name, where, "process", key, clear=lambda: found().cache_clear(),
           size=lambda: found().cache_info().currsize)


_list_lru("the tasks lens's resamples", "evalcore/uncertainty/intervals.py",
          "the number of tasks (every distinct resample of up to 10 tasks, else 20,000 seeded draws); the last 4",
          "evalcore.uncertainty.intervals", "resamples")
_list_lru("a metric's boundedness", "evalcore/store/catalogue.py",
          "the metric name (whether its values lie in [0, 1]); at most 256", "evalcore.store.catalogue", "_bounded")
listed("a per-query file's sums", "evalcore/store/derived.py", "disk",
       "derived data, in the repository for the shipped data/: the source file's sha256 and size and the format "
       "version (query-sums/1), in the footer of "
       "<folder>/_derived/<name>.sums.parquet (written by evalcore derive and ingest): any other bytes, or another "
       "format, and the store computes the sums in memory and logs why")

# -------------------------------------------------------------------------------------------- bounds
def setting(name: str, default: int) -> int:
    """A whole number from the environment variable ``name`` (``_`` allowed as a digit separator), else
    ``default`` (also for anything that is not a positive whole number)."""
    text = os.environ.get(name, "").strip().replace("_", "")
    return int(text) if text.isascii() and text.isdigit() and int(text) > 0 else default


_UNITS = {"": 1, "b": 1, "kb": 1 << 10, "kib": 1 << 10, "mb": 1 << 20, "mib": 1 << 20, "gb": 1 << 30,
          "gib": 1 << 30}


def byte_size(text) -> int | None:
    """A size as Streamlit's options write it ("128mb", "1.5GiB", units of 1024; a bare number is bytes) in
    bytes; None for unset, 0 or anything else."""
    import re

    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text or ""))
    if not found or found.group(2).lower() not in _UNITS:
        return None
    return int(float(found.group(1)) * _UNITS[found.group(2).lower()]) or None


def _streamlit_bytes(option: str) -> int | None:
    """A Streamlit byte-size option in force ("256mb" → bytes), None when unset or unreadable."""
    try:
        return byte_size(st.get_option(option))
    except Exception:  # another Streamlit without the option: the bound is then not known here
        return None


@dataclass(frozen=True)
class Bound:
    """What one kind of thing a server process keeps may cost it at most, and the variable that changes it.

    ``megabytes()`` is the bound in force now (for a per-session bound: per session); ``how`` says what enforces
    it and where the size per entry comes from; ``memos``: the registered memos it covers."""

    name: str
    setting: str
    default: str
    scope: str  # "process" or "session" (per connected browser session)
    how: str
    megabytes: Callable[[], float]
    memos: tuple[str, ...] = ()


FIGURE_MB = 0.1
"""A drawn figure's memory, upper estimate: the largest figure drawn under 50 users on the shipped data was
0.013 MB of JSON (64 figures: 0.35–0.4 MB), held as plotly objects (a few times that)."""
SESSION_MB = 1.0
"""One connected session's own memory, upper estimate: 0.5–0.6 MB measured at 50 and 100 users
(bench/RESULTS.md § Capacity)."""
UPLOAD_MB_PER_MILLION_ROWS = 60.0
"""A visitor's evaluated run, per million rows of the run: its per-query rows (Arrow), the overlay store and the
answers over it (upper estimate)."""
RESAMPLES_MB = 8.2
"""One table of the tasks lens's resamples, at most up to 50 tasks: 92,378 distinct resamples × 10 tasks at 10
tasks (7.4 MB of counts, 0.7 MB of probabilities), 20,000 draws × (tasks + 1) float64 above (8.2 MB at 50)."""
SMALL_MEMOS_MB = 8.0
"""The memos bounded by count with small values: labels, pointers, the --data flag, scans, needed rows,
boundedness (upper estimate at their counts)."""


def FIGURES() -> int:  # noqa: N802 - read like the constant it is per process
    """How many drawn figures a process keeps (``TIEBREAK_FIGURES``, default 64)."""
    return setting("TIEBREAK_FIGURES", 64)


def STATIC_CACHE_BYTES() -> int:  # noqa: N802
    """How many bytes of Streamlit's static files a process keeps (``TIEBREAK_STATIC_CACHE_MB``, default 48)."""
    return setting("TIEBREAK_STATIC_CACHE_MB", 48) << 20


def _cache_data_mb() -> float:
    found = _streamlit_bytes("server.maxCacheDataSize")
    return found / (1 << 20) if found else float("inf")


def _duckdb_mb() -> float:
    from evalcore.store import catalogue

    return catalogue.duckdb_memory_limit_bytes() / (1 << 20)


def _kept_sessions_mb() -> float:
    return KEPT_SESSIONS * SESSION_MB


KEPT_SESSIONS = 128
"""Sessions Streamlit keeps after their tab closed, at most (``MemorySessionStorage``'s size), each for
``server.disconnectedSessionTTL`` seconds."""


BOUNDS: list[Bound] = [
    Bound("the answers of every question", "STREAMLIT_SERVER_MAX_CACHE_DATA_SIZE", "128mb", "process",
          "Streamlit's byte budget over every st.cache_data memo of the process (server.maxCacheDataSize in "
          ".streamlit/config.toml; pickled bytes, least recently used dropped first), besides 512 answers per "
          "question for an hour", _cache_data_mb,
          ("each answer", "an answer read from other files", "the Evaluate page's inputs zip")),
    Bound("the drawn figures", "TIEBREAK_FIGURES", "64", "process",
          "ui/charts.py keeps the last TIEBREAK_FIGURES figures, each at most FIGURE_MB",
          lambda: FIGURES() * FIGURE_MB, ("a drawn figure",)),
    Bound("DuckDB: the loaded tables and every query's memory", "TIEBREAK_DUCKDB_MEMORY_MB", "512", "process",
          "DuckDB's memory_limit (MB) on the store's connection (evalcore/store/catalogue.py); the shipped data's "
          "tables take ~18 MB of it", _duckdb_mb, ("the store of a data folder",)),
    Bound("the tasks lens's resample tables", "—", "4", "process",
          "the last 4 task counts' tables (evalcore/uncertainty/intervals.py), RESAMPLES_MB each at most",
          lambda: 4 * RESAMPLES_MB, ("the tasks lens's resamples",)),
    Bound("Streamlit's static files", "TIEBREAK_STATIC_CACHE_MB", "48", "process",
          "ui/static_assets.py stops keeping files past this many MB",
          lambda: STATIC_CACHE_BYTES() / (1 << 20), ("Streamlit's static files",)),
    Bound("the small memos", "—", "their counts", "process",
          "counts fixed in their decorators (1024 labels, 256 pointers, 64 needed rows, 8 argv, 256 metrics, one "
          "per data folder), SMALL_MEMOS_MB in all",
          lambda: SMALL_MEMOS_MB,
          ("a precision's label", "a Leaderboard's per-query pointer", "a view's needed rows", "the --data flag",
           "a data folder's last scan", "a metric's boundedness")),
    Bound("sessions kept after their tab closed", "STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL", "120", "process",
          "at most KEPT_SESSIONS for that many seconds (Streamlit's session storage; ui/heap.py makes it forget "
          "the expired ones), SESSION_MB each",
          _kept_sessions_mb),
    Bound("a connected session", "—", "—", "session",
          "widgets, URL state and Streamlit's per-session messages: SESSION_MB per connected tab", lambda: SESSION_MB),
    Bound("a visitor's evaluated run", "TIEBREAK_UPLOAD_ROWS", "3000000", "session",
          "at most TIEBREAK_UPLOAD_ROWS run rows per session, UPLOAD_MB_PER_MILLION_ROWS per million, only in "
          "the sessions that evaluated a run (ui/upload.py)",
          lambda: setting("TIEBREAK_UPLOAD_ROWS", 3_000_000) / 1e6 * UPLOAD_MB_PER_MILLION_ROWS,
          ("a visitor's uploaded run: its overlay and answers",)),
]
"""Every kind of thing a server process keeps, with its bound; docs/hosting.md § Memory lists them with the sum
(tests/ui/test_memory_bounds.py checks that every registered memo in memory is covered and the table)."""


def process_megabytes() -> float:
    """The bounds in force of everything a process keeps for all sessions (the "process" rows of :data:`BOUNDS`)."""
    return sum(bound.megabytes() for bound in BOUNDS if bound.scope == "process")


def session_megabytes(with_run: bool = False) -> float:
    """What one more connected session may add (``with_run``: one that evaluated a run of the largest size)."""
    return sum(bound.megabytes() for bound in BOUNDS if bound.scope == "session"
               and (with_run or not bound.setting.startswith("TIEBREAK_UPLOAD")))


__all__ = ["BOUNDS", "Bound", "ELSEWHERE", "Lru", "Memo", "REGISTRY", "SCOPES", "answers", "clear_all", "derived", "listed", "process_megabytes", "register",
           "resource", "session_megabytes", "setting"]
