"""The search for a trace: the whole history simulated, scheduled capacity, a held-out check.

1. Split the history (plan/history.py): a fit window and a held-out check window.
2. Prune on a short representative window: the busiest stretch of the fit window
   (`simulation.trace_window_s` long). The smallest always-on fleet meeting the SLO there
   measures how many replicas one request/s needs, with that stretch's own bursts
   (`replicas_per_rps`); the analytic capacity only seeds this search.
3. Candidates on the whole fit window, run in parallel (plan/parallel.py): the reactive KEDA
   scaler plus a cron schedule learned from the fit window's daily profile at each margin of
   `MARGINS` (plan/schedule.py), and the always-on fleet. The cheapest in simulated GPU-hours
   that meets the SLO wins; when none does, larger margins are tried up to the always-on
   fleet, and a fleet that only meets it always on is the plan, with the reason.
4. The check window (held out): the winner, the cheapest always-on fleet that meets the SLO
   there, and the baseline (KEDA on queue depth from 1 replica, its own defaults), each
   starting from its own minimum. These three runs are the replay scenario `plan --out`
   writes, so `gpuscale compare DIR/scenarios/W.yaml` gives plan.md's check table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from gpuscale.autoscaling.keda_cron import CronTrigger, opens_within
from gpuscale.errors import UserInputError
from gpuscale.plan.hardware import HardwareOption
from gpuscale.plan.history import (
    History,
    Window,
    busiest_window,
    daily_profile_rps,
    fill_unseen,
    peak_rate_rps,
    quietest_window,
    split_history,
    trace_end_s,
)
from gpuscale.plan.inputs import PlanInput, SloInput, WorkloadInput
from gpuscale.plan.model import CronWindow, EvidenceRow
from gpuscale.plan.parallel import Runner
from gpuscale.plan.scaler import MIN_SCALE_DOWN_WINDOW_S, ScalerChoice
from gpuscale.plan.schedule import Sizing, learned_schedule, minute_wants, slot_replicas
from gpuscale.plan.search import SearchBudget, missed
from gpuscale.plan.sizing import TrafficStats, replicas_for
from gpuscale.plan.unreachable import Unreachable, analyse
from gpuscale.plan.warm_pool import CandidateSetup, candidate_scenario_dict, search_min_replicas
from gpuscale.units import SECONDS_PER_DAY
from gpuscale.workloads.replay import TraceWorkload

# Scheduled capacity relative to the measured replicas per request/s (plan/schedule.py): a
# little under (the reactive trigger covers the rest), at, and over.
MARGINS = (0.9, 1.0, 1.15, 1.3)
FINALISTS = 2  # candidates that pass the short stretches, simulated on the whole fit window
# The quietest stretch calibrates a second rate when its peak is clearly below the busiest's.
QUIET_FRAC = 0.8
ALWAYS_ON_STEPS = 2  # always-on fleets below the busiest stretch's tried on the fit window
SLOT_S = 1800.0  # the daily profile's slot: half-hour rates follow a day's ramps
# Rates are sized on their 10-minute means (history.smoothed_rates): shorter than a cold start
# plus node start-up (~10-20 min), so a burst the reactive scaler cannot catch is in them.
SMOOTH_S = 600.0
PEAK_HEADROOM = 1.2  # max replicas cover the history's busiest slot x this (as BURST_HEADROOM)


@dataclass(frozen=True, eq=False)  # compared by identity (it holds an array)
class ScheduleCandidate:
    margin: float
    floor: int
    windows: tuple[CronWindow, ...]
    wants: np.ndarray  # replicas wanted at each minute of the day (UTC)
    scale_down_window_s: int  # the generated HPA's scale-down stabilization

    @property
    def label(self) -> str:
        return f"schedule x{self.margin:g}, scale-down window {self.scale_down_window_s} s"

    def initial_at(self, start_s: float, day_offset_s: float) -> int:
        minute = int(((start_s + day_offset_s) % SECONDS_PER_DAY) // 60)
        return int(self.wants[minute])


@dataclass(frozen=True)
class TracePlan:
    """What the trace search found (the rows are evidence, in the order they ran)."""

    history: History
    replicas_per_rps: float | None
    winner: ScheduleCandidate | None  # None: always on (or nothing met the SLO)
    always_on: int | None  # the always-on fleet the plan falls back to (None: unreachable)
    max_replicas: int
    calibration: tuple[EvidenceRow, ...]
    fit: tuple[EvidenceRow, ...]
    check: tuple[EvidenceRow, ...]  # plan, baseline, re-check, fixed-best (held out)
    check_fixed: int | None
    replay: dict  # the check window's scenario with the three strategies
    why: str
    unreachable: Unreachable | None = None  # the SLO cannot be met: what can, what would


def read_arrivals(traffic: TraceWorkload, base_dir: Path, field: str) -> np.ndarray:
    if traffic.repeat > 1 or traffic.max_requests is not None:
        raise UserInputError("a trace planned as a history cannot use repeat or max_requests "
                             "(its windows are cut from the trace as recorded); give the "
                             "trace as it is", field=field)
    return traffic.generate(np.random.default_rng(0), base_dir).arrival_s


def window_workload(traffic: TraceWorkload, window: Window) -> dict:
    """The trace's `window` as a workload (times in the rate-scaled timeline)."""
    data = traffic.model_dump()
    data["start_s"] = traffic.start_s + window.start_s * traffic.rate_scale
    data["end_s"] = traffic.start_s + window.end_s * traffic.rate_scale
    return data


@dataclass
class TraceSearch:
    plan: PlanInput
    w: WorkloadInput
    stats: TrafficStats
    slo: SloInput
    opt: HardwareOption
    scaler: ScalerChoice
    setup: CandidateSetup
    base_dir: Path
    budget: SearchBudget
    runner: Runner
    screen_rows: list[EvidenceRow] = field(default_factory=list)

    # -- scenarios --------------------------------------------------------------------------
    def scenario(self, window: Window, strategy: dict, initial: int, *, other_trace: bool = False
                 ) -> dict:
        traffic = self.w.check_traffic if other_trace else self.w.traffic
        assert isinstance(traffic, TraceWorkload)
        data = candidate_scenario_dict(self.plan, self.w, self.stats, self.setup, initial)
        data["name"] = f"{self.plan.name}-{self.w.name}"
        data["workload"] = window_workload(traffic, window)
        data["duration_s"] = window.duration_s
        data["start_time"] = (self.plan.start_time + timedelta(seconds=window.start_s)
                              ).isoformat()
        per_node = self.setup.replicas_per_node
        data["cluster"]["max_nodes"] = max(data["cluster"]["max_nodes"],
                                           math.ceil(self.max_replicas / per_node))
        data["strategies"] = [open_windows_only(strategy, self.plan.start_time
                                                 + timedelta(seconds=window.start_s),
                                                 window.duration_s)]
        return data

    @property
    def max_replicas(self) -> int:
        return self.setup.max_replicas

    def keda(self, name: str, c: ScheduleCandidate, initial: int) -> dict:
        floor, windows = c.floor, c.windows
        base = candidate_scenario_dict(self.plan, self.w, self.stats, replace(
            self.setup, scale_down_window_s=c.scale_down_window_s), floor)
        keda = dict(base["strategies"][0]["autoscaler"])
        keda["min_replica_count"] = floor
        keda["max_replica_count"] = max(self.max_replicas, floor + 1)
        keda["triggers"] = list(self.setup.triggers) + [w.trigger() for w in windows]
        return {"name": name, "autoscaler": keda, "initial_replicas": initial,
                "ready_nodes": math.ceil(initial / self.setup.replicas_per_node)}

    def fixed(self, n: int) -> dict:
        return {"name": "fixed-best", "autoscaler": {"kind": "fixed", "replicas": n},
                "initial_replicas": n, "ready_nodes": math.ceil(n / self.setup.replicas_per_node)}

    def baseline(self) -> dict:
        """KEDA on queue depth from 1 replica with KEDA's and the HPA's own defaults (no plan
        window), as a team would start."""
        queue = {"query": {"metric": "vllm:num_requests_waiting", "aggregation": "sum"},
                 "threshold": self.scaler.queue_threshold}
        return {"name": "baseline-queue-depth", "autoscaler": {
            "kind": "keda", "polling_interval_s": 15.0, "min_replica_count": 1,
            "max_replica_count": max(self.max_replicas, 2), "triggers": [queue]},
            "initial_replicas": 1, "ready_nodes": 1}

    # -- runs -------------------------------------------------------------------------------
    def run(self, scenarios: list[dict], labels: list[str]) -> list[EvidenceRow]:
        rows = self.runner.run(scenarios, labels, self.base_dir, self.slo.ttft_p99_s,
                               self.slo.goodput_frac)
        return [replace(r, config=label) for r, label in zip(rows, labels, strict=True)]

    def fixed_search(self, window: Window, start: int, other_trace: bool = False,
                     tag: str = "") -> tuple[int | None, list[EvidenceRow]]:
        hi = max(start, self.gpu_limit_replicas())

        def evaluate(n: int) -> EvidenceRow:
            row = self.run([self.scenario(window, self.fixed(n), n, other_trace=other_trace)],
                           [f"{tag}always on {n}"])[0]
            return replace(row, min_replicas=n)

        return search_min_replicas(evaluate, start, hi, self.plan.simulation.max_candidates)

    def gpu_limit_replicas(self) -> int:
        limit = self.plan.cluster.max_gpus
        return max(1, limit // self.opt.gpus) if limit else 4 * self.max_replicas


def open_windows_only(strategy: dict, start: datetime, duration_s: float) -> dict:
    """The strategy without the cron windows that never open while this window's traffic
    runs (they would not act; the scenario refuses them as a schedule for other hours)."""
    keda = strategy.get("autoscaler", {})
    if keda.get("kind") != "keda":
        return strategy
    end = start + timedelta(seconds=duration_s)
    kept = [t for t in keda["triggers"] if t.get("type") != "cron"
            or opens_within(CronTrigger.model_validate(t), start, end)]
    return dict(strategy, autoscaler=dict(keda, triggers=kept))


def _why(r: EvidenceRow, slo: SloInput) -> str:
    return "meets the SLO" if r.meets_slo else missed(r, slo.ttft_p99_s, slo.goodput_frac)


def plan_trace(s: TraceSearch, source: str) -> TracePlan:
    traffic = s.w.traffic
    assert isinstance(traffic, TraceWorkload)
    arrival = read_arrivals(traffic, s.base_dir, "traffic")
    other = None
    if s.w.check_traffic is not None:
        other = trace_end_s(read_arrivals(s.w.check_traffic, s.base_dir, "check_traffic"))
    settings = s.plan.simulation
    history = split_history(arrival, check_s=settings.check_s, check_frac=settings.check_frac,
                            other_check_end_s=other, source=source)
    day_offset = s.plan.day_offset_s
    # 2. short representative windows: the busiest and the quietest stretch of the fit window,
    # a slot of the profile long at most, so the fleet measured on a stretch sized to its peak
    # 10-minute rate is what a slot sized the same way gets (a longer stretch averages its
    # calmer minutes in and under-sizes every slot)
    stretch_s = min(settings.trace_window_s, SLOT_S)
    busy = busiest_window(arrival, history.fit, stretch_s)
    busy_rps = max(peak_rate_rps(arrival, busy, SMOOTH_S), 1e-9)
    n_busy, calibration = s.fixed_search(busy, replicas_for(busy_rps, s.opt.cap.requests_per_s),
                                         tag="busiest stretch: ")
    calibration = [replace(r, why=_why(r, s.slo)) for r in calibration]
    if n_busy is None:
        return _unreachable(s, history, busy, calibration, busy_rps)
    quiet = quietest_window(arrival, history.fit, stretch_s)
    quiet_rps = peak_rate_rps(arrival, quiet, SMOOTH_S)
    sizing = Sizing(busy_rps, n_busy / busy_rps, busy_rps, n_busy / busy_rps)
    if 0 < quiet_rps < QUIET_FRAC * busy_rps:
        n_quiet, rows = s.fixed_search(quiet, max(1, math.floor(n_busy * quiet_rps / busy_rps)),
                                       tag="quietest stretch: ")
        calibration += [replace(r, why=_why(r, s.slo)) for r in rows]
        if n_quiet is not None:
            sizing = replace(sizing, quiet_rps=quiet_rps, quiet_per_rps=n_quiet / quiet_rps)
    profile = fill_unseen(daily_profile_rps(arrival, history.fit, day_offset, SLOT_S,
                                            SMOOTH_S))
    peak = math.ceil(float(sizing.replicas(np.array([np.nanmax(profile)]))[0])
                     * PEAK_HEADROOM - 1e-9)
    top = s.w.max_replicas or max(n_busy + 1, peak)
    s.setup = replace(s.setup, max_replicas=max(1, min(top, s.gpu_limit_replicas())))
    # 3. candidates: screened on the two short stretches, finalists on the whole fit window
    cands = _candidates(s, profile, sizing)
    if s.budget.spent():  # the time budget: no screening, the middle margin alone
        cands = [c for c in cands if c.margin == 1.0][:1]
    screened = _screen(s, cands, [busy] + ([quiet] if quiet.duration_s else []), day_offset) \
        if len(cands) > 1 else [(c, True) for c in cands]
    finalists = [c for c, ok in screened if ok][:FINALISTS] or \
        sorted(cands, key=lambda c: -c.margin)[:FINALISTS]
    fit_rows = _fit_rows(s, history.fit, finalists, day_offset, n_busy)
    always_row = fit_rows[-1]
    cands = finalists
    passing = [(r.gpu_hours, i) for i, r in enumerate(fit_rows[:-1]) if r.meets_slo]
    rest = [c for c, ok in screened if ok and c not in finalists][:FINALISTS]
    if not passing and rest and not s.budget.spent():
        more_rows = _fit_rows(s, history.fit, rest, day_offset, None)
        cands, fit_rows = finalists + rest, fit_rows[:-1] + more_rows + [always_row]
        passing = [(r.gpu_hours, i) for i, r in enumerate(fit_rows[:-1]) if r.meets_slo]
    # the always-on fleet on the whole fit window, not only its busiest stretch: the SLO is a
    # share of all the window's requests, so the quieter hours may carry a smaller fleet
    always_n, always_rows = _always_on(s, history.fit, n_busy, always_row)
    fit_rows = fit_rows[:-1] + [always_rows[0]]
    winner, why = _choose(cands, fit_rows, passing, always_n)
    fit_rows = [replace(r, why=_fit_why(r, i, cands, winner, s.slo))
                for i, r in enumerate(fit_rows)] + [
        replace(r, why=_why(r, s.slo) + ("; not the cheapest" if r.meets_slo else ""))
        for r in always_rows[1:]]
    plan_strategy_of = _plan_strategy(s, winner, always_n, day_offset)
    check, check_fixed, replay = _check(s, history, plan_strategy_of, n_busy, other is not None)
    per_rps = sizing.busy_per_rps
    return TracePlan(history, per_rps, winner, always_n, s.max_replicas,
                     tuple(calibration) + tuple(s.screen_rows),
                     tuple(fit_rows), tuple(check), check_fixed, replay, why)


def _always_on(s: TraceSearch, fit: Window, n_busy: int, row: EvidenceRow
               ) -> tuple[int, list[EvidenceRow]]:
    """(the smallest always-on fleet found to meet the SLO on the fit window, its row first
    and the others tried): down from the busiest stretch's fleet while it passes, at most
    ALWAYS_ON_STEPS steps (each is a whole-window run)."""
    if not row.meets_slo:
        return n_busy, [row]
    best, tried = row, []
    for n in range(n_busy - 1, max(0, n_busy - 1 - ALWAYS_ON_STEPS), -1):
        if n < 1 or s.budget.spent():
            break
        probe = replace(s.run([s.scenario(fit, s.fixed(n), n)],
                              [f"{s.opt.label}, always on {n}"])[0], min_replicas=n)
        if not probe.meets_slo:
            tried.append(probe)
            break
        tried.append(best)
        best = probe
    return best.min_replicas, [best] + tried


def _choose(cands: list[ScheduleCandidate], fit_rows: list[EvidenceRow],
            passing: list[tuple[float, int]], n_busy: int
            ) -> tuple[ScheduleCandidate | None, str]:
    always_row = fit_rows[-1]
    winner = cands[min(passing)[1]] if passing else None
    if winner is not None and always_row.meets_slo and \
            always_row.gpu_hours <= fit_rows[cands.index(winner)].gpu_hours:
        return None, (f"always on: {n_busy} replicas met the SLO on the fit window at "
                      f"{always_row.gpu_hours:.1f} GPU-h, no more than the cheapest schedule "
                      f"({fit_rows[cands.index(winner)].gpu_hours:.1f} GPU-h): the daily "
                      "swing is too small against whole replicas and the cold start for "
                      "scaling to save")
    if winner is None:
        return None, ("always on: no schedule met the SLO on the fit window; " + (
            f"{n_busy} replicas always on did" if always_row.meets_slo else
            f"neither did {n_busy} always on, the busiest stretch's fleet"))
    return winner, (f"{winner.label}: the cheapest that met the SLO on the fit window "
                    f"({fit_rows[cands.index(winner)].gpu_hours:.1f} GPU-h vs "
                    f"{always_row.gpu_hours:.1f} always on)")


def _candidates(s: TraceSearch, profile: np.ndarray, sizing: Sizing
                ) -> list[ScheduleCandidate]:
    """Every margin x scale-down window, cheapest first by the schedule's own replica-hours
    (a proxy the simulations then confirm or refute)."""
    windows = [s.scaler.scale_down_window_s]
    if windows[0] > MIN_SCALE_DOWN_WINDOW_S:
        # the schedule, not the window, brings capacity back before a known ramp: the HPA's
        # default window lets it go sooner after one
        windows.append(MIN_SCALE_DOWN_WINDOW_S)
    cands = [_candidate(profile, sizing, m, s.scaler.reaction_s, s.max_replicas, w)
             for m in MARGINS for w in windows]
    return sorted(cands, key=lambda c: (float(c.wants.mean()), c.margin,
                                        c.scale_down_window_s))


def _screen(s: TraceSearch, cands: list[ScheduleCandidate], stretches: list[Window],
            day_offset: float) -> list[tuple[ScheduleCandidate, bool]]:
    """Each candidate on the short stretches (pruning by short representative windows): it
    survives when it meets the SLO on every one."""
    scenarios, labels = [], []
    for c in cands:
        for w in stretches:
            initial = c.initial_at(w.start_s, day_offset)
            scenarios.append(s.scenario(w, s.keda("plan", c, initial), initial))
            labels.append(f"screen on {w.label}: {c.label}")
    rows = s.run(scenarios, labels)
    out = []
    for i, c in enumerate(cands):
        mine = rows[i * len(stretches):(i + 1) * len(stretches)]
        out.append((c, all(r.meets_slo for r in mine)))
        s.screen_rows.extend(replace(r, min_replicas=c.floor, why=_why(r, s.slo)) for r in mine)
    return out


def _candidate(profile: np.ndarray, sizing: Sizing, margin: float, lead_s: float,
               ceiling: int, scale_down_window_s: int) -> ScheduleCandidate:
    floor, windows = learned_schedule(profile, sizing, margin, lead_s, ceiling)
    wants = minute_wants(slot_replicas(profile, sizing, margin, ceiling), lead_s)
    return ScheduleCandidate(margin, floor, windows, wants, scale_down_window_s)


def _fit_rows(s: TraceSearch, fit: Window, cands: list[ScheduleCandidate], day_offset: float,
              always: int | None) -> list[EvidenceRow]:
    scenarios, labels = [], []
    for c in cands:
        initial = c.initial_at(fit.start_s, day_offset)
        scenarios.append(s.scenario(fit, s.keda("plan", c, initial), initial))
        labels.append(f"{s.opt.label}, {s.scaler.label}, {c.label}")
    if always is not None:
        scenarios.append(s.scenario(fit, s.fixed(always), always))
        labels.append(f"{s.opt.label}, always on {always}")
    rows = s.run(scenarios, labels)
    floors = [c.floor for c in cands] + ([always] if always is not None else [])
    return [replace(r, min_replicas=f) for r, f in zip(rows, floors, strict=True)]


def _fit_why(r: EvidenceRow, i: int, cands: list[ScheduleCandidate],
             winner: ScheduleCandidate | None, slo: SloInput) -> str:
    if i < len(cands) and cands[i] is winner:
        return "winner: cheapest that meets the SLO on the fit window"
    if i == len(cands) and winner is None and r.meets_slo:
        return "winner: always on (see the plan's reason)"
    return _why(r, slo) + ("" if not r.meets_slo else "; not the cheapest")


def _plan_strategy(s: TraceSearch, winner: ScheduleCandidate | None, always: int,
                   day_offset: float):
    def strategy(window: Window) -> dict:
        if winner is None:
            out = s.fixed(always)
            return dict(out, name="plan")
        initial = winner.initial_at(window.start_s, day_offset)
        return s.keda("plan", winner, initial)
    return strategy


def _check(s: TraceSearch, history: History, plan_strategy, n_busy: int, other: bool):
    """The held-out re-checks, and the replay: the plan, the baseline and the cheapest
    always-on fleet on all the traffic the plan was given (the whole history, or
    `check_traffic` when the input gives one)."""
    check = history.check
    replay_w = check if other else Window(0.0, history.span_s, "the whole history")
    plan_st, base_st = plan_strategy(replay_w), s.baseline()
    # robust, not lucky: the plan again on held-out traffic (other windows of the history,
    # not other seeds of the same trace): the check window and its busiest stretch
    stretch = busiest_window(_check_arrivals(s, other), check,
                             min(s.plan.simulation.trace_window_s, SLOT_S))
    held = [] if other else [check]
    scenarios = [s.scenario(replay_w, plan_st, plan_st["initial_replicas"], other_trace=other),
                 s.scenario(replay_w, base_st, 1, other_trace=other)]
    for w in held + [stretch]:
        st = plan_strategy(w)
        scenarios.append(s.scenario(w, st, st["initial_replicas"], other_trace=other))
    labels = ["plan", "baseline-queue-depth (min 1)"] + \
        ["plan on the held-out window"] * len(held) + ["plan on the held-out busiest stretch"]
    rows = s.run(scenarios, labels)
    found, fixed_rows = s.fixed_search(replay_w, n_busy, other_trace=other, tag="replay: ")
    fixed = next((r for r in fixed_rows if r.min_replicas == found), None)
    floor = plan_st["autoscaler"].get("min_replica_count", plan_st["initial_replicas"])
    rows = [replace(rows[0], min_replicas=floor, why=_why(rows[0], s.slo)),
            replace(rows[1], min_replicas=1, why=_why(rows[1], s.slo))] + [
        replace(r, min_replicas=floor, why="re-check: " + _why(r, s.slo)) for r in rows[2:]]
    if fixed is not None:
        rows.append(replace(fixed, config=f"fixed-best (always on {found})",
                            why="cheapest always-on fleet meeting the SLO on the replayed "
                                "traffic"))
    strategies = [plan_st, base_st] + ([s.fixed(found)] if found is not None else [])
    replay = s.scenario(replay_w, plan_st, plan_st["initial_replicas"], other_trace=other)
    replay["strategies"] = strategies
    return rows, found, replay


def _check_arrivals(s: TraceSearch, other: bool) -> np.ndarray:
    traffic = s.w.check_traffic if other else s.w.traffic
    assert isinstance(traffic, TraceWorkload)
    return read_arrivals(traffic, s.base_dir, "check_traffic" if other else "traffic")


def _unreachable(s: TraceSearch, history: History, busy: Window,
                 calibration: list[EvidenceRow], busy_rps: float) -> TracePlan:
    """No always-on fleet up to the GPU limit met the SLO on the busiest stretch: the plan is
    the cheapest fleet within 0.1 point of what is reachable, and says what would reach it."""
    found = analyse(s, busy, calibration)
    n = found.cheapest_close.min_replicas
    why = (f"the SLO is not reachable: no always-on fleet up to "
           f"{found.reachable.min_replicas} replicas met it on the busiest stretch "
           f"({busy_rps:.2f} req/s at its peak); the best reached "
           f"{found.reachable.slo_attainment:.2%}, and {n} replicas come within 0.1 point")
    other = history.check_is_other_trace
    plan_st = dict(s.fixed(n), name="plan")
    check_rows = s.run([s.scenario(history.check, plan_st, n, other_trace=other)], ["plan"])
    replay = s.scenario(history.check, plan_st, n, other_trace=other)
    evidence = tuple(calibration) + (replace(found.cheapest_close,
                                             why="cheapest within 0.1 point of the reachable"),)
    return TracePlan(history, None, None, None, n, evidence + found.changes, (),
                     tuple(replace(r, min_replicas=n, why=_why(r, s.slo)) for r in check_rows),
                     None, replay, why, found)
