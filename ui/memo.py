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


_list_lru("a metric's boundedness", "evalcore/store/catalogue.py",
          "the metric name (whether its values lie in [0, 1]); at most 256", "evalcore.store.catalogue", "_bounded")
_list_lru("the bootstrap-t's resamples of T tasks", "evalcore/uncertainty/intervals.py",
          "the number of tasks (every distinct resample up to 10 tasks, else 20,000 seeded draws; read-only); the "
          "last 4", "evalcore.uncertainty.intervals", "resamples")
listed("a per-query file's sums", "evalcore/store/derived.py", "disk",
       "derived data, in the repository for the shipped data/: the source file's sha256 and size and the format "
       "version (query-sums/1), in the footer of "
       "<folder>/_derived/<name>.sums.parquet (written by evalcore derive and ingest): any other bytes, or another "
       "format, and the store computes the sums in memory and logs why")

__all__ = ["ELSEWHERE", "Lru", "Memo", "REGISTRY", "SCOPES", "answers", "clear_all", "derived", "listed", "register", "resource"]
