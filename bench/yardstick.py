"""A machine yardstick measured in the benchmark's own process, so figures from different
machines (and from one shared machine under different load) compare.

The yardstick is what a discrete-event loop does per event at the least: one `heapq.heappop`
and one `heapq.heappush` on a 1,000-item heap of `(float, int)` pairs. One *op* is one pop plus
one push; the figure is ops per wall second over 1,000,000 of them (issue 16). A benchmark's
requests/s times `REFERENCE_OPS_PER_S / yardstick` is its figure on a machine whose yardstick
is 1.4M ops/s (what the issue's goal of 100k requests/s is stated against).
"""

from __future__ import annotations

import heapq
import random
import time

REFERENCE_OPS_PER_S = 1_400_000.0
HEAP_ITEMS = 1_000
NUM_OPS = 1_000_000


def heapq_ops_per_s(num_ops: int = NUM_OPS, *, seed: int = 0) -> float:
    """Pops-and-pushes per second on a 1,000-item heap of (time_s, seq) pairs; best of 3."""
    rng = random.Random(seed)
    best_s = float("inf")
    for _ in range(3):
        heap = [(rng.random(), i) for i in range(HEAP_ITEMS)]
        heapq.heapify(heap)
        # Increments drawn up front so the timed loop is the heap and nothing else.
        steps = [rng.random() for _ in range(1024)]
        pop, push = heapq.heappop, heapq.heappush
        seq = HEAP_ITEMS
        t0 = time.perf_counter()
        for k in range(num_ops):
            time_s, _ = pop(heap)
            push(heap, (time_s + steps[k & 1023], seq))
            seq += 1
        best_s = min(best_s, time.perf_counter() - t0)
    return num_ops / best_s


def normalised(rate_per_s: float, yardstick_ops_per_s: float) -> float:
    """`rate_per_s` as it would read on a machine whose yardstick is REFERENCE_OPS_PER_S."""
    return rate_per_s * REFERENCE_OPS_PER_S / yardstick_ops_per_s


def report_line(label: str, rate_per_s: float, yardstick_ops_per_s: float) -> str:
    return (f"{label}: {rate_per_s:,.0f} requests/s  (heapq yardstick {yardstick_ops_per_s:,.0f} "
            f"ops/s in this process; normalised to {REFERENCE_OPS_PER_S / 1e6:.1f}M/s: "
            f"{normalised(rate_per_s, yardstick_ops_per_s):,.0f} requests/s)")


if __name__ == "__main__":
    print(f"heapq yardstick: {heapq_ops_per_s():,.0f} ops/s (1 op = 1 pop + 1 push, 1,000-item heap)")
