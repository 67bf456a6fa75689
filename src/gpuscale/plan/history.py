"""A trace as a history: the window the plan fits on, the one it checks on, and the daily profile.

The plan simulates all the traffic it is given. A history is split in two: the fit window,
on which candidates are simulated and the cheapest that meets the SLO wins, and the check
window, held out, on which the winner, the cheapest always-on fleet and the baseline are
simulated again and reported (`check_traffic` of the workload when the input gives another
trace of the same service, else the last day of a history of two days or more, else its last
`check_frac`). Time of day: second 0 of the (windowed) trace is `start_time` on the wall
clock (00:00 UTC by default), which is what the learned KEDA cron schedule reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from gpuscale.errors import UserInputError
from gpuscale.units import SECONDS_PER_DAY
from gpuscale.workloads.base import Requests
from gpuscale.workloads.replay import TraceWorkload

MINUTE_S = 60.0
WHOLE_HISTORY = "the whole history"  # the label of the replay's window without check_traffic


@dataclass(frozen=True)
class Window:
    """[start_s, end_s) of a trace's timeline (seconds from its first request)."""

    start_s: float
    end_s: float
    label: str

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    def describe(self, start_time: datetime) -> str:
        t0 = start_time + timedelta(seconds=self.start_s)
        t1 = start_time + timedelta(seconds=self.end_s)
        return (f"{self.label}: {t0:%Y-%m-%d %H:%M} - {t1:%Y-%m-%d %H:%M} UTC "
                f"({self.duration_s / 3600:.1f} h)")


@dataclass(frozen=True)
class History:
    """The fit and check windows of one workload's trace (the check may be another trace)."""

    span_s: float
    fit: Window
    check: Window
    check_is_other_trace: bool
    how: str  # one line: which windows and why


def read_history(traffic: TraceWorkload, base_dir: Path, field: str,
                 source: str | None = None) -> Requests:
    """The trace as recorded (its windows are cut from it); a reader's error said at the
    input's file and field (`traffic`, `check_traffic`) too."""
    if traffic.repeat > 1 or traffic.max_requests is not None:
        raise UserInputError("a trace planned as a history cannot use repeat or max_requests "
                             "(its windows are cut from the trace as recorded); give the "
                             "trace as it is", source=source, field=field)
    try:
        return traffic.generate(np.random.default_rng(0), base_dir)
    except UserInputError as exc:
        raise UserInputError(str(exc), source=source, field=field) from None


def trace_end_s(arrival_s: np.ndarray) -> float:
    """The history's length: up to the minute after its last arrival."""
    last = float(arrival_s[-1]) if len(arrival_s) else 0.0
    return max(MINUTE_S, math.floor(last / MINUTE_S) * MINUTE_S + MINUTE_S)


def split_history(arrival_s: np.ndarray, *, check_s: float | None, check_frac: float,
                  other_check_end_s: float | None, source: str) -> History:
    """Fit and check windows. `other_check_end_s`: the check is another trace of that length."""
    span = trace_end_s(arrival_s)
    if other_check_end_s is not None:
        return History(span, Window(0.0, span, "fit (the whole trace)"),
                       Window(0.0, other_check_end_s, "check (check_traffic)"), True,
                       "fitted on the whole trace, checked on check_traffic, another trace of "
                       "the same service")
    if check_s is not None:
        if check_s >= span:
            raise UserInputError(
                f"the history spans {span:g} s, not longer than the held-out part it must leave "
                f"for checking ({check_s:g} s); give a longer trace, a smaller "
                "simulation.check_s, or check_traffic", source=source, field="simulation.check_s")
        held, why = check_s, f"the last {check_s:g} s held out (simulation.check_s)"
    elif span >= 2 * SECONDS_PER_DAY:
        held, why = SECONDS_PER_DAY, "the last day held out (a history of two days or more)"
    else:
        held = math.floor(span * check_frac / MINUTE_S) * MINUTE_S
        why = f"the last {check_frac:.0%} held out (a history shorter than two days)"
    if held < MINUTE_S or span - held < MINUTE_S:
        raise UserInputError(
            f"the history spans {span:g} s: too short to hold out {held:g} s for checking and "
            "fit on the rest; give a longer trace or check_traffic", source=source,
            field="traffic")
    cut = span - held
    fit, check = Window(0.0, cut, "fit"), Window(cut, span, "check (held out)")
    for w, field, what in ((fit, "traffic", "fit the plan on"),
                           (check, "simulation.check_s", "check the plan on")):
        lo, hi = np.searchsorted(arrival_s, [w.start_s, w.end_s])
        if hi == lo:
            raise UserInputError(
                f"the {w.label} window ({w.start_s:g}-{w.end_s:g} s of the history, {why}) "
                f"holds no request: nothing to {what}; hold out another part "
                "(simulation.check_s, check_frac) or give check_traffic", source=source,
                field=field)
    return History(span, fit, check, False, why)


def minute_counts(arrival_s: np.ndarray, window: Window) -> np.ndarray:
    """Arrivals in each whole minute of `window`."""
    minutes = max(1, round(window.duration_s / MINUTE_S))
    lo, hi = np.searchsorted(arrival_s, [window.start_s, window.end_s])
    index = ((arrival_s[lo:hi] - window.start_s) // MINUTE_S).astype(np.int64)
    return np.bincount(np.minimum(index, minutes - 1), minlength=minutes)


def busiest_window(arrival_s: np.ndarray, within: Window, length_s: float) -> Window:
    """The `length_s` stretch of `within` (on whole minutes) with the most arrivals: the short
    representative window the search prunes on."""
    counts = minute_counts(arrival_s, within)
    width = max(1, min(len(counts), int(length_s // MINUTE_S)))
    sums = np.convolve(counts, np.ones(width, np.int64), mode="valid")
    first = int(np.argmax(sums))  # the earliest of equal stretches: deterministic
    start = within.start_s + first * MINUTE_S
    return Window(start, start + width * MINUTE_S, "busiest stretch")


def quietest_window(arrival_s: np.ndarray, within: Window, length_s: float) -> Window:
    """The `length_s` stretch of `within` with the fewest arrivals that still has traffic:
    the second representative window (a fleet at a low rate pools less of its bursts)."""
    counts = minute_counts(arrival_s, within)
    width = max(1, min(len(counts), int(length_s // MINUTE_S)))
    sums = np.convolve(counts, np.ones(width, np.int64), mode="valid")
    live = np.flatnonzero(sums > 0)
    if len(live) == 0:
        return Window(within.start_s, within.start_s, "quietest stretch")
    first = int(live[np.argmin(sums[live])])
    start = within.start_s + first * MINUTE_S
    return Window(start, start + width * MINUTE_S, "quietest stretch")


def steepest_ramp_window(arrival_s: np.ndarray, within: Window, rise_s: float, smooth_s: float,
                         after_s: float) -> Window:
    """The stretch of `within` where the smoothed rate rises the most over `rise_s` (a
    reaction time: a rise a reactive scaler cannot follow), from `rise_s` before that rise to
    `after_s` past its top: the second short window the search screens on (capacity must be
    asked for before the demand)."""
    rates = smoothed_rates(arrival_s, within, smooth_s)
    k = max(1, math.ceil(rise_s / MINUTE_S))
    if len(rates) <= k:
        return Window(within.start_s, within.end_s, "steepest ramp")
    i = int(np.argmax(rates[k:] - rates[:-k]))  # the earliest of equal rises: deterministic
    first = max(0, i - k)
    last = min(len(rates), i + k + math.ceil(after_s / MINUTE_S))
    return Window(within.start_s + first * MINUTE_S, within.start_s + last * MINUTE_S,
                  "steepest ramp")


def held_out_stretches(arrival_s: np.ndarray, fit_end_s: float, length_s: float
                       ) -> list[Window]:
    """Stretches of `length_s` after `fit_end_s` (traffic a plan fitted on [0, fit_end_s) never
    saw): the history's last, and its busiest after the fit when that is another. None when
    the history ends within a minute of the fit."""
    span = trace_end_s(arrival_s)
    if span - fit_end_s < MINUTE_S:
        return []
    rest = Window(fit_end_s, span, "held out")
    last_start = max(fit_end_s, span - length_s)
    out = [Window(last_start, min(span, last_start + length_s), "held-out last stretch")]
    busy = busiest_window(arrival_s, rest, length_s)
    if busy.start_s != last_start:
        out.append(Window(busy.start_s, busy.end_s, "held-out busiest stretch"))
    return out


def smoothed_rates(arrival_s: np.ndarray, window: Window, smooth_s: float) -> np.ndarray:
    """Per minute of `window`: the mean arrival rate over the `smooth_s` around it (req/s).
    A minute is too noisy to size on and a half-hour mean hides the bursts a fleet must
    absorb; a few minutes is what a cold-starting fleet cannot follow."""
    counts = minute_counts(arrival_s, window).astype(np.float64)
    width = max(1, min(len(counts), int(smooth_s // MINUTE_S)))
    return np.convolve(counts, np.ones(width) / (width * MINUTE_S), mode="same")


def peak_rate_rps(arrival_s: np.ndarray, window: Window, smooth_s: float) -> float:
    """The largest smoothed rate of `window` (what its fleet had to absorb)."""
    return float(smoothed_rates(arrival_s, window, smooth_s).max(initial=0.0))


def daily_profile_rps(arrival_s: np.ndarray, window: Window, day_offset_s: float,
                      slot_s: float, smooth_s: float) -> np.ndarray:
    """Per `slot_s` slot of the day (UTC): the largest smoothed rate (`smoothed_rates`) in it,
    the largest over the days the window covers; NaN for a slot the window never saw (or saw
    less than half of). `day_offset_s`: seconds past midnight of trace second 0."""
    slots = int(SECONDS_PER_DAY // slot_s)
    best = np.full(slots, np.nan)
    rates = smoothed_rates(arrival_s, window, smooth_s)
    minute_of_day = ((window.start_s + day_offset_s) // MINUTE_S
                     + np.arange(len(rates))) % (SECONDS_PER_DAY // MINUTE_S)
    slot = (minute_of_day * MINUTE_S // slot_s).astype(np.int64)
    # each occurrence of a slot (a day's) counts when the window holds half of it
    occurrence = (window.start_s // MINUTE_S + np.arange(len(rates))
                  + day_offset_s // MINUTE_S) // (slot_s // MINUTE_S)
    for occ in np.unique(occurrence):
        mask = occurrence == occ
        if mask.sum() * MINUTE_S >= slot_s / 2:
            k = int(slot[mask][0])
            peak = float(rates[mask].max())
            best[k] = peak if np.isnan(best[k]) else max(best[k], peak)
    return best


def fill_unseen(profile: np.ndarray) -> np.ndarray:
    """Slots the fit window never saw take the last seen slot before them (around the clock):
    an hour not in the history is planned like the one it follows, and the check says how
    that went."""
    if np.all(np.isnan(profile)):
        return profile
    out = profile.copy()
    n = len(out)
    start = int(np.flatnonzero(~np.isnan(out))[0])
    last = out[start]
    for i in range(start, start + n):
        k = i % n
        if np.isnan(out[k]):
            out[k] = last
        else:
            last = out[k]
    return out
