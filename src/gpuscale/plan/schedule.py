"""Scheduled capacity: KEDA cron windows learned from the history's daily profile.

Reactive scaling loses whenever a cold start (node + image + weights + engine) is longer
than the ramp it must follow. A daily profile is known in advance, so the plan asks for the
capacity of each slot of the day *before* it starts: each minute m of the day wants the
replicas of its own slot and of the slot `lead_s` later (the reaction time: signal lag,
node start-up and cold start), and runs of equal wants become KEDA `cron` triggers beside
the reactive one (KEDA feeds each trigger's metric to the HPA, which takes the max).

The replicas a slot needs are `ceil(margin x replicas per request/s x rate)`, where the
replicas per request/s are measured, not assumed (`Sizing`): the smallest always-on fleets
that met the SLO on the history's busiest and quietest stretches, over those stretches' peak
10-minute rates (their bursts come with them), interpolated between the two rates. `margin`
is a search dimension.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuscale.plan.model import CronWindow
from gpuscale.units import SECONDS_PER_DAY

MINUTES_PER_DAY = int(SECONDS_PER_DAY // 60)


@dataclass(frozen=True)
class Sizing:
    """Replicas per request/s, measured at two rates (the busiest and the quietest stretch of
    the fit window) and interpolated between them: a fleet at a low rate needs more replicas
    per request/s than one at a high rate (fewer replicas pool less of the burstiness), so a
    single ratio would under-size the quiet hours. Outside the two rates, the nearer ratio."""

    quiet_rps: float
    quiet_per_rps: float
    busy_rps: float
    busy_per_rps: float

    def replicas(self, rate_rps: np.ndarray) -> np.ndarray:
        per = np.interp(rate_rps, [self.quiet_rps, self.busy_rps],
                        [self.quiet_per_rps, self.busy_per_rps])
        return per * rate_rps


def slot_replicas(profile_rps: np.ndarray, sizing: Sizing, margin: float,
                  ceiling: int) -> np.ndarray:
    """Replicas each slot of the day needs (at least 1, at most `ceiling`)."""
    need = np.ceil(margin * sizing.replicas(np.nan_to_num(profile_rps)) - 1e-9)
    return np.clip(need, 1, max(1, ceiling)).astype(np.int64)


def minute_wants(need: np.ndarray, lead_s: float) -> np.ndarray:
    """Replicas wanted at each minute of the day: its own slot's and those of every slot that
    starts within `lead_s` after it (capacity must be up when the slot begins)."""
    slot_min = MINUTES_PER_DAY // len(need)
    per_minute = np.repeat(need, slot_min)
    lead_min = max(0, math.ceil(lead_s / 60.0))
    wants = per_minute.copy()
    for shift in range(1, min(lead_min, MINUTES_PER_DAY) + 1):
        wants = np.maximum(wants, np.roll(per_minute, -shift))
    return wants


def _cron_at(minute_of_day: int) -> str:
    return f"{minute_of_day % 60} {minute_of_day // 60} * * *"


def cron_windows(wants: np.ndarray, floor: int, timezone: str = "Etc/UTC"
                 ) -> tuple[CronWindow, ...]:
    """Runs of equal wants above `floor` as daily cron windows, [start, end) on the minute;
    a run across midnight is one window (KEDA reads start 22:00, end 06:00 as one night)."""
    n = len(wants)
    if np.all(wants == wants[0]):
        return () if wants[0] <= floor else (
            CronWindow("0 0 * * *", "59 23 * * *", int(wants[0]), timezone),)
    # start the walk at a change, so no run is split at midnight
    first = next(i for i in range(n) if wants[i] != wants[i - 1])
    out: list[tuple[int, int, int]] = []
    i = first
    while i < first + n:
        value, j = wants[i % n], i
        while j < first + n and wants[j % n] == value:
            j += 1
        if value > floor:
            out.append((i % n, j % n, int(value)))
        i = j
    return tuple(CronWindow(_cron_at(a), _cron_at(b), v, timezone) for a, b, v in sorted(out))


def learned_schedule(profile_rps: np.ndarray, sizing: Sizing, margin: float,
                     lead_s: float, ceiling: int) -> tuple[int, tuple[CronWindow, ...]]:
    """(floor, cron windows): the floor is the quietest minute's want, the windows lift
    capacity above it ahead of each busier slot."""
    wants = minute_wants(slot_replicas(profile_rps, sizing, margin, ceiling), lead_s)
    floor = int(wants.min())
    return floor, cron_windows(wants, floor)


def describe(floor: int, windows: tuple[CronWindow, ...]) -> str:
    if not windows:
        return f"{floor} replicas around the clock"
    parts = [f"{w.desired_replicas} from {_hhmm(w.start)} to {_hhmm(w.end)}" for w in windows]
    return f"floor {floor}; " + ", ".join(parts) + " (UTC)"


def _hhmm(expr: str) -> str:
    minute, hour = expr.split()[:2]
    return f"{int(hour):02d}:{int(minute):02d}"
