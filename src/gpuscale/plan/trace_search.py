"""The search for a trace: the whole history simulated, scheduled capacity, a held-out check.

1. Split the history (plan/history.py): a fit window and a held-out check window.
2. Measure on short representative windows: the smallest always-on fleets meeting the SLO on
   the fit window's busiest and quietest stretches give the replicas one request/s needs at
   each rate (`Sizing`, measured with the stretches' own bursts); the analytic capacity only
   seeds these searches.
3. Schedules learned from the fit window's daily profile (plan/schedule.py), each with a
   deployable configuration (plan/trace_configs.py: cold start, release, how steps act),
   narrowed by the analytic proxy, the steepest ramp and the whole fit window
   (plan/trace_candidates.py), beside the always-on fleet; the cheapest in simulated
   GPU-hours that meets the SLO wins, and a fleet that only meets it always on is the plan,
   with the reason.
4. The check window (held out): the winner re-run there and on its busiest stretch; the
   replay (the plan, the cheapest always-on fleet there, and the baseline: KEDA on queue
   depth from 1 replica with its own defaults), each starting from its own minimum. These
   runs are the replay scenario `plan --out` writes, so `gpuscale compare DIR/scenarios/W.yaml`
   gives plan.md's table.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from gpuscale.autoscaling.keda_cron import CronTrigger, opens_within
from gpuscale.plan.hardware import HardwareOption
from gpuscale.plan.history import (
    WHOLE_HISTORY,
    History,
    Window,
    busiest_window,
    daily_profile_rps,
    fill_unseen,
    peak_rate_rps,
    quietest_window,
    read_history,
    split_history,
    steepest_ramp_window,
    trace_end_s,
)
from gpuscale.plan.inputs import PlanInput, SloInput, WorkloadInput
from gpuscale.plan.model import EvidenceRow
from gpuscale.plan.parallel import Runner
from gpuscale.plan.scaler import ScalerChoice
from gpuscale.plan.schedule import Sizing
from gpuscale.plan.search import SearchBudget, missed
from gpuscale.plan.sizing import TrafficStats, replicas_for
from gpuscale.plan.trace_candidates import ScheduleCandidate, fit_stage, ranked, screen_on_ramp
from gpuscale.plan.trace_configs import all_configs
from gpuscale.plan.unreachable import Unreachable, analyse
from gpuscale.plan.warm_pool import CandidateSetup, candidate_scenario_dict, search_min_replicas
from gpuscale.units import SECONDS_PER_DAY, seconds_of_day_utc
from gpuscale.workloads.replay import TraceWorkload

# The quietest stretch calibrates a second rate when its peak is clearly below the busiest's.
QUIET_FRAC = 0.8
SLOT_S = 1800.0  # the daily profile's slot: half-hour rates follow a day's ramps
# Rates are sized on their 10-minute means (history.smoothed_rates): shorter than a cold start
# plus node start-up (~10-20 min), so a burst the reactive scaler cannot catch is in them.
SMOOTH_S = 600.0
PEAK_HEADROOM = 1.2  # max replicas cover the history's busiest slot x this (as BURST_HEADROOM)
# simulation.headroom_frac's default for a history of a day or more: a plan learned on one day
# runs on the days after it, and another day of the same service puts its busiest minutes
# elsewhere (ServeGen's two days of one multimodal service, ../shared/traces/servegen_mm_image,
# with the same daily curve and volumes within 1 %, need 10 and 11 replicas always on). Chosen
# by measurement, not derived: fitted exactly (0) a plan missed the SLO on the other day of two
# of the development services; 0.1 made whole-node replicas cost a node more at the peak;
# docs/plan.md "Headroom" has the table of 0, 0.05 and 0.1.
DAY_HEADROOM_FRAC = 0.05


def headroom_frac(asked: float | None, history: History) -> float:
    """The fit runs' extra load: the input's, else DAY_HEADROOM_FRAC for a history of a day
    or more (first to last request within an hour of 24 h counts) and none for a shorter one
    (a plan for the traffic it was given)."""
    if asked is not None:
        return asked
    return DAY_HEADROOM_FRAC if history.span_s >= SECONDS_PER_DAY - 3600 else 0.0


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


def read_arrivals(traffic: TraceWorkload, base_dir: Path, field: str,
                  source: str | None = None) -> np.ndarray:
    return read_history(traffic, base_dir, field, source).arrival_s


def window_workload(traffic: TraceWorkload, window: Window) -> dict:
    """The trace's `window` as a workload (times in the rate-scaled timeline); the whole
    history of a trace read to its end is the trace as given (no end_s: every arrival is
    inside it), so the replay reads it as `simulate --manifests --trace T` does."""
    data = traffic.model_dump()
    if window.label == WHOLE_HISTORY and window.start_s == 0 and traffic.end_s is None:
        return data
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
    check_clock: datetime | None = None  # check_traffic's own second 0 (plan/clock.py)
    simulated: dict[str, EvidenceRow] = field(default_factory=dict)  # by scenario content
    headroom_frac: float = 0.0  # set once the history is split (`headroom_frac`)

    def clock(self, other_trace: bool = False) -> datetime:
        """The wall clock of second 0 of the traffic (or of check_traffic)."""
        return (self.check_clock if other_trace and self.check_clock is not None
                else self.plan.start_time)

    def day_offset_s(self, other_trace: bool = False) -> float:
        return seconds_of_day_utc(self.clock(other_trace))

    # -- scenarios --------------------------------------------------------------------------
    def setup_of(self, c: ScheduleCandidate | None) -> CandidateSetup:
        """The candidate setup of a schedule's configuration: its cold start, release and
        scale-up tolerance (the base setup for an always-on fleet)."""
        if c is None:
            return self.setup
        return replace(self.setup, scale_down_window_s=c.config.release.scale_down_window_s,
                       empty_node_ttl_s=float(c.config.release.consolidate_after_s),
                       image_pull_s=c.config.cold.image_pull_s, scale_up_tolerance=c.tolerance)

    @property
    def load_scale(self) -> float:
        """What the fit runs replay of the trace's load: 1 + the plan's headroom."""
        return 1.0 + self.headroom_frac

    def scenario(self, window: Window, strategy: dict, initial: int, *, other_trace: bool = False,
                 setup: CandidateSetup | None = None, recorded: bool = False) -> dict:
        """The run of `strategy` on `window`: with the plan's headroom (the fit stage), or the
        traffic as recorded (`recorded`: the check, the replay and its always-on search)."""
        traffic = self.w.check_traffic if other_trace else self.w.traffic
        assert isinstance(traffic, TraceWorkload)
        setup = setup or self.setup
        data = candidate_scenario_dict(self.plan, self.w, self.stats, setup, initial)
        data["name"] = f"{self.plan.name}-{self.w.name}"
        data["workload"] = window_workload(traffic, window)
        if not recorded and self.load_scale != 1.0:
            data["workload"]["load_scale"] = traffic.load_scale * self.load_scale
        data["duration_s"] = window.duration_s
        start = self.clock(other_trace) + timedelta(seconds=window.start_s)
        data["start_time"] = start.isoformat()
        data["cluster"]["max_nodes"] = max(data["cluster"]["max_nodes"],
                                           setup.nodes_for(self.max_replicas))
        data["strategies"] = [open_windows_only(strategy, start, window.duration_s)]
        return data

    @property
    def max_replicas(self) -> int:
        return self.setup.max_replicas

    def keda(self, name: str, c: ScheduleCandidate, initial: int) -> dict:
        floor, windows = c.floor, c.windows
        base = candidate_scenario_dict(self.plan, self.w, self.stats, self.setup_of(c), floor)
        keda = dict(base["strategies"][0]["autoscaler"])
        keda["min_replica_count"] = floor
        keda["max_replica_count"] = max(self.max_replicas, floor + 1)
        keda["triggers"] = list(self.setup.triggers) + [w.trigger() for w in windows]
        return {"name": name, "autoscaler": keda, "initial_replicas": initial,
                "ready_nodes": self.setup.nodes_for(initial)}

    def fixed(self, n: int) -> dict:
        return {"name": "fixed-best", "autoscaler": {"kind": "fixed", "replicas": n},
                "initial_replicas": n, "ready_nodes": self.setup.nodes_for(n)}

    def baseline(self) -> dict:
        """KEDA on queue depth from 1 replica with KEDA's and the HPA's own defaults (no plan
        window), as a team would start."""
        queue = {"query": {"metric": "vllm:num_requests_waiting", "aggregation": "sum"},
                 "threshold": self.scaler.queue_threshold}
        return {"name": "baseline-queue-depth", "autoscaler": {
            "kind": "keda", "polling_interval_s": 15.0, "min_replica_count": 1,
            "max_replica_count": max(self.max_replicas, 2), "triggers": [queue]},
            "initial_replicas": 1, "ready_nodes": self.setup.nodes_for(1)}

    # -- runs -------------------------------------------------------------------------------
    def why(self, r: EvidenceRow) -> str:
        return _why(r, self.slo)

    def run(self, scenarios: list[dict], labels: list[str]) -> list[EvidenceRow]:
        """The scenarios' rows, in parallel. One simulated before in this search (the same
        mapping, whatever its strategy is called: an always-on plan replayed is its fixed
        fleet) is not run again: same scenario and seed, same bytes."""
        keys = [_content_key(sc) for sc in scenarios]
        todo: dict[str, tuple[dict, str]] = {}
        for key, scenario, label in zip(keys, scenarios, labels, strict=True):
            if key not in self.simulated:
                todo.setdefault(key, (scenario, label))
        if todo:
            rows = self.runner.run([v[0] for v in todo.values()], [v[1] for v in todo.values()],
                                   self.base_dir, self.slo.ttft_p99_s, self.slo.goodput_frac)
            self.simulated.update(zip(todo, rows, strict=True))
        return [replace(self.simulated[k], config=label) for k, label in zip(keys, labels,
                                                                             strict=True)]

    def fixed_scenario(self, window: Window, n: int, other_trace: bool = False,
                       recorded: bool = False) -> dict:
        return self.scenario(window, self.fixed(n), n, other_trace=other_trace, recorded=recorded)

    def fixed_search(self, window: Window, start: int, other_trace: bool = False,
                     tag: str = "", known: dict[int, EvidenceRow] | None = None,
                     recorded: bool = False) -> tuple[int | None, list[EvidenceRow]]:
        """The smallest always-on fleet meeting the SLO on `window`, from `start`; `known`:
        fleets already simulated there (run beside other work, in parallel); `recorded`: on
        the traffic as recorded, not with the plan's headroom."""
        # never past the cluster's GPU limit (an analytic start above it, e.g. at a tight
        # ITL, simulated fleets the cluster cannot hold and named them "up to" the limit)
        limit = self.gpu_limit_replicas()
        hi = limit if self.plan.cluster.max_gpus else max(start, limit)
        done = dict(known or {})

        def evaluate(n: int) -> EvidenceRow:
            if n in done:
                return done[n]
            row = self.run([self.fixed_scenario(window, n, other_trace, recorded)],
                           [f"{tag}always on {n}"])[0]
            return replace(row, min_replicas=n)

        return search_min_replicas(evaluate, start, hi, self.plan.simulation.max_candidates)

    def gpu_limit_replicas(self) -> int:
        limit = self.plan.cluster.max_gpus
        return max(1, limit // self.opt.gpus) if limit else 4 * self.max_replicas


def _content_key(scenario: dict) -> str:
    """A scenario's content without its names (they label the run, they do not change it)."""
    data = dict(scenario, name="", strategies=[dict(st, name="") for st in
                                               scenario.get("strategies", [])])
    return json.dumps(data, sort_keys=True, default=str)


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
    arrival = read_arrivals(traffic, s.base_dir, "traffic", source)
    other = None
    if s.w.check_traffic is not None:
        other = trace_end_s(read_arrivals(s.w.check_traffic, s.base_dir, "check_traffic",
                                          source))
    settings = s.plan.simulation
    history = split_history(arrival, check_s=settings.check_s, check_frac=settings.check_frac,
                            other_check_end_s=other, source=source)
    s.headroom_frac = headroom_frac(settings.headroom_frac, history)
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
        sizing = sizing.with_quiet(quiet_rps, n_quiet)
    profile = fill_unseen(daily_profile_rps(arrival, history.fit, day_offset, SLOT_S,
                                            SMOOTH_S))
    peak = math.ceil(float(sizing.replicas(np.array([np.nanmax(profile)]))[0])
                     * PEAK_HEADROOM - 1e-9)
    top = s.w.max_replicas or max(n_busy + 1, peak)
    s.setup = replace(s.setup, max_replicas=max(1, min(top, s.gpu_limit_replicas())))
    # 3. schedules x deployable configurations: ranked by the proxy, screened on the steepest
    # ramp, then decided on the whole fit window (plan/trace_candidates.py)
    cands = ranked(profile, sizing, all_configs(s.plan, s.w, s.opt), s.max_replicas)
    if not s.budget.spent():
        cands = screen_on_ramp(s, cands, lambda config: steepest_ramp_window(
            arrival, history.fit, config.lead_s, SMOOTH_S, SLOT_S / 2), day_offset)
    stage = fit_stage(s, history.fit, profile, sizing, cands, n_busy, day_offset)
    tried, always_n, always_rows = stage.tried, stage.always_n, stage.always_rows
    fit_rows = stage.rows + [always_rows[0]]
    passing_i = [(r.gpu_hours, i) for i, r in enumerate(fit_rows[:-1]) if r.meets_slo]
    winner, why = _choose(tried, fit_rows, passing_i, always_n)
    fit_rows = [replace(r, why=_fit_why(r, i, tried, winner, s.slo))
                for i, r in enumerate(fit_rows)] + [
        replace(r, why=_why(r, s.slo) + ("; not the cheapest" if r.meets_slo else ""))
        for r in always_rows[1:]]
    plan_strategy_of = _plan_strategy(s, winner, always_n)
    check, check_fixed, replay = _check(s, history, plan_strategy_of, always_n,
                                        other is not None, s.setup_of(winner))
    per_rps = sizing.busy_per_rps
    return TracePlan(history, per_rps, winner, always_n, s.max_replicas,
                     tuple(calibration) + tuple(s.screen_rows),
                     tuple(fit_rows), tuple(check), check_fixed, replay, why)


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


def _fit_why(r: EvidenceRow, i: int, cands: list[ScheduleCandidate],
             winner: ScheduleCandidate | None, slo: SloInput) -> str:
    if i < len(cands) and cands[i] is winner:
        return "winner: cheapest that meets the SLO on the fit window"
    if i == len(cands) and winner is None and r.meets_slo:
        return "winner: always on (see the plan's reason)"
    return _why(r, slo) + ("" if not r.meets_slo else "; not the cheapest")


def _plan_strategy(s: TraceSearch, winner: ScheduleCandidate | None, always: int):
    def strategy(window: Window, other_trace: bool = False) -> dict:
        if winner is None:
            out = s.fixed(always)
            return dict(out, name="plan")
        initial = winner.initial_at(window.start_s, s.day_offset_s(other_trace))
        return s.keda("plan", winner, initial)
    return strategy


def _check(s: TraceSearch, history: History, plan_strategy, n_fixed: int, other: bool,
           setup: CandidateSetup):
    """The held-out re-checks, and the replay: the plan, the baseline and the cheapest
    always-on fleet on all the traffic the plan was given (the whole history, or
    `check_traffic` when the input gives one), on the plan's nodes (`setup`: its cold start).
    That fleet's search starts at the fit window's (`n_fixed`), whose first two sizes run
    beside the plan's re-checks."""
    check = history.check
    replay_w = check if other else Window(0.0, history.span_s, WHOLE_HISTORY)
    plan_st, base_st = plan_strategy(replay_w, other), s.baseline()
    # robust, not lucky: the plan again on held-out traffic (other windows of the history,
    # not other seeds of the same trace): the check window and its busiest stretch
    stretch = busiest_window(_check_arrivals(s, other), check,
                             min(s.plan.simulation.trace_window_s, SLOT_S))
    held = [] if other else [check]
    scenarios = [s.scenario(replay_w, plan_st, plan_st["initial_replicas"], other_trace=other,
                            setup=setup, recorded=True),
                 s.scenario(replay_w, base_st, 1, other_trace=other, setup=setup, recorded=True)]
    for w in held + [stretch]:
        st = plan_strategy(w, other)
        scenarios.append(s.scenario(w, st, st["initial_replicas"], other_trace=other,
                                    setup=setup, recorded=True))
    labels = ["plan", "baseline-queue-depth (min 1)"] + \
        ["plan on the held-out window"] * len(held) + ["plan on the held-out busiest stretch"]
    probes = [n for n in (n_fixed, n_fixed - 1) if n >= 1]
    rows = s.run(scenarios + [s.fixed_scenario(replay_w, n, other, recorded=True)
                              for n in probes],
                 labels + [f"replay: always on {n}" for n in probes])
    known = {n: replace(r, min_replicas=n) for n, r in zip(probes, rows[len(labels):],
                                                           strict=True)}
    rows = rows[:len(labels)]
    found, fixed_rows = s.fixed_search(replay_w, n_fixed, other_trace=other, tag="replay: ",
                                       known=known, recorded=True)
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
    replay = s.scenario(replay_w, plan_st, plan_st["initial_replicas"], other_trace=other,
                        setup=setup, recorded=True)
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
    check_rows = s.run([s.scenario(history.check, plan_st, n, other_trace=other,
                                   recorded=True)], ["plan"])
    replay = s.scenario(history.check, plan_st, n, other_trace=other, recorded=True)
    evidence = tuple(calibration) + (replace(found.cheapest_close,
                                             why="cheapest within 0.1 point of the reachable"),)
    return TracePlan(history, None, None, None, n, evidence + found.changes, (),
                     tuple(replace(r, min_replicas=n, why=_why(r, s.slo)) for r in check_rows),
                     None, replay, why, found)
