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
# --horizontal-pod-autoscaler-tolerance (layer3 1.1): a usage ratio within 1 +- 0.1 keeps the
# count. KEDA's cron metric is External AverageValue with target 1 and value desiredReplicas
# (autoscaling/keda_cron.py), so its ratio is desired / current: a step from 10 to 11 replicas
# (ratio 1.1) is inside the tolerance and does nothing.
DEFAULT_TOLERANCE = 0.1


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

    def with_quiet(self, quiet_rps: float, n_quiet: int | None) -> Sizing:
        """This sizing with the quietest stretch's measurement (`n_quiet` replicas met the
        SLO at `quiet_rps`), where it measures anything: one replica there says only that
        the quiet rate is within one replica's capacity (a fleet cannot go below 1), so
        1 / rate is a bound, not a ratio, and interpolating towards it sized the day's middle
        hours a replica high (8-GPU replicas: 2 asked at 3 req/s where one served 3.5)."""
        if n_quiet is None or n_quiet <= 1 or quiet_rps <= 0:
            return self
        return Sizing(quiet_rps, n_quiet / quiet_rps, self.busy_rps, self.busy_per_rps)

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


def _up_steps(wants: np.ndarray) -> list[tuple[int, int]]:
    """(before, after) of every rise of `wants` around the day."""
    before = np.roll(wants, 1)
    rises = np.flatnonzero(wants > before)
    return [(int(before[i]), int(wants[i])) for i in rises]


def step_acts(before: int, after: int, tolerance: float = DEFAULT_TOLERANCE) -> bool:
    """Whether a cron step from `before` to `after` replicas changes the count: the HPA keeps
    it while the ratio is within [1 - down, 1 + up] (autoscaling/replica_calc.py, the same
    float test as the controller), so 10 -> 11 (ratio 1.1) does not act at 0.1."""
    return not after / max(1, before) <= 1.0 + tolerance


def step_tolerance(wants: np.ndarray) -> float | None:
    """The scale-up tolerance (`behavior.scaleUp.tolerance`, per direction: KEP-4951, beta and
    on by default since Kubernetes 1.34, layer3 1.7) under which every rise of the schedule
    acts: half its smallest relative step, rounded down to 0.001, so the reactive triggers
    keep a band against noise. None when the cluster default already lets every step act."""
    steps = _up_steps(wants)
    if all(step_acts(before, after) for before, after in steps):
        return None
    smallest = min(after / max(1, before) - 1.0 for before, after in steps)
    return math.floor(smallest / 2 * 1000) / 1000


def rounded_to_act(wants: np.ndarray, ceiling: int) -> np.ndarray:
    """The schedule with every rise lifted until it acts under the default tolerance
    (desired > 1.1 x current), for clusters without the per-direction tolerance: a step from
    10 asks 12, not 11 (it costs a replica; the search weighs that). Runs of equal wants are
    windows and are lifted whole, in time order from the quietest minute."""
    shift = int(np.argmin(wants))
    day = np.roll(wants, -shift)  # starts at a trough: every rise has its level before it
    out = day.copy()
    edges = np.flatnonzero(np.diff(day)) + 1
    starts, ends = np.r_[0, edges], np.r_[edges, len(day)]
    for k in range(1, len(starts)):
        before, level = out[starts[k] - 1], day[starts[k]]
        if before < level and not step_acts(before, level):
            out[starts[k]:ends[k]] = max(level, min(
                ceiling, math.floor(before * (1 + DEFAULT_TOLERANCE)) + 1))
    return np.roll(out, shift)


def held_replicas(wants: np.ndarray, hold_s: float) -> np.ndarray:
    """What a schedule bills, per minute: capacity is let go only `hold_s` after the want
    drops (the HPA's scale-down stabilization window, then Karpenter's consolidateAfter
    before the emptied node leaves), so each minute pays the largest want of the `hold_s`
    before it. The cost proxy that ranks schedules before any is simulated."""
    hold_min = max(0, math.ceil(hold_s / 60.0))
    out = wants.copy()
    for shift in range(1, min(hold_min, MINUTES_PER_DAY) + 1):
        out = np.maximum(out, np.roll(wants, shift))
    return out


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
