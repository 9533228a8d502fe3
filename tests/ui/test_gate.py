"""ui/gate.py: at most ``slots`` expensive computations at once per process, at most ``queue`` waiting in order
of arrival, a refusal (Busy, with a time to retry) beyond — never a pile-up; and the dashboard's two callers:
``ui.data.leaderboard`` computes a board with its uncertainty inside the gate (a kept answer does not wait), and the frame
turns a refusal into a "busy, retrying" notice instead of an error.
Reproduce: ``python -m pytest tests/ui/test_gate.py -q``."""
from __future__ import annotations

import threading
import time

import pytest

from ui import gate


def hold(g: gate.Gate, what: str, started: threading.Event, release: threading.Event, log: list,
         errors: list) -> threading.Thread:
    def inside():
        log.append(what)
        started.set()
        release.wait(10)

    def run():
        try:
            g.run(what, inside)
        except gate.Busy as busy:
            errors.append((what, busy))
            started.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def wait_until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_one_slot_a_queue_in_order_of_arrival_and_a_refusal_beyond():
    g = gate.Gate(gate.Limits(slots=1, queue=2, wait_seconds=10))
    release = [threading.Event() for _ in range(3)]
    started = [threading.Event() for _ in range(3)]
    log, errors = [], []
    threads = [hold(g, "first", started[0], release[0], log, errors)]
    started[0].wait(5)
    threads += [hold(g, "second", started[1], release[1], log, errors)]
    wait_until(lambda: g.waiting == 1)
    threads += [hold(g, "third", started[2], release[2], log, errors)]
    wait_until(lambda: g.waiting == 2)
    assert (g.running, g.waiting) == (1, 2)
    with pytest.raises(gate.Busy) as refused:  # the queue is full: refused at once, not after a wait
        g.run("fourth", lambda: None)
    assert refused.value.why == "queue full" and refused.value.retry_after >= 1
    assert (refused.value.running, refused.value.waiting) == (1, 2)
    for event in release:
        event.set()
    for thread in threads:
        thread.join(10)
    assert log == ["first", "second", "third"] and errors == []
    assert (g.running, g.waiting, g.refused, g.finished) == (0, 0, 1, 3)


def test_a_waiting_computation_gives_up_after_its_wait_and_leaves_the_queue():
    g = gate.Gate(gate.Limits(slots=1, queue=4, wait_seconds=0.2))
    release, started, log, errors = threading.Event(), threading.Event(), [], []
    holder = hold(g, "long", started, release, log, errors)
    started.wait(5)
    began = time.monotonic()
    with pytest.raises(gate.Busy) as refused:
        g.run("patient", lambda: None)
    assert 0.15 < time.monotonic() - began < 2 and refused.value.why == "waited too long"
    assert g.waiting == 0
    release.set()
    holder.join(10)
    assert g.run("after", lambda: g.running) == 1  # the slot is free again
    assert g.running == 0


def test_two_slots_run_two_at_once():
    g = gate.Gate(gate.Limits(slots=2, queue=0, wait_seconds=1))
    release, log, errors = threading.Event(), [], []
    started = [threading.Event(), threading.Event()]
    threads = [hold(g, f"c{i}", started[i], release, log, errors) for i in range(2)]
    for event in started:
        assert event.wait(5)
    assert g.running == 2 and errors == []
    with pytest.raises(gate.Busy):  # no queue: a third is refused at once
        g.run("c2", lambda: None)
    release.set()
    for thread in threads:
        thread.join(10)


def test_a_computation_asking_for_another_runs_it_in_its_own_slot():
    g = gate.Gate(gate.Limits(slots=1, queue=0, wait_seconds=1))
    inner = g.run("outer", lambda: g.run("inner", lambda: (g.running, threading.current_thread().name)))
    assert inner[0] == 1 and inner[1].startswith("tiebreak-compute")  # would wait for itself without the rule
    assert g.running == 0


def test_a_computation_runs_in_a_thread_of_lower_priority():
    import os

    g = gate.Gate(gate.Limits(slots=1, queue=0, wait_seconds=1, nice=5))
    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen = g.run("niced", lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
    assert seen == min(own + 5, 19)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == own  # the caller's is unchanged


def test_out_of_memory_inside_a_slot_is_busy_and_frees_the_slot():
    g = gate.Gate(gate.Limits(slots=1, queue=0, wait_seconds=1))

    def huge():
        raise MemoryError

    with pytest.raises(gate.Busy) as refused:
        g.run("huge", huge)
    assert refused.value.why == "out of memory" and g.running == 0
    with pytest.raises(ZeroDivisionError):  # any other failure is the computation's own, as it is
        g.run("broken", lambda: 1 / 0)
    assert g.running == 0


def test_retry_after_follows_the_computations_ahead():
    g = gate.Gate(gate.Limits(slots=1, queue=8, wait_seconds=1))
    for _ in range(10):  # ten computations of ~0.05 s: the mean follows them
        g.run("quick", time.sleep, 0.05)
    assert g.retry_after() == 1  # ceil(0.05 × 1 ahead)
    g._mean_seconds = 4.0
    g._running = 1
    g._queue.extend(threading.Event() for _ in range(2))
    assert g.retry_after() == 12  # 4 s × 3 ahead ÷ 1 slot
    g._mean_seconds = 1000.0
    assert g.retry_after() == gate.RETRY_AFTER_RANGE[1]


@pytest.mark.parametrize("env, expected", [
    ({}, gate.Limits(1, 8, 30.0, 10)),
    ({"TIEBREAK_COMPUTE_SLOTS": "3", "TIEBREAK_COMPUTE_QUEUE": "0", "TIEBREAK_COMPUTE_WAIT_SECONDS": "5",
      "TIEBREAK_COMPUTE_NICE": "0"}, gate.Limits(3, 0, 5.0, 0)),
    ({"TIEBREAK_COMPUTE_SLOTS": "0", "TIEBREAK_COMPUTE_QUEUE": "-1", "TIEBREAK_COMPUTE_WAIT_SECONDS": "x",
      "TIEBREAK_COMPUTE_NICE": "40"}, gate.Limits(1, 8, 30.0, 19)),
])
def test_limits_from_the_environment(monkeypatch, env, expected):
    for name in ("TIEBREAK_COMPUTE_SLOTS", "TIEBREAK_COMPUTE_QUEUE", "TIEBREAK_COMPUTE_WAIT_SECONDS",
                 "TIEBREAK_COMPUTE_NICE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert gate.Limits.from_environ() == expected


# ------------------------------------------------------------------------------------ the dashboard's callers
@pytest.fixture
def one_slot_taken():
    """The process's gate with one slot, no queue, and that slot held by another thread."""
    before = gate.GATE
    g = gate.configure(gate.Limits(slots=1, queue=0, wait_seconds=1))
    release, started = threading.Event(), threading.Event()
    holder = hold(g, "someone else's board", started, release, [], [])
    started.wait(5)
    yield g
    release.set()
    holder.join(10)
    gate.GATE = before


def test_a_board_with_uncertainty_waits_for_the_gate_and_a_kept_one_does_not(synthetic_dir, fresh_answers, one_slot_taken):
    from evalcore.store import Store
    from ui import data, sidebar

    snapshot = data.snapshot(synthetic_dir)
    cond = sidebar.choose_condition(Store(synthetic_dir).facets())
    with pytest.raises(gate.Busy):  # through st.cache_data: the refusal reaches the caller as it is
        data.leaderboard(snapshot, cond, level=0.9)
    assert data.leaderboard(snapshot, cond, uncertainty=False).ranked is not None  # no uncertainty: not gated
    gate.GATE = gate.Gate(gate.Limits(slots=1, queue=0, wait_seconds=1))
    kept = data.leaderboard(snapshot, cond, level=0.9)  # a free gate: computed and kept
    gate.GATE = one_slot_taken  # the slot taken again: the kept answer is served without it
    again = data.leaderboard(snapshot, cond, level=0.9)
    assert again.ranked.equals(kept.ranked)
    with pytest.raises(gate.Busy):  # another level is another computation
        data.leaderboard(snapshot, cond, level=0.99)


def test_the_page_says_busy_and_retries_instead_of_an_error(synthetic_dir, fresh_answers, one_slot_taken,
                                                           monkeypatch):
    from streamlit.testing.v1 import AppTest

    from ui import navigation

    slept = []
    monkeypatch.setattr(navigation, "_pause", slept.append)
    monkeypatch.setenv("TIEBREAK_DATA", str(synthetic_dir))
    at = AppTest.from_file(str(navigation.MAIN_SCRIPT), default_timeout=120).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(slept) == navigation.BUSY_RETRIES and all(1 <= s <= navigation.BUSY_SLEEP_SECONDS for s in slept)
    assert any("still busy" in w.value for w in at.warning), [w.value for w in at.warning]
    gate.GATE = gate.Gate(gate.Limits(slots=1, queue=0, wait_seconds=1))  # the other computation is done
    at.run()
    assert not at.exception and not at.error
    assert len(at.dataframe) > 0 and not any("busy" in i.value for i in at.info)  # the board is drawn
