"""ui/heap.py: malloc_trim gives freed heap memory back to the system; the thread starts once, and not at all
when TIEBREAK_TRIM_SECONDS is 0."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from needs import missing

ROOT = Path(__file__).resolve().parents[2]

# A process that fills its heap with small blocks on a second thread (as a script run does), frees all but every
# 64th (so no heap shrinks from its top), then prints its RSS (MB) before and after ui.heap.trim().
FRAGMENT = r"""
import os, sys, threading
sys.path.insert(0, sys.argv[1])
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
kept = []
def work():
    blocks = [bytearray(2000) for _ in range(150_000)]
    kept.extend(blocks[::64])
    del blocks
t = threading.Thread(target=work); t.start(); t.join()
from ui import heap
before = rss()
done = heap.trim()
print(before, rss(), done, len(kept))
"""


def test_trim_gives_freed_heap_back_to_the_system():
    if not sys.platform.startswith("linux"):
        missing("malloc_trim is glibc's: this test runs on Linux")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", FRAGMENT, str(ROOT)], capture_output=True, text=True, env=env,
                         check=True, timeout=120).stdout.split()
    before, after, done = float(out[0]), float(out[1]), out[2]
    assert done == "True"
    assert before - after > 150, (before, after)  # ~290 MB allocated, 1/64 of it kept


def test_the_thread_starts_once_and_stops(monkeypatch):
    from ui import heap

    monkeypatch.setattr(heap, "_started", threading.Event())
    calls = []
    monkeypatch.setattr(heap, "trim", lambda: calls.append(1))
    stop = threading.Event()
    thread = heap.start(0.01, stop)
    assert thread is not None and heap.start(0.01, stop) is None
    try:
        for _ in range(500):
            if len(calls) >= 3:
                break
            threading.Event().wait(0.01)
        assert len(calls) >= 3
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


def test_zero_seconds_means_never():
    env = {**os.environ, "TIEBREAK_TRIM_SECONDS": "0"}
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from ui import heap; print(heap.TRIM_SECONDS, heap.start())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["0", "None"]


def test_a_pass_forgets_expired_sessions_and_collects_them(monkeypatch):
    from ui import heap, internals

    collected = []
    monkeypatch.setattr(internals, "drop_expired_sessions", lambda: 3)
    monkeypatch.setattr(heap.gc, "collect", lambda: collected.append(1))
    assert heap.tidy() == 3 and collected == [1]
    monkeypatch.setattr(internals, "drop_expired_sessions", lambda: 0)
    assert heap.tidy() == 0 and collected == [1]  # nothing went: no collection
