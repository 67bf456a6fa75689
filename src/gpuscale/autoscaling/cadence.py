"""Shared timing helpers for planners that sample often and decide every adjustment interval.

Dynamo's planners pull metrics every `metric-pulling-interval` and act every
`adjustment-interval`; WVA samples per-pod maxima over one minute and acts every 60 s; the KPA
averages over stable and panic windows. Each keeps its memory in an immutable, bounded value
defined here, so the controllers' states stay small and hashable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuscale.autoscaling.base import AutoscalerView


def ticks_per_interval(interval_s: float, period_s: float) -> int:
    """How many controller ticks make one interval; the interval must be a whole multiple."""
    ratio = interval_s / period_s
    n = round(ratio)
    if n < 1 or not math.isclose(ratio, n, rel_tol=1e-9):
        raise ValueError(
            f"interval {interval_s} s is not a whole multiple of the sampling period {period_s} s"
        )
    return n


@dataclass(frozen=True)
class Sums:
    """Sums and sample counts of named values over the current interval (None = no sample)."""

    totals: tuple[tuple[str, float, int], ...] = ()

    def add(self, **values: float | None) -> Sums:
        acc = {name: (total, count) for name, total, count in self.totals}
        for name, value in values.items():
            if value is None:
                continue
            total, count = acc.get(name, (0.0, 0))
            acc[name] = (total + float(value), count + 1)
        return Sums(tuple((name, t, c) for name, (t, c) in sorted(acc.items())))

    def total(self, name: str) -> float:
        return next((t for n, t, _ in self.totals if n == name), 0.0)

    def mean(self, name: str) -> float | None:
        for n, t, c in self.totals:
            if n == name and c:
                return t / c
        return None


@dataclass(frozen=True)
class Stamp:
    """One timestamped sample a window keeps."""

    time_s: float
    value: float


def push_window(window: tuple[Stamp, ...], sample: Stamp, length_s: float) -> tuple[Stamp, ...]:
    """Append `sample` and drop samples that fell out of (now - length, now]: bounded by length /
    period."""
    cutoff = sample.time_s - length_s
    return tuple(s for s in window if s.time_s > cutoff) + (sample,)


def window_mean(window: tuple[Stamp, ...], now_s: float, length_s: float) -> float | None:
    """Mean of the samples in (now - length, now]; None when there are none."""
    values = [s.value for s in window if s.time_s > now_s - length_s]
    return sum(values) / len(values) if values else None


def ready_pods(view: AutoscalerView) -> int:
    return sum(1 for p in view.pods if p.phase == "Running" and p.ready)


def pods_in_flight(view: AutoscalerView) -> int:
    """Pods asked for but not serving yet (Pending, or Running but not Ready)."""
    return sum(
        1 for p in view.pods if p.phase != "Failed" and not (p.phase == "Running" and p.ready)
    )
