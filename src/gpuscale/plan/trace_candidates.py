"""The schedule candidates of a trace search and how they are narrowed (issue 27).

A candidate is a schedule (the daily profile x the measured replicas per request/s x a
margin) deployed with one `TraceConfig` (cold start, release, how steps act;
plan/trace_configs.py). The search narrows them cheapest first:

1. *the analytic proxy* ranks every configuration at margin 1 by the replica-hours its
   schedule bills (raised a reaction time ahead of each slot, held after each drop);
2. *the steepest ramp* (a short window where the rate rises the most within a reaction
   time) screens each cold-start option by simulation: a configuration whose capacity does
   not arrive before that ramp is dropped;
3. *the whole fit window* decides, in rounds of parallel runs (`fit_stage`): the cheapest
   configuration by the proxy at margins 1.0 and 0.9 (then 1.15 and 1.3 when neither meets
   the SLO) beside the always-on fleets, and the runner-up configuration at the winning
   margin, so the proxy's choice is confirmed or refuted by simulation. The cheapest in
   simulated GPU-hours that meets the SLO wins.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from gpuscale.plan.history import Window
from gpuscale.plan.model import CronWindow, EvidenceRow
from gpuscale.plan.schedule import Sizing, cron_windows
from gpuscale.plan.trace_configs import TraceConfig, proxy_replica_hours, schedule_wants
from gpuscale.units import SECONDS_PER_DAY

if TYPE_CHECKING:
    from gpuscale.plan.trace_search import TraceSearch

FIRST_MARGINS = (1.0, 0.9)  # tried together on the whole fit window
HIGHER_MARGINS = (1.15, 1.3)  # when neither of the first meets the SLO
ALWAYS_ON_STEPS = 2  # always-on fleets below the busiest stretch's tried on the fit window



@dataclass(frozen=True, eq=False)  # compared by identity (it holds an array)
class ScheduleCandidate:
    margin: float
    config: TraceConfig
    floor: int
    windows: tuple[CronWindow, ...]
    wants: np.ndarray  # replicas wanted at each minute of the day (UTC)
    tolerance: float | None  # behavior.scaleUp.tolerance the steps need (None: the default)
    proxy_replica_h: float  # replica-hours a day the schedule bills (the ranking proxy)

    @property
    def scale_down_window_s(self) -> int:
        return self.config.release.scale_down_window_s

    @property
    def label(self) -> str:
        return f"schedule x{self.margin:g}, {self.config.label}"

    def initial_at(self, start_s: float, day_offset_s: float) -> int:
        minute = int(((start_s + day_offset_s) % SECONDS_PER_DAY) // 60)
        return int(self.wants[minute])


def candidate(profile: np.ndarray, sizing: Sizing, margin: float, config: TraceConfig,
              ceiling: int) -> ScheduleCandidate:
    wants, tolerance = schedule_wants(profile, sizing, margin, config, ceiling)
    floor = int(wants.min())
    return ScheduleCandidate(margin, config, floor, cron_windows(wants, floor), wants, tolerance,
                             proxy_replica_hours(wants, config))


def ranked(profile: np.ndarray, sizing: Sizing, configs: list[TraceConfig], ceiling: int
           ) -> list[ScheduleCandidate]:
    """Every configuration at margin 1, cheapest by the proxy first; a configuration that
    ships the same thing as a cheaper one (steps that act either way) is left out. Ties keep
    the step mode that needs no per-direction tolerance."""
    cands = [candidate(profile, sizing, 1.0, c, ceiling) for c in configs]
    cands.sort(key=lambda c: (c.proxy_replica_h, c.tolerance is not None, c.config.label))
    out: list[ScheduleCandidate] = []
    for c in cands:
        if not any(_same(c, o) for o in out):
            out.append(c)
    return out


def _same(a: ScheduleCandidate, b: ScheduleCandidate) -> bool:
    return (a.tolerance == b.tolerance and a.config.cold == b.config.cold
            and a.config.release == b.config.release and np.array_equal(a.wants, b.wants))


def screen_on_ramp(s: TraceSearch, cands: list[ScheduleCandidate], ramp_of, day_offset: float
                   ) -> list[ScheduleCandidate]:
    """The cheapest candidate of each cold-start option on its steepest ramp (`ramp_of(config)`:
    the window depends on the option's reaction time); the candidates of an option and step
    mode that missed the SLO there are dropped (the other step mode asks at least as much),
    unless every one missed (then the margins on the whole window decide)."""
    screened: dict[str, ScheduleCandidate] = {}
    for c in cands:
        screened.setdefault(c.config.cold.name, c)
    scenarios, labels = [], []
    for c in screened.values():
        ramp: Window = ramp_of(c.config)
        initial = c.initial_at(ramp.start_s, day_offset)
        scenarios.append(s.scenario(ramp, s.keda("plan", c, initial), initial,
                                    setup=s.setup_of(c)))
        labels.append(f"screen on {ramp.label}: {c.label}")
    rows = s.run(scenarios, labels)
    failed = set()
    for c, row in zip(screened.values(), rows, strict=True):
        s.screen_rows.append(replace(row, min_replicas=c.floor, why=s.why(row)))
        if not row.meets_slo:
            failed.add((c.config.cold.name, c.config.steps))
    kept = [c for c in cands if (c.config.cold.name, c.config.steps) not in failed]
    return kept or cands


def runner_up(best: ScheduleCandidate, cands: list[ScheduleCandidate]
              ) -> ScheduleCandidate | None:
    """The cheapest other cold start or release by the proxy: simulated beside the winner so
    the choice the proxy made is confirmed by simulation."""
    return next((c for c in cands if (c.config.cold.name, c.config.release.name)
                 != (best.config.cold.name, best.config.release.name)), None)


@dataclass
class FitStage:
    """What the whole fit window decided: the schedules simulated there (in order) with their
    rows, and the always-on fleets tried, the smallest that met the SLO first."""

    tried: list[ScheduleCandidate]
    rows: list[EvidenceRow]
    always_n: int
    always_rows: list[EvidenceRow]


def fit_stage(s: TraceSearch, fit: Window, profile: np.ndarray, sizing: Sizing,
              cands: list[ScheduleCandidate], n_busy: int, day_offset: float) -> FitStage:
    """The whole fit window, in rounds of runs that need nothing from each other, so the
    workers stay busy: (1) the best configuration at margins 1.0 and 0.9 beside the busiest
    stretch's always-on fleet and the one below it; (2) the runner-up configuration at the
    winning margin, or, when neither margin met the SLO, the best and the runner-up at 1.15
    (then 1.3), and the always-on fleet two below when the one below met it."""
    best, other = cands[0], runner_up(cands[0], cands)

    def at(c: ScheduleCandidate, margin: float) -> ScheduleCandidate:
        return candidate(profile, sizing, margin, c.config, s.max_replicas)

    tried = [at(best, m) for m in FIRST_MARGINS]
    fleets = [n for n in (n_busy, n_busy - 1) if n >= 1]
    rows = run_fit(s, fit, tried, fleets, day_offset)
    sched, always = rows[:len(tried)], dict(zip(fleets, rows[len(tried):], strict=True))
    higher, ran_other = list(HIGHER_MARGINS), other is None
    while not s.budget.spent():
        met = [(r.gpu_hours, c.margin) for c, r in zip(tried, sched, strict=True) if r.meets_slo]
        if (met and ran_other) or (not met and not higher):
            break
        margin = min(met)[1] if met else higher.pop(0)
        more = [] if met else [at(best, margin)]
        if other is not None:
            more.append(at(other, margin))
            ran_other = True
        down = [n for n in [_next_fleet_down(always, n_busy)] if n]
        new = run_fit(s, fit, more, down, day_offset)
        tried, sched = tried + more, sched + new[:len(more)]
        always.update(zip(down, new[len(more):], strict=True))
    last = _next_fleet_down(always, n_busy)
    if last and not s.budget.spent():
        always[last] = run_fit(s, fit, [], [last], day_offset)[0]
    return FitStage(tried, sched, *_always_on(always, n_busy))


def _next_fleet_down(always: dict[int, EvidenceRow], n_busy: int) -> int | None:
    """The next always-on fleet to try: one below the smallest that met the SLO, while every
    one tried met it, at most ALWAYS_ON_STEPS below the busiest stretch's fleet."""
    smallest = min(always)
    if not all(r.meets_slo for r in always.values()) or smallest <= max(1, n_busy
                                                                        - ALWAYS_ON_STEPS):
        return None
    return smallest - 1


def _always_on(always: dict[int, EvidenceRow], n_busy: int) -> tuple[int, list[EvidenceRow]]:
    """(the smallest always-on fleet that met the SLO on the fit window, its row first and the
    others tried); the busiest stretch's fleet when none did (the SLO is a share of all the
    window's requests, so the quieter hours may carry a smaller fleet than the busiest)."""
    met = [n for n, r in always.items() if r.meets_slo]
    best = min(met) if met else n_busy
    return best, [always[best]] + [always[n] for n in sorted(always, reverse=True) if n != best]


def run_fit(s: TraceSearch, fit: Window, cands: list[ScheduleCandidate], fleets: list[int],
            day_offset: float) -> list[EvidenceRow]:
    """The candidates and the always-on fleets of `fleets` on the whole fit window, in
    parallel."""
    scenarios, labels = [], []
    for c in cands:
        initial = c.initial_at(fit.start_s, day_offset)
        scenarios.append(s.scenario(fit, s.keda("plan", c, initial), initial,
                                    setup=s.setup_of(c)))
        labels.append(f"{s.opt.label}, {s.scaler.label}, {c.label}")
    for n in fleets:
        scenarios.append(s.scenario(fit, s.fixed(n), n))
        labels.append(f"{s.opt.label}, always on {n}")
    rows = s.run(scenarios, labels) if scenarios else []
    floors = [c.floor for c in cands] + fleets
    return [replace(r, min_replicas=f) for r, f in zip(rows, floors, strict=True)]
