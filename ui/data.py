"""The dashboard's only door to data: one cached :class:`evalcore.store.Store` per data dir, cached queries.

Pages call :func:`query` with a store method name and its arguments; results are cached with
``st.cache_data`` keyed by (data dir, data fingerprint, method, arguments), so dropping a new parquet file
into the data dir shows up on the next interaction, and identical views across sessions share one result.
"""
from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
import threading
import time
from pathlib import Path

import streamlit as st

from evalcore.store import Store
from ui import prefetch as prefetcher

LOG = logging.getLogger("tiebreak.app")
APP_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = APP_ROOT / "data"
ENV_VAR = "TIEBREAK_DATA"

# Store methods the pages may call through :func:`query` (anything else is refused).
QUERY_METHODS = frozenset({
    "facets", "systems", "task_table", "leaderboard", "tie_summary", "rank_flips", "instruction_gap",
    "mcr_vs_full", "compare", "query_diff", "paired_test", "runs",
})
_STALE_CHECK_SECONDS = 2.0
_reload_lock = threading.Lock()


def data_dir_from(argv: list[str] | None = None, environ: dict | None = None) -> Path:
    """``--data DIR`` after ``streamlit run app.py --``, else ``$TIEBREAK_DATA``, else the shipped ``data/``."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--data", default=None)
    args, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    environ = os.environ if environ is None else environ
    chosen = args.data or environ.get(ENV_VAR) or DEFAULT_DATA_DIR
    return Path(chosen).expanduser().resolve()


@st.cache_resource(show_spinner=False)
def _store_for(data_dir: str) -> Store:
    return Store(data_dir)


class _Checked:
    """When each store was last checked for new files, and the data fingerprint seen then (per process)."""

    at: dict[str, float] = {}
    fingerprint: dict[str, str] = {}


def store(data_dir: Path) -> Store:
    """The shared store for ``data_dir``; rescans the folder when files were added, removed or changed."""
    key = str(data_dir)
    shared = _store_for(key)
    now = time.monotonic()
    if now - _Checked.at.get(key, 0.0) >= _STALE_CHECK_SECONDS:
        _Checked.at[key] = now
        with _reload_lock:
            if shared.is_stale():
                LOG.info("data under %s changed; reloading", key)
                shared.reload()
            # the version the tables were built from (a file changing after the reload is caught next time)
            _Checked.fingerprint[key] = shared.loaded_fingerprint
    # One DuckDB cursor per browser session (renewed when the data reloads, so no session pins an old
    # connection). Store methods open their own cursor per call, which keeps the cached queries thread-safe.
    version = (key, _Checked.fingerprint.get(key))
    if st.session_state.get("_cursor_version") != version:
        st.session_state["_cursor"] = shared.cursor()
        st.session_state["_cursor_version"] = version
    return shared


@st.cache_data(show_spinner=False, max_entries=512, ttl=3600)
def _cached_query(data_dir: str, fingerprint: str, method: str, args: tuple, kwargs: tuple):
    return getattr(_store_for(data_dir), method)(*args, **dict(kwargs))


def _freeze(value):
    if isinstance(value, (list, set, frozenset)):
        return tuple(value)
    return value


def _cache_key(data_dir: Path, shared: Store, method: str, args: tuple, kwargs: dict) -> tuple:
    """The arguments of :func:`_cached_query` for ``Store.<method>(*args, **kwargs)``."""
    if method not in QUERY_METHODS:
        raise ValueError(f"not a store query: {method}")
    fingerprint = _Checked.fingerprint.get(str(data_dir)) or shared.loaded_fingerprint
    return (str(data_dir), fingerprint, method, tuple(_freeze(a) for a in args),
            tuple(sorted((k, _freeze(v)) for k, v in kwargs.items())))


def query(data_dir: Path, method: str, *args, **kwargs):
    """``Store.<method>(*args, **kwargs)``, cached per data version. Lists become tuples for hashing."""
    shared = store(data_dir)
    return _cached_query(*_cache_key(data_dir, shared, method, args, kwargs))


def prefetch(data_dir: Path, method: str, calls: list[tuple[tuple, dict]]) -> int:
    """Schedule ``Store.<method>(*args, **kwargs)`` for each (args, kwargs) in ``calls`` (most likely
    first) to run into the :func:`query` cache while the server is idle (``ui/prefetch.py``); returns how
    many were queued. Call after :func:`query` in the same run (the store is then loaded and checked)."""
    if not prefetcher.enabled():
        return 0
    shared = _store_for(str(data_dir))
    jobs = []
    for args, kwargs in calls:
        key = _cache_key(data_dir, shared, method, args, kwargs)
        jobs.append((key, functools.partial(_cached_query, *key)))
    return prefetcher.PREFETCHER.schedule(jobs)


@st.cache_data(show_spinner="Re-scoring the run…", max_entries=64, ttl=3600)
def _cached_what_if(run_path: str, qrels_path: str, file_keys: tuple, to: str, scoring: str, metric: str,
                    tie_policy: str):
    from evalcore.precision import what_if as rescore

    return rescore(run_path, qrels_path, to=to, scoring=scoring, metrics=(metric,), tie_policy=tie_policy)


def what_if(run_path: str, qrels_path: str, to: str, scoring: str, metric: str, tie_policy: str):
    """``evalcore.precision.what_if`` on a shipped run (paths come from ``Store.runs()``), cached per file version."""
    keys = tuple((p, os.stat(p).st_size, os.stat(p).st_mtime_ns) for p in (run_path, qrels_path))
    return _cached_what_if(run_path, qrels_path, keys, to, scoring, metric, tie_policy)


__all__ = ["data_dir_from", "prefetch", "query", "store", "what_if", "DEFAULT_DATA_DIR", "ENV_VAR"]
