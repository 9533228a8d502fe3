"""Idle-time prefetch: compute the store queries a visitor is likely to ask for next while nobody waits.

The first visit of a condition costs the server its store query; on the 10M-row bench dir the Leaderboard's
1,000-resample bootstrap reads 1.25M per-query rows (~0.3 s of CPU, twice that while the browser redraws
on the other core), so switching precision took ~0.9 s the first time and ~0.35 s after (bench/bench_app.py).
A visitor reads a page for seconds before touching a control, and the server is idle meanwhile: a view
schedules the queries of its neighbouring conditions (:meth:`IdlePrefetcher.schedule`), and one worker
thread runs them through the same ``st.cache_data`` function the pages call, one at a time, only while the
server is quiet: no script run and no HTTP request in progress, and none ended in the last
:data:`IDLE_SECONDS`. HTTP requests count because a browser drawing a page fetches the scripts of its
elements from this process; a prefetch holding the GIL then delays them (measured: a first paint 2 s late).
A visitor who asks for a condition while its prefetch is running waits for that computation (Streamlit's
per-key compute lock) instead of starting a second one.

The warm start's run schedules the default view's neighbours like any other run; they start once the server
is quiet, i.e. after the first browser, if one is connecting, has loaded and drawn the page.
``TIEBREAK_PREFETCH=off`` disables prefetching.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager

LOG = logging.getLogger("tiebreak.app")
IDLE_SECONDS = 0.4
"""Quiet time after the last script run or HTTP request before a prefetch starts."""
ENV_VAR = "TIEBREAK_PREFETCH"
_REMEMBERED = 1024  # finished keys kept to skip re-scheduling them (the query cache holds 512 results)

Job = tuple[Hashable, Callable[[], object]]


class IdlePrefetcher:
    """A queue of (key, job) that one daemon thread drains while the server is quiet.

    :meth:`schedule` replaces the pending jobs (the latest view knows best what comes next); keys already
    run are not run again until :meth:`forget` (a cache that was cleared).
    """

    def __init__(self, idle_seconds: float = IDLE_SECONDS):
        self.idle_seconds = idle_seconds
        self._cond = threading.Condition()
        self._pending: list[Job] = []
        self._done: OrderedDict[Hashable, None] = OrderedDict()
        self._busy = 0  # script runs and HTTP requests in progress
        self._quiet_since = time.monotonic()
        self._running: Hashable | None = None
        self._thread: threading.Thread | None = None
        self.failures = 0

    # -- server activity -----------------------------------------------------------------------------
    def activity_started(self) -> None:
        """A script run or an HTTP request began (no prefetch starts until it ends)."""
        with self._cond:
            self._busy += 1

    def activity_finished(self) -> None:
        with self._cond:
            self._busy = max(0, self._busy - 1)
            self._quiet_since = time.monotonic()
            self._cond.notify_all()

    @contextmanager
    def busy(self) -> Iterator[None]:
        self.activity_started()
        try:
            yield
        finally:
            self.activity_finished()

    # -- jobs ----------------------------------------------------------------------------------------
    def schedule(self, jobs: Iterable[Job]) -> int:
        """Replace the pending jobs with ``jobs`` (in order, first = most likely next); returns how many
        are queued. Jobs whose key already ran, or is running, are skipped."""
        with self._cond:
            seen: set[Hashable] = set()
            pending = []
            for key, job in jobs:
                if key in self._done or key == self._running or key in seen:
                    continue
                seen.add(key)
                pending.append((key, job))
            self._pending = pending
            if pending and self._thread is None:
                self._thread = threading.Thread(target=self._work, name="tiebreak-prefetch", daemon=True)
                self._thread.start()
            self._cond.notify_all()
            return len(pending)

    def forget(self) -> None:
        """Drop the pending jobs and the record of finished ones."""
        with self._cond:
            self._pending = []
            self._done.clear()

    def pending(self) -> list[Hashable]:
        with self._cond:
            return [key for key, _ in self._pending]

    def wait_until_idle(self, timeout: float) -> bool:
        """Block until nothing is pending or running (tests and benchmarks); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._running is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
            return True

    # -- the worker ----------------------------------------------------------------------------------
    def _next_job(self) -> Job:
        with self._cond:
            while True:
                if self._pending and not self._busy:
                    quiet_for = time.monotonic() - self._quiet_since
                    if quiet_for >= self.idle_seconds:
                        key, job = self._pending.pop(0)
                        self._running = key
                        return key, job
                    self._cond.wait(self.idle_seconds - quiet_for)
                else:
                    self._cond.wait()

    def _work(self) -> None:
        while True:
            key, job = self._next_job()
            started = time.perf_counter()
            try:
                job()
            except Exception:  # a prefetch is only a guess: log it, never let it stop the worker
                self.failures += 1
                LOG.warning("prefetch of %r failed", key, exc_info=True)
            else:
                LOG.debug("prefetched %r in %.3f s", key, time.perf_counter() - started)
            with self._cond:
                self._done[key] = None
                while len(self._done) > _REMEMBERED:
                    self._done.popitem(last=False)
                self._running = None
                self._cond.notify_all()


class ActivityMiddleware:
    """ASGI middleware (``st.App(middleware=...)``): every HTTP request counts as server activity for
    :data:`PREFETCHER`. Websocket traffic is covered by the script runs that produce it."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope.get("type") != "http":
            return await self.app(scope, receive, send)
        with PREFETCHER.busy():
            return await self.app(scope, receive, send)


def enabled(environ: dict | None = None) -> bool:
    return (os.environ if environ is None else environ).get(ENV_VAR, "on").strip().lower() not in {"off", "0", "no"}


PREFETCHER = IdlePrefetcher()
"""The server process's prefetcher (shared by every session)."""

__all__ = ["ENV_VAR", "IDLE_SECONDS", "ActivityMiddleware", "IdlePrefetcher", "PREFETCHER", "enabled"]
