"""How many expensive computations a server process runs at once, and how many may wait for one.

A Leaderboard with its uncertainty (``Store.leaderboard`` with ``uncertainty``: intervals, rank sets and tiers
through both lenses) costs up to a second or more of CPU and tens of MB while it runs (docs/hosting.md
§ Expensive computations), and every distinct link (condition × ranks × level × order × pins × filters) is a
new one: nothing but a limit keeps a flood of distinct requests from running them all at once. ``ui/data.py``
hands such a computation to :func:`run`, on a cache miss only, so a kept answer never waits here:

- at most :attr:`Limits.slots` computations run at once (``TIEBREAK_COMPUTE_SLOTS``, default 1), each in one of
  the gate's own threads, whose CPU priority is :attr:`Limits.nice` steps lower (``TIEBREAK_COMPUTE_NICE``,
  default 10; Linux): when the cores are saturated, the server's other threads — the pages and the kept
  answers — run first;
- at most :attr:`Limits.queue` more wait for a slot, first come first served (``TIEBREAK_COMPUTE_QUEUE``,
  default 8), each at most :attr:`Limits.wait_seconds` (``TIEBREAK_COMPUTE_WAIT_SECONDS``, default 30);
- anything beyond is refused at once with :class:`Busy`, which says when to try again (``retry_after``: the
  mean computation time so far × the computations ahead ÷ slots). The JSON API answers it 503 with
  ``Retry-After`` (``ui/api.py``); the page shows "busy, retrying" and runs again (``ui/navigation.py``).

A ``MemoryError`` inside a computation is a :class:`Busy` too (logged): the server could not afford it now.
The limit is per process (each ``deploy/serve.sh`` process has its own); a computation that asks for another
runs it in its own slot. Standard library only: the JSON API imports it before anything else.
"""
from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

R = TypeVar("R")

LOG = logging.getLogger("tiebreak.app")
FIRST_GUESS_SECONDS = 1.0
"""The mean computation time assumed before any finished (a Leaderboard of the shipped data with its
uncertainty: 0.5–1 s)."""
RETRY_AFTER_RANGE = (1, 120)
"""Bounds of the ``Retry-After`` a refusal suggests, in seconds."""


def _env_int(name: str, default: int, low: int) -> int:
    text = os.environ.get(name, "").strip().replace("_", "")
    return int(text) if text.isascii() and text.isdigit() and int(text) >= low else default


@dataclass(frozen=True)
class Limits:
    """The gate's limits (environment variables override the defaults; a value that is not a whole number in
    range keeps the default)."""

    slots: int = 1
    queue: int = 8
    wait_seconds: float = 30.0
    nice: int = 10

    @classmethod
    def from_environ(cls) -> Limits:
        return cls(slots=_env_int("TIEBREAK_COMPUTE_SLOTS", cls.slots, 1),
                   queue=_env_int("TIEBREAK_COMPUTE_QUEUE", cls.queue, 0),
                   wait_seconds=float(_env_int("TIEBREAK_COMPUTE_WAIT_SECONDS", int(cls.wait_seconds), 1)),
                   nice=min(_env_int("TIEBREAK_COMPUTE_NICE", cls.nice, 0), 19))


class Busy(Exception):
    """A computation refused because the process is busy with others: ``retry_after`` seconds is when to try
    again; ``why`` is 'queue full', 'waited too long' or 'out of memory'."""

    def __init__(self, what: str, why: str, retry_after: int, running: int, waiting: int) -> None:
        self.what, self.why, self.retry_after = what, why, retry_after
        self.running, self.waiting = running, waiting
        super().__init__(f"busy ({why}): {what} refused with {running} running and {waiting} waiting; "
                         f"retry after {retry_after} s")


class Gate:
    """At most ``limits.slots`` holders at once, at most ``limits.queue`` waiting in order of arrival."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits.from_environ()
        self._lock = threading.Lock()
        self._queue: deque[threading.Event] = deque()
        self._running = 0
        self._mean_seconds = FIRST_GUESS_SECONDS
        self._mine = threading.local()
        self._threads: ThreadPoolExecutor | None = None
        self.refused = 0
        self.finished = 0

    # ---------------------------------------------------------------------------------------- state
    @property
    def running(self) -> int:
        return self._running

    @property
    def waiting(self) -> int:
        return len(self._queue)

    def retry_after(self) -> int:
        """Seconds until the computations running and waiting now should be done (:data:`RETRY_AFTER_RANGE`)."""
        ahead = self._running + len(self._queue)
        seconds = math.ceil(self._mean_seconds * max(ahead, 1) / self.limits.slots)
        return min(max(seconds, RETRY_AFTER_RANGE[0]), RETRY_AFTER_RANGE[1])

    def _busy(self, what: str, why: str) -> Busy:
        self.refused += 1
        busy = Busy(what, why, self.retry_after(), self._running, len(self._queue))
        LOG.info("%s", busy)
        return busy

    # ---------------------------------------------------------------------------------------- slots
    def _acquire(self, what: str) -> None:
        with self._lock:
            if self._running < self.limits.slots and not self._queue:
                self._running += 1
                return
            if len(self._queue) >= self.limits.queue:
                raise self._busy(what, "queue full")
            ticket = threading.Event()
            self._queue.append(ticket)
        ticket.wait(self.limits.wait_seconds)
        with self._lock:
            if ticket.is_set():  # handed a slot (possibly just as the wait ended): it is counted as running
                return
            self._queue.remove(ticket)
            raise self._busy(what, "waited too long")

    def _release(self, seconds: float) -> None:
        with self._lock:
            self.finished += 1
            self._mean_seconds += (seconds - self._mean_seconds) / min(self.finished, 10)  # recent computations
            if self._queue:
                self._queue.popleft().set()  # the slot passes to the first waiting: still one running
            else:
                self._running -= 1

    def _lower_priority(self) -> None:
        """A computing thread's initializer: ``nice`` steps below the process (per thread on Linux; elsewhere
        the call fails and the thread keeps the process's priority)."""
        try:
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, min(os.getpriority(os.PRIO_PROCESS, tid) + self.limits.nice, 19))
        except (AttributeError, OSError):
            pass

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._threads is None:
                self._threads = ThreadPoolExecutor(self.limits.slots, thread_name_prefix="tiebreak-compute",
                                                   initializer=self._lower_priority)
            return self._threads

    def run(self, what: str, compute: Callable[..., R], *args, **kwargs) -> R:
        """``compute(*args, **kwargs)`` in a slot (waiting for one in the queue), in one of the gate's computing
        threads; its answer, or its exception. :class:`Busy` when there is no slot, or it ran out of memory."""
        if getattr(self._mine, "computing", False):  # asked by a computation: already in a slot
            return compute(*args, **kwargs)
        self._acquire(what)
        started = time.monotonic()

        def in_slot() -> R:
            self._mine.computing = True
            try:
                return compute(*args, **kwargs)
            finally:
                self._mine.computing = False

        try:
            return self._executor().submit(in_slot).result()
        except MemoryError:
            LOG.warning("out of memory computing %s (%d running)", what, self._running)
            with self._lock:
                raise self._busy(what, "out of memory") from None
        finally:
            self._release(time.monotonic() - started)


GATE = Gate()
"""The process's gate (limits read from the environment at import)."""


def run(what: str, compute: Callable[..., R], *args, **kwargs) -> R:
    """``compute(*args, **kwargs)`` under the process's gate (:meth:`Gate.run`); ``what`` names it in the log."""
    return GATE.run(what, compute, *args, **kwargs)


def configure(limits: Limits) -> Gate:
    """Replace the process's gate (tests; a server reads its limits from the environment at start)."""
    global GATE
    GATE = Gate(limits)
    return GATE
