"""Discrete-event loop ordered by (time_s, priority, seq), as simpy's Environment.schedule.

`seq` is a per-simulation counter, so ties never depend on object ids or hash order. Handlers
are plain callables; an exception in a handler stops the run loudly (no swallowing).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from enum import IntEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuscale.core.decisions import DecisionLog


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


class Simulation:
    """Owns the clock and the event heap."""

    __slots__ = ("_heap", "_seq", "_stopped", "_until_s", "decisions", "now_s", "num_events")

    def __init__(self) -> None:
        self.now_s: float = 0.0
        self._heap: list[tuple[float, int, int, Handler, tuple]] = []
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
        """Time of the next event, or +inf when none is left."""
        return self._heap[0][0] if self._heap else math.inf

    def advance_to(self, time_s: float) -> bool:
        """Move the clock to `time_s` if nothing else would happen first: no event is due
        before it (strictly; one at the same instant keeps its place by priority) and the run
        goes that far. Lets a handler take the next of a series (the workload's arrivals)
        inline, with the same effect as an event of its own and without the heap."""
        heap = self._heap
        if (heap and heap[0][0] <= time_s) or time_s > self._until_s or self._stopped \
                or not time_s >= self.now_s:
            return False
        self.now_s = time_s
        return True

    def stop(self) -> None:
        self._stopped = True

    def run(self, until_s: float = math.inf) -> None:
        """Process events in order until the heap is empty, `stop()` or `until_s` is passed."""
        heap = self._heap
        pop = heapq.heappop
        count = 0
        self._until_s = until_s
        try:
            while heap and not self._stopped:
                if heap[0][0] > until_s:
                    break
                time_s, _prio, _seq, handler, args = pop(heap)
                self.now_s = time_s
                count += 1
                handler(*args)
        finally:
            self.num_events += count
            self._until_s = math.inf
        if until_s != math.inf and not self._stopped:
            self.now_s = max(self.now_s, until_s)
