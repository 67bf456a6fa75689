"""Timers (core/simulation.py): one pending firing per timer, in the events' order.

Both implementations (the indexed heap of the compiled build, the lazy firings on the event
heap of the interpreter) must fire the same handlers in the same order as a plain reference:
every pending item in one list, a timer's set replacing its item, the minimum of (time_s,
priority, seq) taken each time.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.core import Priority, Simulation
from gpuscale.core.simulation import TimerCallback


def owner_calling(call) -> TimerCallback:
    """A timer owner passing each firing's argument to `call`."""
    return TimerCallback(lambda kind, arg: call(arg))

# One operation: (kind, delay_s, priority, timer id). Delays on a coarse grid, so same-instant
# ties (decided by priority, then seq) are frequent; 24 timers, so the heap has several levels.
TIMERS = 24
_OPS = st.lists(st.tuples(st.sampled_from(["event", "set", "cancel"]),
                          st.integers(0, 4).map(lambda k: k * 0.5),
                          st.sampled_from([Priority.LIFECYCLE, Priority.ARRIVAL, Priority.ENGINE,
                                           Priority.CONTROLLER]),
                          st.integers(0, TIMERS - 1)),
                min_size=1, max_size=60)


def _run_simulation(indexed: bool, ops: list[tuple[str, float, int, int]],
                    until_s: float) -> tuple[list[tuple[str, float]], int]:
    """Each firing performs the next operation (relative to its time), so handlers schedule
    and move timers while the run is in progress, as replicas do."""
    sim = Simulation(indexed_timers=indexed)
    fired: list[tuple[str, float]] = []
    queue = list(ops)

    def step(label: str) -> None:
        fired.append((label, sim.now_s))
        if queue:
            apply(queue.pop(0))

    timers = [sim.new_timer(owner_calling(step)) for _ in range(TIMERS)]

    def apply(op: tuple[str, float, int, int]) -> None:
        kind, delay_s, priority, tid = op
        label = f"{kind}{len(queue)}"
        if kind == "event":
            sim.schedule(sim.now_s + delay_s, priority, step, label)
        elif kind == "set":
            sim.set_timer(timers[tid], sim.now_s + delay_s, priority, 0, label)
        else:
            sim.cancel_timer(timers[tid])
            sim.schedule(sim.now_s + delay_s, priority, step, label)

    for _ in range(12):  # independent chains, so many timers are pending at once
        if queue:
            apply(queue.pop(0))
    sim.run(until_s)
    sim.run()
    return fired, sim.num_events


def _run_reference(ops: list[tuple[str, float, int, int]]) -> list[tuple[str, float]]:
    pending: list[tuple[float, int, int, str, int]] = []  # time, priority, seq, label, tid
    fired: list[tuple[str, float]] = []
    queue = list(ops)
    seq = 0
    now_s = 0.0

    def apply(op: tuple[str, float, int, int]) -> None:
        nonlocal seq
        kind, delay_s, priority, tid = op
        label = f"{kind}{len(queue)}"
        if kind in ("set", "cancel"):
            pending[:] = [p for p in pending if p[4] != tid]
        seq += 1
        pending.append((now_s + delay_s, int(priority), seq, label, tid if kind == "set" else -1))

    for _ in range(12):
        if queue:
            apply(queue.pop(0))
    while pending:
        first = min(pending)
        pending.remove(first)
        now_s = first[0]
        fired.append((first[3], now_s))
        if queue:
            apply(queue.pop(0))
    return fired


@settings(max_examples=300, deadline=None)
@given(ops=_OPS, until_s=st.sampled_from([0.5, 1.0, 2.5, math.inf]))
def test_both_timer_queues_fire_what_the_reference_fires_in_its_order(ops, until_s):
    expected = _run_reference(ops)
    indexed, indexed_events = _run_simulation(True, ops, until_s)
    lazy, lazy_events = _run_simulation(False, ops, until_s)
    assert indexed == expected
    assert lazy == expected
    # A superseded firing is not an event of the run in either queue.
    assert indexed_events == lazy_events == len(expected)


@pytest.mark.parametrize("indexed", [True, False])
def test_setting_a_timer_replaces_its_pending_firing_and_cancel_removes_it(indexed):
    sim = Simulation(indexed_timers=indexed)
    log: list[str] = []
    a, b = sim.new_timer(owner_calling(log.append)), sim.new_timer(owner_calling(log.append))
    sim.set_timer(a, 5.0, Priority.ENGINE, 0, "a@5")
    sim.set_timer(a, 2.0, Priority.ENGINE, 0, "a@2")  # earlier: replaces
    sim.set_timer(b, 1.0, Priority.ENGINE, 0, "b@1")
    sim.set_timer(b, 3.0, Priority.ENGINE, 0, "b@3")  # later: replaces too
    sim.schedule(2.0, Priority.ARRIVAL, log.append, "event@2")  # ARRIVAL before ENGINE
    sim.run(until_s=2.5)
    assert log == ["event@2", "a@2"] and sim.peek_s() == 3.0
    sim.cancel_timer(b)
    sim.run()
    assert log == ["event@2", "a@2"] and sim.peek_s() == math.inf


@pytest.mark.parametrize("indexed", [True, False])
def test_advance_to_waits_for_a_pending_timer(indexed):
    sim = Simulation(indexed_timers=indexed)
    tid = sim.new_timer(owner_calling(lambda arg: None))
    sim.set_timer(tid, 1.0, Priority.ENGINE, 0, None)
    assert not sim.advance_to(1.0)  # the timer fires at that instant: take the heap
    assert sim.advance_to(0.5) and sim.now_s == 0.5
    with pytest.raises(ValueError, match="past"):
        sim.set_timer(tid, 0.25, Priority.ENGINE, 0, None)


@pytest.mark.parametrize("indexed", [True, False])
def test_a_firing_timer_does_not_hide_what_comes_after_it(indexed):
    # Its owner (the fleet taking arrivals inline) asks whether anything comes before the
    # next instant: the firing itself must not count, whether it sets itself again or not.
    sim = Simulation(indexed_timers=indexed)
    seen: list[tuple[str, float]] = []

    def arrivals(k: object) -> None:
        k = int(k)
        while k < 6:
            seen.append((f"a{k}", sim.now_s))
            k += 1
            if not sim.advance_to(float(k)):
                sim.set_timer(tid, float(k), Priority.ARRIVAL, 0, k)
                return

    tid = sim.new_timer(owner_calling(arrivals))
    other = sim.new_timer(owner_calling(lambda label: seen.append((label, sim.now_s))))
    sim.set_timer(tid, 0.0, Priority.ARRIVAL, 0, 0)
    sim.set_timer(other, 3.0, Priority.LIFECYCLE, 0, "other")
    sim.run()
    assert seen == [("a0", 0.0), ("a1", 1.0), ("a2", 2.0), ("other", 3.0), ("a3", 3.0),
                    ("a4", 4.0), ("a5", 5.0)]
    # a0 fired, a3 fired after `other`; the rest were taken inline.
    assert sim.num_events == 3 and sim.peek_s() == math.inf


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["set", "set", "set", "cancel", "pop"]),
                          st.integers(0, 63), st.integers(0, 30)), max_size=300))
def test_the_indexed_heap_pops_the_least_time_and_rank_of_up_to_64_timers(ops):
    # The data structure alone, with many timers pending at once (several heap levels).
    from gpuscale.core.simulation import IndexedTimers

    heap = IndexedTimers()
    owner = owner_calling(lambda arg: None)
    ids = [heap.new_timer(owner) for _ in range(64)]
    pending: dict[int, tuple[float, int]] = {}
    rank = 0
    for kind, tid, time_units in ops:
        if kind == "set":
            rank += 1
            heap.set(ids[tid], time_units * 0.25, rank, 0, None)
            pending[ids[tid]] = (time_units * 0.25, rank)
        elif kind == "cancel":
            heap.cancel(ids[tid])
            pending.pop(ids[tid], None)
        elif pending:
            expected = min(pending, key=lambda t: pending[t])
            assert heap.head() == expected and heap.head_time_s() == pending[expected][0]
            heap.cancel(expected)  # a pop of the head
            del pending[expected]
    while pending:
        expected = min(pending, key=lambda t: pending[t])
        assert heap.head() == expected
        heap.cancel(expected)
        del pending[expected]
    assert heap.head() == -1 and heap.head_time_s() == math.inf
