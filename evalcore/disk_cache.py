"""What a new process should not recompute, kept on disk outside every data dir.

The folder is ``$TIEBREAK_CACHE``, else ``$XDG_CACHE_HOME/tiebreak`` or ``~/.cache/tiebreak``;
``TIEBREAK_CACHE=off`` disables it. Entries are written atomically (temp file + rename) and checked when
read; a missing, damaged or unwritable entry only costs the computation it would have saved.

Three kinds live here (:data:`KINDS`): the store's per-file ``query_metrics`` sums (``sums``,
``evalcore.store``); the bootstrap's resample counts (``draws``, :func:`resample_counts`), which depend only
on the tasks' query counts, the number of resamples and the seed, and took 0.15–0.45 s to draw for 25 tasks
× 500 queries × 1,000 resamples, on the critical path of the dashboard's first Leaderboard; and the
Leaderboard's bootstrap intervals of G (``intervals``, ``Store.leaderboard``), keyed by the version of
every file in the data dir and of the code that computes them. ``TIEBREAK_CACHE_SKIP=intervals`` (a comma
list of kinds) turns single kinds off. Each kind's folder is bounded: the first write of a process keeps its
:data:`KEEP` newest entries and sweeps temporary files a killed process left behind (:func:`prune`).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np

from evalcore import aggregate

log = logging.getLogger(__name__)
CACHE_ENV = "TIEBREAK_CACHE"
SKIP_ENV = "TIEBREAK_CACHE_SKIP"
KINDS = ("sums", "draws", "intervals")
KEEP = {"sums": 4000, "draws": 16, "intervals": 5000}
"""Entries kept per kind (newest first; see :func:`prune`): ~40 kB of sums per per-query file version,
12.5 MB of resample counts per 25 tasks × 500 queries × 1,000 resamples, ~5 kB per cached interval."""
_DRAWS_FOLDER = "resample-counts-1"  # bump when the file layout below changes


def cache_root() -> Path | None:
    """The cache folder (not created here), or None when ``TIEBREAK_CACHE=off``."""
    setting = os.environ.get(CACHE_ENV)
    if setting == "off":
        return None
    if setting:
        return Path(setting)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tiebreak"


def kind_root(kind: str) -> Path | None:
    """:func:`cache_root`, or None when that kind is listed in ``$TIEBREAK_CACHE_SKIP``."""
    if kind not in KINDS:
        raise ValueError(f"unknown cache kind {kind!r}; expected one of {KINDS}")
    skipped = {part.strip() for part in os.environ.get(SKIP_ENV, "").split(",")}
    return None if kind in skipped else cache_root()


def entry_path(kind: str, folder: str, key: str, suffix: str) -> Path | None:
    """Where the entry for ``key`` (any string) lives: ``<root>/<folder>/<blake2b of key><suffix>``."""
    root = kind_root(kind)
    if root is None:
        return None
    return root / folder / (hashlib.blake2b(key.encode(), digest_size=16).hexdigest() + suffix)


def read_json(entry: Path | None, key: str) -> dict | None:
    """The JSON object stored at ``entry`` by :func:`write_json` under this very ``key``, else None (missing,
    damaged, or another key's file)."""
    if entry is None:
        return None
    try:
        stored = json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict) or stored.get("key") != key or not isinstance(stored.get("value"), dict):
        return None
    return stored["value"]


def write_json(entry: Path | None, key: str, value: dict, keep: int | None = None) -> bool:
    """Store ``value`` (JSON-able; floats round-trip exactly, NaN included) with its full ``key``, atomically
    (``keep``: as in :func:`write_atomic`)."""
    if entry is None:
        return False
    text = json.dumps({"key": key, "value": value})

    def write(path: str) -> None:
        Path(path).write_text(text, encoding="utf-8")

    return write_atomic(entry, write, keep=keep)


def write_atomic(target: Path, write: Callable[[str], None], keep: int | None = None) -> bool:
    """``write(temporary_path)`` then rename it to ``target``; False (logged) when anything fails. With
    ``keep``, the folder is pruned to its ``keep`` newest entries of that suffix (:func:`prune`), once per
    process and folder."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".", suffix=".tmp")
        os.close(handle)
        try:
            write(temporary)
            os.replace(temporary, target)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
    except Exception as exc:  # read-only home, full disk: the cache is an optimisation only
        log.debug("cache entry %s not written: %s", target, exc)
        return False
    if keep is not None and target.parent not in _PRUNED:
        _PRUNED.add(target.parent)
        prune(target.parent, keep, target.suffix)
    return True


_PRUNED: set[Path] = set()
STALE_TEMPORARY_SECONDS = 3600.0


def _is_stale_temporary(item: os.DirEntry, now: float) -> bool:
    """A hidden ``.….tmp`` file (what :func:`write_atomic` and the parquet writers stage) untouched for longer
    than :data:`STALE_TEMPORARY_SECONDS`: the leftover of a killed process, not a write in progress."""
    return (item.name.startswith(".") and item.name.endswith(".tmp") and item.is_file(follow_symlinks=False)
            and now - item.stat(follow_symlinks=False).st_mtime > STALE_TEMPORARY_SECONDS)


def sweep_temporaries(folder: Path) -> int:
    """Delete the stale temporary files (:func:`_is_stale_temporary`) directly in ``folder``; returns how many.
    Errors are ignored: another process may be sweeping too."""
    import time

    removed = 0
    try:
        with os.scandir(folder) as listing:
            for item in listing:
                try:
                    if _is_stale_temporary(item, time.time()):
                        os.unlink(item.path)
                        removed += 1
                except OSError:
                    continue
    except OSError:
        pass
    return removed


def prune(folder: Path, keep: int, suffix: str) -> int:
    """Delete all but the ``keep`` most recently written ``*suffix`` entries of ``folder``, and its stale
    temporary files (:func:`sweep_temporaries`); returns how many files went. Errors (a file another process
    just removed) are ignored: pruning only bounds the folder."""
    removed = sweep_temporaries(folder)
    entries: list[tuple[int, str]] = []
    try:
        with os.scandir(folder) as listing:
            for item in listing:
                try:
                    if item.name.endswith(suffix) and not item.name.startswith(".") and item.is_file():
                        entries.append((item.stat().st_mtime_ns, item.path))
                except OSError:
                    continue
    except OSError:
        return removed
    entries.sort(reverse=True)
    for _, path in entries[keep:]:
        try:
            os.unlink(path)
            removed += 1
        except OSError:
            continue
    return removed


def _draws_entry(n_queries: tuple[int, ...], n_resamples: int, seed: int) -> Path | None:
    # the numpy version is part of the key: Generator streams are only promised within a version
    key = repr((aggregate.DRAWS_VERSION, n_queries, n_resamples, seed, np.__version__))
    return entry_path("draws", _DRAWS_FOLDER, key, ".npy")


def _split(flat: np.ndarray, n_queries: tuple[int, ...], n_resamples: int) -> tuple[np.ndarray, ...] | None:
    """The per-task (resamples × queries) blocks of one stored array, or None when it does not hold draws of
    this shape (every row of a task sums to its query count)."""
    if flat.ndim != 1 or flat.size != n_resamples * sum(n_queries):
        return None
    blocks, start = [], 0
    for n in n_queries:
        block = flat[start:start + n_resamples * n].reshape(n_resamples, n)
        start += n_resamples * n
        if n and not np.array_equal(block.sum(axis=1, dtype=np.int64), np.full(n_resamples, n)):
            return None
        blocks.append(block)
    return tuple(blocks)


@lru_cache(maxsize=2)
def resample_counts(n_queries: tuple[int, ...], n_resamples: int, seed: int) -> tuple[np.ndarray, ...]:
    """:func:`evalcore.aggregate.shared_resample_counts`, read from disk when an earlier process drew them
    (same values: the file holds exactly what the generator gave), else drawn and stored. Read-only arrays;
    the last 2 shapes stay in memory."""
    entry = _draws_entry(n_queries, n_resamples, seed)
    if entry is not None and entry.is_file():
        try:
            stored = _split(np.load(entry, mmap_mode="r", allow_pickle=False), n_queries, n_resamples)
            if stored is not None:
                return stored
        except Exception:  # damaged or foreign: draw again and overwrite it
            pass
    drawn = aggregate.shared_resample_counts(n_queries, n_resamples, seed)
    if entry is not None and len({block.dtype for block in drawn}) <= 1:
        flat = np.concatenate([block.ravel() for block in drawn]) if drawn else np.empty(0, np.uint8)

        def write(path: str) -> None:
            with open(path, "wb") as handle:
                np.save(handle, flat, allow_pickle=False)

        write_atomic(entry, write, keep=KEEP["draws"])
    return drawn


__all__ = ["CACHE_ENV", "KEEP", "KINDS", "SKIP_ENV", "cache_root", "entry_path", "kind_root", "prune", "read_json",
           "resample_counts", "sweep_temporaries", "write_atomic", "write_json"]
