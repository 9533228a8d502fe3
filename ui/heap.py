"""Give the memory a server process freed back to the system.

Measured under load (docs/performance.md § Memory): what a dashboard process grows by is not what it keeps —
its caches hold a few MB of answers — but memory glibc's allocator keeps after the objects in it were freed: a
computation's numpy temporaries (tens of MB, on a script thread's own malloc arena) and the many small objects
of a rerun leave free space inside the heaps, which glibc hands back to the system only from the very top of a
heap. After 4 minutes of 30 users each process's heap held ~330 MB in use and ~330–440 MB free, and the free part
stayed after the users left.

Two remedies, both for a server only:

- the production profile (``deploy/production.env``) fixes glibc's thresholds — ``MALLOC_ARENA_MAX`` (fewer
  heaps for the script threads) and ``MALLOC_MMAP_THRESHOLD_`` (a block this large or larger gets its own
  mapping, returned when freed; a fixed value also stops glibc from raising the threshold after each large free);
- :func:`start` (the lifespan, ``ui/warm_start.py``) runs a thread that every :data:`TRIM_SECONDS`
  (``TIEBREAK_TRIM_SECONDS``; ``0`` = never) makes Streamlit forget the sessions of tabs closed longer than
  ``server.disconnectedSessionTTL`` ago (it keeps them until something asks: after 50 users left, 11–13 whole
  sessions per process stayed), and calls ``malloc_trim(0)``, which returns every whole free page inside every
  heap (``madvise``). One call walks the heaps' free lists: ~1–5 ms for a few hundred MB, holding each heap's
  lock meanwhile.

Elsewhere than glibc (macOS, musl) there is no ``malloc_trim``: :func:`trim` returns None and nothing runs.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import os
import threading

from ui import internals, memo

LOG = logging.getLogger("tiebreak.app")
TRIM_SECONDS = 0 if os.environ.get("TIEBREAK_TRIM_SECONDS", "").strip() == "0" else memo.setting("TIEBREAK_TRIM_SECONDS", 30)
"""Seconds between two ``malloc_trim(0)`` calls (``TIEBREAK_TRIM_SECONDS``, default 30)."""
_started = threading.Event()


def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        function = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = [ctypes.c_size_t], ctypes.c_int
    return function


_TRIM = _malloc_trim()


def trim() -> bool | None:
    """Return the allocator's free pages to the system now: True if some were, False if none, None where the
    C library has no ``malloc_trim``."""
    if _TRIM is None:
        return None
    return bool(_TRIM(0))


def tidy() -> int:
    """One pass: forget the sessions of tabs closed longer than ``server.disconnectedSessionTTL`` ago (Streamlit
    keeps them until asked, :func:`ui.internals.drop_expired_sessions`), collect their cycles when some went,
    then :func:`trim`; returns how many sessions went."""
    dropped = internals.drop_expired_sessions() or 0
    if dropped:
        gc.collect()  # a session's objects hold cycles; the collector's own full passes may come much later
    trim()
    return dropped


def _loop(seconds: float, stop: threading.Event) -> None:
    while not stop.wait(seconds):
        try:
            tidy()
        except Exception:  # never let the server's helper thread die on a C call's surprise
            LOG.exception("malloc_trim failed; memory is no longer given back")
            return


def start(seconds: float | None = None, stop: threading.Event | None = None) -> threading.Thread | None:
    """Start the trimming thread once per process (None: already started, disabled, or no ``malloc_trim``)."""
    seconds = TRIM_SECONDS if seconds is None else seconds
    if not seconds or _TRIM is None or _started.is_set():
        return None
    _started.set()
    thread = threading.Thread(target=_loop, args=(seconds, stop or threading.Event()), name="tiebreak-trim",
                              daemon=True)
    thread.start()
    return thread


__all__ = ["TRIM_SECONDS", "start", "tidy", "trim"]
