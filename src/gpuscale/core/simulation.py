"""Discrete-event loop ordered by (time_s, priority, seq), as simpy's Environment.schedule.

`seq` is a per-simulation counter, so ties never depend on object ids or hash order. Handlers
are plain callables; an exception in a handler stops the run loudly (no swallowing).

Besides one-off events, a simulation has *timers*: an owner with at most one pending firing
that it keeps moving (a replica's next step end, re-planned whenever a request arrives). Setting
a timer replaces its pending firing, which then never runs, so the heap does not fill with
superseded events (issue 16: 107k of a run's 512k events were, each popped to be ignored). A
timer firing takes its place in the same (time_s, priority, seq) order as an event, `seq` from
the same counter, so a run is the same whichever queue holds what. Two interchangeable timer
ways implement this: an indexed 4-ary heap beside the event heap (a firing is moved in place;
the compiled hot path's, where its int and float reads are native), or firings pushed on the
event heap itself, a superseded one skipped when it surfaces (the interpreter's, where heapq's
C code beats any Python sift). `Simulation(indexed_timers=...)` picks one; the default is the
one that is faster where this module runs.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from gpuscale.core.decisions import DecisionLog

# The module's own file: a compiled build is an extension module (setup.py, _hot_path.py).
COMPILED: Final = __file__.endswith(".so")
# rank = priority << _SEQ_BITS | seq orders a firing by (priority, seq) as one int.
_SEQ_BITS: Final = 44


class Priority(IntEnum):
    """Order of events that fall on the same instant (lower runs first).

    Lifecycle changes (node ready, pod ready) land before traffic at the same instant, traffic
    before the engine's own step completions, and controllers observe last, after the state of
    that instant is settled, as a controller reading a scrape taken "now" would.
    """

    LIFECYCLE = 0
    ARRIVAL = 10
    ENGINE = 20
    SCRAPE = 30
    CONTROLLER = 40


Handler = Callable[..., Any]


class TimerOwner:
    """What a timer fires: its owner's `on_timer(kind, arg)`. A method of a class, not a stored
    callback with an argument tuple: the compiled build calls it natively, with no tuple made
    per firing and no argument parsing."""

    __slots__ = ()

    def on_timer(self, kind: int, arg: object) -> None:
        raise NotImplementedError


class TimerCallback(TimerOwner):
    """A timer owner that calls `callback(kind, arg)`: for owners that are not classes of the
    compiled build (an interpreted class cannot subclass a compiled one)."""

    __slots__ = ("callback",)

    def __init__(self, callback: Callable[[int, object], None]) -> None:
        self.callback = callback

    def on_timer(self, kind: int, arg: object) -> None:
        self.callback(kind, arg)


class Timer:
    """One timer of an `IndexedTimers`: the key of its pending firing, its place in the heap
    and what it calls. Fields of a class, not columns of lists: the compiled build reads and
    writes them unboxed, where every store of a float, or of an int above 256, into a list
    allocates an object (a sift's moves store positions, a set stores a time and a rank)."""

    __slots__ = ("arg", "kind", "owner", "pos", "rank", "tid", "time_s")

    def __init__(self, owner: TimerOwner, tid: int) -> None:
        self.time_s = math.inf
        self.rank = 0
        self.pos = -1  # place in the heap, -1 when not pending
        self.kind = 0
        self.arg: object = None
        self.owner = owner
        self.tid = tid


class IndexedTimers:
    """A 4-ary heap of timers keyed by (time_s, rank), with each timer's heap position kept,
    so setting a pending timer moves its entry up or down instead of adding one (4-ary: half
    the levels of a binary heap for the same comparisons, and a level costs list stores in
    the compiled build; any arity pops the same order, the keys being unique).

    A firing timer keeps its entry (at its old key) while its owner runs: most owners set
    their timer again from there (a replica plans its next step), which then moves the entry
    down from the top once, where removing it and adding it back cost two sifts. The entry is
    removed only if the owner neither set nor cancelled it. While it fires, `head_time_s`
    skips it (a handler asking what comes next means what comes after itself)."""

    __slots__ = ("_firing", "_heap", "_timers")

    def __init__(self) -> None:
        self._timers: list[Timer] = []  # by timer id
        self._heap: list[Timer] = []
        self._firing = -1  # the timer whose owner is running, its entry still in the heap

    def new_timer(self, owner: TimerOwner) -> int:
        tid = len(self._timers)
        self._timers.append(Timer(owner, tid))
        return tid

    # The sifts compare (time_s, rank) pairs inline, the moving entry's pair held in locals:
    # a method call per comparison cost more than the comparison in the compiled build.
    def _up(self, i: int) -> None:
        heap = self._heap
        entry = heap[i]
        t = entry.time_s
        r = entry.rank
        while i > 0:
            parent = (i - 1) >> 2
            other = heap[parent]
            to = other.time_s
            if t > to or (t == to and r > other.rank):
                break
            heap[i] = other
            other.pos = i
            i = parent
        heap[i] = entry
        entry.pos = i

    def _down(self, i: int) -> None:
        heap = self._heap
        n = len(heap)
        entry = heap[i]
        t = entry.time_s
        r = entry.rank
        while True:
            child = 4 * i + 1
            if child >= n:
                break
            other = heap[child]
            to = other.time_s
            last = child + 4 if child + 4 < n else n
            c = child + 1
            while c < last:
                candidate = heap[c]
                tc = candidate.time_s
                if tc < to or (tc == to and candidate.rank < other.rank):
                    child = c
                    other = candidate
                    to = tc
                c += 1
            if t < to or (t == to and r < other.rank):
                break
            heap[i] = other
            other.pos = i
            i = child
        heap[i] = entry
        entry.pos = i

    def set(self, tid: int, time_s: float, rank: int, kind: int, arg: object) -> None:
        if tid == self._firing:
            self._firing = -1  # set again from its own firing: its entry moves, stays
        entry = self._timers[tid]
        entry.time_s = time_s
        entry.rank = rank
        entry.kind = kind
        entry.arg = arg
        i = entry.pos
        if i < 0:
            i = len(self._heap)
            self._heap.append(entry)
            self._up(i)
            return
        self._up(i)
        if entry.pos == i:
            self._down(i)

    def cancel(self, tid: int) -> None:
        if tid == self._firing:
            self._firing = -1
        entry = self._timers[tid]
        i = entry.pos
        if i < 0:
            return
        entry.pos = -1
        entry.arg = None
        last = self._heap.pop()
        if last is not entry:
            self._heap[i] = last
            last.pos = i
            self._up(i)
            if last.pos == i:
                self._down(i)

    def head(self) -> int:
        return self._heap[0].tid if self._heap else -1

    def head_time_s(self) -> float:
        heap = self._heap
        if not heap:
            return math.inf
        top = heap[0]
        if top.tid != self._firing:
            return top.time_s
        # The firing timer is on top: what comes next is the earliest of its children.
        n = len(heap)
        first = math.inf
        last = 5 if n > 5 else n
        for c in range(1, last):
            t = heap[c].time_s
            if t < first:
                first = t
        return first

    def head_rank(self) -> int:
        return self._heap[0].rank

    def fire_head(self) -> None:
        """Call the owner of the next firing; then remove its entry unless the owner set the
        timer again or cancelled it meanwhile."""
        entry = self._heap[0]
        tid = entry.tid
        self._firing = tid
        entry.owner.on_timer(entry.kind, entry.arg)
        if self._firing == tid:
            self._firing = -1
            self.cancel(tid)


class Simulation:
    """Owns the clock and the event heap."""

    __slots__ = ("_heap", "_live_seq", "_seq", "_stopped", "_timer_owners", "_timers",
                 "_until_s", "decisions", "now_s", "num_events")

    def __init__(self, indexed_timers: bool = COMPILED) -> None:
        self.now_s: float = 0.0
        self._heap: list[tuple[float, int, int, Handler, tuple]] = []
        # Indexed: the timers' own heap. Lazy (None): firings on the event heap, each checked
        # against _live_seq[tid] (the seq of the timer's pending firing, 0 if none) when it runs.
        self._timers: IndexedTimers | None = IndexedTimers() if indexed_timers else None
        self._live_seq: list[int] = []
        self._timer_owners: list[TimerOwner] = []
        self._seq = 0
        self._stopped = False
        self._until_s = math.inf  # the horizon of the `run` in progress
        self.num_events = 0
        # The opt-in decision log (core/decisions.py); None = off. Controllers that decide
        # check it once per decision, never per event.
        self.decisions: DecisionLog | None = None

    def schedule(self, time_s: float, priority: int, handler: Handler, *args: Any) -> None:
        """Run `handler(*args)` at `time_s`; scheduling into the past is a bug and raises."""
        if not time_s >= self.now_s:  # also catches NaN, which compares false
            raise ValueError(f"event scheduled in the past or at NaN: {time_s} (now {self.now_s})")
        self._seq += 1
        heapq.heappush(self._heap, (time_s, priority, self._seq, handler, args))

    def new_timer(self, owner: TimerOwner) -> int:
        """A timer id for `set_timer`, firing `owner.on_timer`: one pending firing at a time."""
        if self._timers is not None:
            return self._timers.new_timer(owner)
        self._live_seq.append(0)
        self._timer_owners.append(owner)
        return len(self._live_seq) - 1

    def set_timer(self, tid: int, time_s: float, priority: int, kind: int, arg: object) -> None:
        """Call the timer's `owner.on_timer(kind, arg)` at `time_s` instead of its pending
        firing, if any. Same order as `schedule`: the firing takes a seq from the same
        counter."""
        if not time_s >= self.now_s:
            raise ValueError(f"timer set in the past or at NaN: {time_s} (now {self.now_s})")
        self._seq += 1
        if self._timers is not None:
            self._timers.set(tid, time_s, priority << _SEQ_BITS | self._seq, kind, arg)
            return
        self._live_seq[tid] = self._seq
        heapq.heappush(self._heap, (time_s, priority, self._seq, self._fire_if_current,
                                    (tid, self._seq, kind, arg)))

    def cancel_timer(self, tid: int) -> None:
        if self._timers is not None:
            self._timers.cancel(tid)
        else:
            self._live_seq[tid] = 0

    def _fire_if_current(self, tid: int, seq: int, kind: int, arg: object) -> None:
        """A lazy timer firing: runs unless it was replaced or cancelled since."""
        if self._live_seq[tid] == seq:
            self._live_seq[tid] = 0
            self._timer_owners[tid].on_timer(kind, arg)
        else:
            self.num_events -= 1  # not an event of the run: the indexed queue never has it

    def every(self, period_s: float, priority: int, handler: Handler, *, start_s: float = 0.0,
              until_s: float = math.inf) -> None:
        """Run `handler(now_s)` at start_s, start_s + period_s, ... on integer ticks.

        Tick k fires at start_s + k * period_s (computed from k, not by adding floats), so a
        15 s HPA and a 15 s scrape stay aligned over a long run.
        """
        if period_s <= 0:
            raise ValueError(f"period must be > 0, got {period_s}")

        def tick(k: int) -> None:
            handler(self.now_s)
            next_time_s = start_s + (k + 1) * period_s
            if next_time_s <= until_s and not self._stopped:
                self.schedule(next_time_s, priority, tick, k + 1)

        if start_s <= until_s:
            self.schedule(start_s, priority, tick, 0)

    def peek_s(self) -> float:
        """Time of the next event or timer firing, or +inf when none is left."""
        first = self._heap[0][0] if self._heap else math.inf
        timer_s = self._timers.head_time_s() if self._timers is not None else math.inf
        return timer_s if timer_s < first else first

    def advance_to(self, time_s: float) -> bool:
        """Move the clock to `time_s` if nothing else would happen first: no event is due
        before it (strictly; one at the same instant keeps its place by priority) and the run
        goes that far. Lets a handler take the next of a series (the workload's arrivals)
        inline, with the same effect as an event of its own and without the heap."""
        heap = self._heap
        if (heap and heap[0][0] <= time_s) or time_s > self._until_s or self._stopped \
                or not time_s >= self.now_s \
                or (self._timers is not None and self._timers.head_time_s() <= time_s):
            return False
        self.now_s = time_s
        return True

    def stop(self) -> None:
        self._stopped = True

    def run(self, until_s: float = math.inf) -> None:
        """Process events in order until the heap is empty, `stop()` or `until_s` is passed."""
        heap = self._heap
        timers = self._timers
        pop = heapq.heappop
        count = 0
        self._until_s = until_s
        try:
            while timers is None and heap and not self._stopped:
                if heap[0][0] > until_s:
                    break
                time_s, _prio, _seq, handler, args = pop(heap)
                self.now_s = time_s
                count += 1
                handler(*args)
            while timers is not None and not self._stopped:
                # The timers' next firing runs first if it sorts before the heap's next event.
                timer_s = timers.head_time_s()
                if heap:
                    first = heap[0]
                    if timer_s < first[0] or (timer_s == first[0] and timers.head_rank()
                                              < (first[1] << _SEQ_BITS | first[2])):
                        if timer_s > until_s:
                            break
                        self.now_s = timer_s
                        count += 1
                        timers.fire_head()
                        continue
                    if first[0] > until_s:
                        break
                    time_s, _prio, _seq, handler, args = pop(heap)
                    self.now_s = time_s
                    count += 1
                    handler(*args)
                elif timer_s <= until_s and timers.head() >= 0:
                    self.now_s = timer_s
                    count += 1
                    timers.fire_head()
                else:
                    break
        finally:
            self.num_events += count
            self._until_s = math.inf
        if until_s != math.inf and not self._stopped:
            self.now_s = max(self.now_s, until_s)
