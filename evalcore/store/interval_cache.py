"""The store's one run-time cache: Leaderboard bootstrap intervals, and the task-level intervals, rank ranges,
tiers and tests of a board (:func:`read_arrays` / :func:`write_arrays` in ``ranges/``, keyed by its task scores
themselves), kept across processes in a folder the deployment names (``$TIEBREAK_CACHE``; unset: nowhere).

**Key, in one sentence**: the question (condition, systems with their instruction states, tasks, resamples,
seed), the sha256 of every per-query file it reads, and the version of the computation (:data:`VERSION`, with
the numpy and DuckDB versions). Same key, same rows, same code: the same interval, bit for bit.

Why it exists (bench/RESULTS.md § Store): a restarted dashboard draws its first Leaderboard with 1,000
resamples in ~0.02 s of CPU from here against ~0.45 s computing it (reading the condition's per-query rows,
drawing the resample counts, the bootstrap), and the first visitor waits for that. A question reading a file
whose sha256 the load did not compute (a file without derived sums) is never cached, nor is an overlay's.

Entries are small JSON files written atomically; a missing, damaged or foreign entry only costs the
computation; an unwritable folder is ignored. The folder keeps its :data:`KEEP` newest entries.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import numpy as np

log = logging.getLogger("evalcore.store")

CACHE_ENV = "TIEBREAK_CACHE"
VERSION = 1
"""Bump whenever a change alters the intervals the same rows give (the bootstrap, the resample counts, the
percentiles, the matrix's column order). ``tests/test_store_intervals.py`` pins the intervals of one fixed
question and fails on any such change until this version and the pinned values are updated together."""
FOLDER = "intervals"
KEEP = 5000
_pruned: set[Path] = set()


def folder(environ: dict | None = None) -> Path | None:
    """``$TIEBREAK_CACHE/intervals``, or None when the deployment names no cache folder."""
    root = (os.environ if environ is None else environ).get(CACHE_ENV)
    return Path(root).expanduser() / FOLDER if root and root != "off" else None


def key(question: dict, file_sha256: list[str]) -> str:
    import duckdb

    return json.dumps({"version": VERSION, "numpy": np.__version__, "duckdb": duckdb.__version__,
                       "question": question, "files": sorted(file_sha256)}, sort_keys=True)


RANGES_FOLDER = "ranges"
"""Beside :data:`FOLDER`: the task-level answers of :func:`read_arrays` / :func:`write_arrays`."""


def _entry(text: str, sub: str = FOLDER) -> Path | None:
    place = folder()
    if place is None:
        return None
    return place.parent / sub / (hashlib.sha256(text.encode()).hexdigest() + ".json")


def read(text: str, n_systems: int) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
    """The intervals stored under this very key ({"G": (lo, hi), "mean": (lo, hi)}), or None."""
    entry = _entry(text)
    if entry is None:
        return None
    try:
        stored = json.loads(entry.read_text(encoding="utf-8"))
        if stored.get("key") != text:
            return None
        found = {name: (np.asarray(stored[name][0], dtype=np.float64), np.asarray(stored[name][1], dtype=np.float64))
                 for name in ("G", "mean")}
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    if any(part.shape != (n_systems,) for pair in found.values() for part in pair):
        return None
    return found


def write(text: str, intervals: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    """Store ``intervals`` under the key ``text`` (atomically; failures are ignored: a cache only saves time)."""
    _put(_entry(text), lambda: json.dumps({"key": text, **{name: [lo.tolist(), hi.tolist()]
                                                            for name, (lo, hi) in intervals.items()}}))


def _put(entry: Path | None, payload) -> None:
    """Write ``payload()`` to ``entry`` atomically (nothing without a cache folder; a failure is only logged),
    then prune the entry's folder once per process."""
    if entry is None:
        return
    from evalcore.errors import OutputError
    from evalcore.formats import atomic_path

    try:
        with atomic_path(entry, "interval cache entry") as temporary:
            temporary.write_text(payload(), encoding="utf-8")
    except (OutputError, OSError) as exc:
        log.debug("interval cache entry %s not written: %s", entry, exc)
        return
    if entry.parent not in _pruned:
        _pruned.add(entry.parent)
        _prune(entry.parent)


def _prune(place: Path) -> None:
    """Keep the :data:`KEEP` newest entries (and sweep temporaries killed writers left)."""
    from evalcore.outputs import sweep_temporaries

    sweep_temporaries(place)
    try:
        entries = sorted(((item.stat().st_mtime_ns, item.path) for item in os.scandir(place)
                          if item.name.endswith(".json")), reverse=True)
    except OSError:
        return
    for _, path in entries[KEEP:]:
        try:
            os.unlink(path)
        except OSError:
            continue


def read_arrays(text: str) -> dict[str, list] | None:
    """The arrays stored under this very key by :func:`write_arrays` (name → nested lists), or None."""
    entry = _entry(text, RANGES_FOLDER)
    if entry is None:
        return None
    try:
        stored = json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict) or stored.get("key") != text or not isinstance(stored.get("arrays"), dict):
        return None
    return stored["arrays"]


def write_arrays(text: str, arrays: dict[str, np.ndarray]) -> None:
    """Store named arrays (numbers, booleans or strings) under the key ``text``, as :func:`write` does, in
    ``$TIEBREAK_CACHE/ranges/``."""
    _put(_entry(text, RANGES_FOLDER), lambda: json.dumps(
        {"key": text, "arrays": {name: np.asarray(value).tolist() for name, value in arrays.items()}}))
