"""A trace workload sized by `trace_search.plan_trace`, as the `Sized` the roles are built from:
the floor, the cron schedule, max replicas, the evidence, the replay scenario and the per-day
cost, which is simulated (the fit and check windows' GPU-hours over their length), never an
hour extrapolated."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path

from gpuscale.plan.hardware import HardwareOption
from gpuscale.plan.inputs import PlanInput, SloInput, WorkloadInput
from gpuscale.plan.model import CostEstimate, Decision, EvidenceRow, Role, WarmPool
from gpuscale.plan.parallel import Runner
from gpuscale.plan.scaler import scaler_choice
from gpuscale.plan.schedule import describe
from gpuscale.plan.search import SearchBudget
from gpuscale.plan.sizing import TrafficStats
from gpuscale.plan.sizing_search import Sized, _max_replicas, _setup
from gpuscale.plan.trace_candidates import ScheduleCandidate
from gpuscale.plan.trace_search import TracePlan, TraceSearch, plan_trace
from gpuscale.units import SECONDS_PER_DAY


def size_trace(plan: PlanInput, w: WorkloadInput, stats: TrafficStats, slo: SloInput,
               opt: HardwareOption, base_dir: Path, budget: SearchBudget, refusals: list,
               source: str, check_clock: datetime | None = None) -> Sized:
    """`plan.start_time`: the traffic's second 0 on the wall clock, `check_clock`:
    check_traffic's (plan/clock.py)."""
    scaler = scaler_choice(plan, w, opt, slo, refusals)
    setup = _setup(plan, opt, scaler, _max_replicas(plan, w, stats, opt), w, slo)
    runner = Runner(budget.workers, budget.backend, on_done=budget.tick)
    search = TraceSearch(plan, w, stats, slo, opt, scaler, setup, base_dir, budget, runner,
                         check_clock=check_clock)
    found = plan_trace(search, source)
    floor = (found.winner.floor if found.winner else found.always_on
             if found.always_on is not None else found.max_replicas)
    schedule = found.winner.windows if found.winner else ()
    method = _method(found, search.headroom_frac)
    if budget.exhausted:
        method += f"; the time budget ended the search after {budget.simulations} simulations"
    other = found.history.check_is_other_trace
    held = [r for r in found.check if r.why.startswith("re-check")]
    # the plan on the held-out traffic: check_traffic (the replay) or the held-out window
    check_plan = (found.check[0] if other else held[0]) if found.check and held else \
        (found.check[0] if found.check else None)
    recheck = tuple(([found.check[0]] if other and found.check else []) + held)
    replay = tuple(r for r in found.check if not r.why.startswith("re-check"))
    pool = WarmPool(floor, True, method, found.calibration + found.fit + found.check, floor,
                    recheck, replay, f"the whole history, {found.history.span_s / 3600:.1f} h"
                    if not other else "check_traffic, "
                    f"{found.history.check.duration_s / 3600:.1f} h")
    maximum = max(found.max_replicas, floor + 1) if found.winner else floor
    sized = Sized(opt, scaler, pool, maximum, [], _cost(opt, found, check_plan, recheck),
                  lambda floors: (floors, pool), found.replay, schedule=schedule)
    if found.winner is not None:  # what the winner was simulated with ships
        config = found.winner.config
        sized.scaler = replace(scaler, scale_down_window_s=config.release.scale_down_window_s,
                               cold_start_s=config.cold.cold_start_s, reaction_s=config.lead_s)
        sized.scale_up_tolerance = found.winner.tolerance
        sized.consolidate_after_s = config.release.consolidate_after_s
        sized.prepulled_image = config.cold.name == "prepulled"
    sized.decisions += _decisions(w, found, floor, schedule, slo)
    if found.unreachable is not None:
        sized.notes.append(found.unreachable.line)
        refusals.append(found.unreachable.refusal(w, slo))
        sized.decisions.append(found.unreachable.decision(w))
    return sized


def _method(found: TracePlan, headroom: float) -> str:
    """How the plan was found; `headroom`: the fit runs' extra load (the search's)."""
    h = found.history
    text = (f"the whole history simulated: fit on {h.fit.duration_s / 3600:.1f} h, checked on "
            f"{h.check.duration_s / 3600:.1f} h held out ({h.how}); {found.why}")
    if headroom:
        text += (f"; sized for {headroom:.0%} more traffic than the fit window "
                 "recorded (simulation.headroom_frac: the fit runs replay it at load_scale "
                 f"{1 + headroom:g}; the check and the replay as recorded)")
    if found.replicas_per_rps is not None:
        text += (f"; {found.replicas_per_rps:.2f} replicas per request/s (of a 10-minute "
                 "mean), measured as the smallest always-on fleet meeting the SLO on the fit "
                 "window's busiest stretch over that stretch's peak 10-minute rate")
    return text


def _rows_per_day(rows: list[EvidenceRow], seconds: float, opt: HardwareOption
                  ) -> tuple[float, float, float]:
    gpu_h = sum(r.gpu_hours for r in rows) * SECONDS_PER_DAY / seconds
    usd = gpu_h * opt.it.on_demand_usd_per_hour / opt.it.num_gpus
    oracle = (sum(r.oracle_gpu_hours for r in rows if r.oracle_gpu_hours is not None)
              * SECONDS_PER_DAY / seconds)
    return gpu_h, usd, oracle


def _cost(opt: HardwareOption, found: TracePlan, check_plan: EvidenceRow | None,
          recheck: tuple[EvidenceRow, ...]):
    def cost(roles: list[Role]) -> CostEstimate:
        """Per day, simulated: the replay's plan run (the traffic as recorded, what
        `compare DIR/scenarios/W.yaml` re-runs) over the replay's length; never an hour times
        24, nor the fit runs (they carry the plan's headroom)."""
        replay = found.check[0] if found.check else None
        seconds = float(found.replay.get("duration_s") or 0.0)
        if replay is None or seconds <= 0:
            return CostEstimate(0.0, 0.0, None, None, None)
        gpu_h, usd, oracle = _rows_per_day([replay], seconds, opt)
        worst = min(r.slo_attainment for r in recheck) if recheck else None
        sim_eff = round(oracle / gpu_h, 4) if gpu_h else None
        return CostEstimate(round(gpu_h, 2), round(usd, 2), round(oracle, 2), sim_eff,
                            check_plan.slo_attainment if check_plan else None, worst, sim_eff,
                            simulated_per_day=True)
    return cost


def _config_decisions(w: WorkloadInput, winner: ScheduleCandidate) -> list[Decision]:
    """What the winner's configuration ships, each with why (plan/trace_configs.py)."""
    config = winner.config
    how = "chosen by simulation on the whole fit window (the evidence rows)"
    out = [Decision("replicas", f"{w.name}: release after a window",
                    f"scale-down stabilization {config.release.scale_down_window_s} s, "
                    f"consolidateAfter {config.release.consolidate_after_s // 60} min",
                    how + ("; with a schedule the known ramps are the cron windows' job, so "
                           "capacity held after each window only bills" if
                           config.release.name == "fast" else
                           "; 1.5 and 2 restarts, kept through dips a reactive scaler "
                           "could not follow"))]
    if winner.tolerance is not None:
        out.append(Decision("replicas", f"{w.name}: scheduled steps act",
                            f"behavior.scaleUp.tolerance {winner.tolerance:g} (needs "
                            "Kubernetes >= 1.34, or 1.33 with the HPAConfigurableTolerance "
                            "gate)", "KEDA's cron metric is desired / current replicas, and "
                            "a step of 10 % or less is inside the HPA's default 0.1 tolerance "
                            "and does nothing (layer3 1.7); half the smallest step keeps a "
                            "band against noise. An older cluster drops the field: plan with "
                            "cluster.scale_up_tolerance: false to round the steps instead"))
    elif config.steps == "rounded":
        out.append(Decision("replicas", f"{w.name}: scheduled steps act", "each cron step "
                            "asks more than 1.1 x the replicas before it", "a step of 10 % or "
                            "less is inside the HPA's default tolerance and does nothing "
                            "(layer3 1.7); rounded up, it acts on any cluster"))
    cold = config.cold
    if cold.name == "prepulled":
        out.append(Decision(
            "nodes", f"{w.name}: image pre-pulled", "Bottlerocket nodes whose data volume is "
            "restored from an EBS snapshot holding the serving image, "
            "volumeInitializationRate 300 MiB/s (EC2NodeClass)",
            f"{cold.how}: a replica on a new node is serving after ~{cold.cold_start_s:.0f} s, "
            f"so the schedule asks {config.lead_s / 60:.1f} min ahead; {how}. Cost: the "
            f"snapshot's storage, ${cold.usd_per_day:.2f}/day ($0.05/GB-month); the "
            "initialization rate is billed per GiB initialized (not costed here). Build the "
            "snapshot (e.g. aws-samples/bottlerocket-images-cache) and set its snapshotID"))
    return out


def _decisions(w: WorkloadInput, found: TracePlan, floor: int, schedule, slo: SloInput
               ) -> list[Decision]:
    h = found.history
    out = [Decision("warm-pool", f"{w.name}: history",
                    f"{h.fit.label} {h.fit.duration_s / 3600:.1f} h, {h.check.label} "
                    f"{h.check.duration_s / 3600:.1f} h", h.how)]
    if found.winner is not None:
        out.append(Decision("replicas", f"{w.name}: scheduled capacity",
                            describe(floor, schedule) + "; KEDA cron triggers beside the "
                            "reactive one", "learned from the fit window's daily profile in "
                            "half-hour slots, each raised a reaction time (signal lag + node "
                            "start-up + cold start) ahead of the slot; KEDA feeds every "
                            "trigger to the HPA, which takes the largest proposal"))
        out += _config_decisions(w, found.winner)
    else:
        out.append(Decision("replicas", f"{w.name}: always-on fleet",
                            f"{floor} replicas, min = max (an always-on fleet, not autoscaling)",
                            found.why))
    worst = [r for r in found.check if r.why.startswith("re-check")
             or (h.check_is_other_trace and r.config == "plan")]
    if worst:
        low = min(worst, key=lambda r: r.slo_attainment)
        out.append(Decision("warm-pool", f"{w.name}: robustness",
                            f"worst SLO attainment on held-out windows {low.slo_attainment:.1%} "
                            f"({low.config})", "the winner re-run on the held-out check window "
                            "and its busiest stretch (other traffic, not other seeds: a trace "
                            "replays the same requests whatever the seed)"))
        if low.slo_attainment < slo.goodput_frac:
            out.append(Decision("warm-pool", f"{w.name}: SLO not met on held-out traffic",
                                f"{low.slo_attainment:.1%} < {slo.goodput_frac:.0%}",
                                "measured on the check window, not assumed"))
    return out


