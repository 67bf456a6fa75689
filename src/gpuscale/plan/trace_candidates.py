"""The schedule candidates of a trace search and how they are narrowed (issue 27).

A candidate is a schedule (the daily profile x the measured replicas per request/s x a
margin) deployed with one `TraceConfig` (cold start, release, how steps act;
plan/trace_configs.py). The search narrows them cheapest first:

1. *the analytic proxy* ranks every configuration at margin 1 by the replica-hours its
   schedule bills (raised a reaction time ahead of each slot, held after each drop);
2. *the steepest ramp* (a short window where the rate rises the most within a reaction
   time) screens each cold-start option x step mode by simulation: a configuration whose
   capacity does not arrive before that ramp is dropped;
3. *the whole fit window* decides: the cheapest configuration by the proxy at margins 1.0
   and 0.9 (then 1.15 and 1.3 when neither meets the SLO), then the runner-up configuration
   at the winning margin beside the always-on fleet, so the proxy's choice is confirmed or
   refuted by simulation. The cheapest in simulated GPU-hours that meets the SLO wins.
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
    """The cheapest candidate of each cold-start option x step mode on its steepest ramp
    (`ramp_of(config)`: the window depends on the option's reaction time); the candidates
    whose pair missed the SLO there are dropped, unless every pair missed (then the margins
    on the whole window decide)."""
    pairs: dict[tuple[str, str], ScheduleCandidate] = {}
    for c in cands:
        pairs.setdefault((c.config.cold.name, c.config.steps), c)
    scenarios, labels = [], []
    for c in pairs.values():
        ramp: Window = ramp_of(c.config)
        initial = c.initial_at(ramp.start_s, day_offset)
        scenarios.append(s.scenario(ramp, s.keda("plan", c, initial), initial,
                                    setup=s.setup_of(c)))
        labels.append(f"screen on {ramp.label}: {c.label}")
    rows = s.run(scenarios, labels)
    failed = set()
    for (key, c), row in zip(pairs.items(), rows, strict=True):
        s.screen_rows.append(replace(row, min_replicas=c.floor, why=s.why(row)))
        if not row.meets_slo:
            failed.add(key)
    kept = [c for c in cands if (c.config.cold.name, c.config.steps) not in failed]
    return kept or cands


def runner_up(best: ScheduleCandidate, cands: list[ScheduleCandidate]
              ) -> ScheduleCandidate | None:
    """The cheapest other cold start or release by the proxy: simulated beside the winner so
    the choice the proxy made is confirmed by simulation."""
    return next((c for c in cands if (c.config.cold.name, c.config.release.name)
                 != (best.config.cold.name, best.config.release.name)), None)


def fit_rows(s: TraceSearch, fit: Window, cands: list[ScheduleCandidate], day_offset: float,
             always: int | None) -> list[EvidenceRow]:
    """The candidates (and the always-on fleet of `always`) on the whole fit window, in
    parallel."""
    scenarios, labels = [], []
    for c in cands:
        initial = c.initial_at(fit.start_s, day_offset)
        scenarios.append(s.scenario(fit, s.keda("plan", c, initial), initial,
                                    setup=s.setup_of(c)))
        labels.append(f"{s.opt.label}, {s.scaler.label}, {c.label}")
    if always is not None:
        scenarios.append(s.scenario(fit, s.fixed(always), always))
        labels.append(f"{s.opt.label}, always on {always}")
    rows = s.run(scenarios, labels)
    floors = [c.floor for c in cands] + ([always] if always is not None else [])
    return [replace(r, min_replicas=f) for r, f in zip(rows, floors, strict=True)]


def margin_ladder(s: TraceSearch, fit: Window, profile: np.ndarray, sizing: Sizing,
                  best: ScheduleCandidate, day_offset: float
                  ) -> tuple[list[ScheduleCandidate], list[EvidenceRow]]:
    """The best configuration at margins 1.0 and 0.9 on the whole fit window, then at 1.15
    and 1.3 when neither met the SLO (and the time budget allows)."""
    def at(margins) -> list[ScheduleCandidate]:
        return [candidate(profile, sizing, m, best.config, s.max_replicas) for m in margins]

    cands = at(FIRST_MARGINS)
    rows = fit_rows(s, fit, cands, day_offset, None)
    if not any(r.meets_slo for r in rows) and not s.budget.spent():
        more = at(HIGHER_MARGINS)
        cands, rows = cands + more, rows + fit_rows(s, fit, more, day_offset, None)
    return cands, rows
