"""Copies of a paused simulation's objects, to continue one run two ways (the oracle's probe).

`copy_attributes(source, twin, memo)` gives `twin` every attribute of `source`, whatever the
class declares (a compiled class's `__mypyc_attrs__`, an interpreted one's `__slots__`), so an
attribute added to `Replica` or `RequestTable` later is copied without a change here:

- an object that `memo` maps (by id) is replaced by its twin: the other objects being copied
  (the simulation, the request table, the replica) and containers already copied, so two
  attributes holding one list still hold one list;
- a list, dict, set or `array.array` is copied one level: its elements are shared, which is
  right for these classes' containers of ints, floats and tuples of them (a container holding
  the copied objects themselves needs its own fix-up, as the timers' owners in `fork_sim`);
- a memoryview is made again over the copy of what it views (the table's typed views);
- an object with a `fork_blank()` method is a part of its owner's state (the replica's queues,
  finish heap, KV budget): its twin is the blank that method returns, given copies of its
  attributes by these same rules;
- anything else is shared: numbers, strings, None, frozen configs, the replica's `StepCost`
  (its memo is a pure function of the hardware, serving/performance.py).

Each twin is a real instance from its class's constructor (a compiled class cannot be made
without one), whose state `copy_attributes` then replaces.
"""

from __future__ import annotations

from array import array
from typing import Any

from gpuscale.core.simulation import IndexedTimers, Simulation, Timer

_CONTAINERS = (list, dict, set)


def attribute_names(cls: type) -> tuple[str, ...]:
    """Every instance attribute of `cls`: mypyc's list for a compiled class, else the
    `__slots__` of the class and its bases."""
    names = cls.__dict__.get("__mypyc_attrs__")
    if names is not None:
        return tuple(names)
    found: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        found.extend((slots,) if isinstance(slots, str) else slots)
    return tuple(found)


def copy_value(value: Any, memo: dict[int, Any]) -> Any:
    """`value` for a twin (see the module docstring), memoised by id."""
    twin = memo.get(id(value))
    if twin is not None:
        return twin
    kind = type(value)
    if kind in _CONTAINERS:
        twin = value.copy()
    elif kind is array:
        twin = value[:]
    elif kind is memoryview:
        base = copy_value(value.obj, memo)
        twin = memoryview(base).cast("B").cast(value.format)
    else:
        blank = getattr(value, "fork_blank", None)
        if blank is None:
            return value
        twin = blank()
        copy_attributes(value, twin, memo)  # memoises it first
        return twin
    memo[id(value)] = twin
    return twin


def copy_attributes(source: object, twin: object, memo: dict[int, Any]) -> None:
    """Set each attribute of `twin` to `source`'s, copied by `copy_value`."""
    memo[id(source)] = twin
    for name in attribute_names(type(source)):
        try:
            value = getattr(source, name)
        except AttributeError:  # declared but never set
            continue
        setattr(twin, name, copy_value(value, memo))


def fork_sim(sim: Simulation, twin: Simulation, memo: dict[int, Any]) -> None:
    """Make `twin` (a new `Simulation` of the same timer kind) a copy of `sim` whose pending
    timers fire the twins (in `memo`) of their owners, at the same (time, priority, seq)
    places, with the twins of their arguments where `memo` has them. The owners must be
    copied first (their twins in `memo`). Only timers can be forked: a pending one-off
    event's handler is a closure over the original run's objects, so one raises ValueError."""
    timers = sim._timers
    copy_attributes(sim, twin, memo)
    if timers is not None:
        if sim._heap:
            raise ValueError("a simulation with pending events cannot be forked")
        twin_timers = IndexedTimers()
        twin_timers._firing = timers._firing
        for timer in timers._timers:
            twin_timer = Timer(memo[id(timer.owner)], timer.tid)
            twin_timer.time_s = timer.time_s
            twin_timer.rank = timer.rank
            twin_timer.pos = timer.pos
            twin_timer.kind = timer.kind
            twin_timer.arg = memo.get(id(timer.arg), timer.arg)
            twin_timers._timers.append(twin_timer)
        twin_timers._heap = [twin_timers._timers[timer.tid] for timer in timers._heap]
        twin._timers = twin_timers
        return
    fire = sim._fire_if_current
    heap = []
    for time_s, priority, seq, handler, args in sim._heap:  # kept in heap order
        if handler != fire:
            raise ValueError("a simulation with pending events cannot be forked")
        heap.append((time_s, priority, seq, twin._fire_if_current,
                     tuple(memo.get(id(arg), arg) for arg in args)))
    twin._heap = heap
    twin._timer_owners = [memo[id(owner)] for owner in sim._timer_owners]
