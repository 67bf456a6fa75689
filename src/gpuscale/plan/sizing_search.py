"""Size one workload: pick hardware option, scaler and floor by simulation (or analytically).

`size_workload` runs `search.py` over the single-node hardware options and the scaler
variants, rounds the winning floor up to whole nodes (they are billed whole anyway), finds the
cheapest always-on fleet that meets the SLO (`fixed-best`), re-runs what ships on traffic it
was not chosen on (a shape's other seeds, a trace's held-out windows), and builds the replay
scenario `plan --out` writes. When nothing up to the GPU limit meets the SLO, the analysis of
plan/unreachable.py (the trace search's too) says what is reachable and what would reach it.
A replica spanning nodes is simulated like any other (a gang of whole-node pods). Without
simulation the floor is the analytic estimate, said so in the decision.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from gpuscale.metrics.oracle import oracle_gpu_hours_for, replica_sustained_rps
from gpuscale.plan.hardware import HardwareOption
from gpuscale.plan.history import held_out_stretches
from gpuscale.plan.inputs import PlanInput, SloInput, TraceWorkload, WorkloadInput
from gpuscale.plan.layers import consolidate_after_for
from gpuscale.plan.model import CostEstimate, CronWindow, Decision, EvidenceRow, Role, WarmPool
from gpuscale.plan.parallel import Runner
from gpuscale.plan.scaler import ScalerChoice, scaler_choice, scaler_variants
from gpuscale.plan.search import (
    HARDWARE_OPTIONS,
    RECHECK_SEEDS,
    FloorSearch,
    SearchBudget,
    evidence_with_reasons,
    missed,
    pick_winner,
    search_floor,
)
from gpuscale.plan.sizing import KV_TARGET_FRAC, TrafficStats, engine_config_of, replicas_for
from gpuscale.plan.unreachable import FleetTrials, analyse_fleets, labelled_runs
from gpuscale.plan.warm_pool import (
    CandidateSetup,
    analytic_warm_pool,
    candidate_scenario_dict,
    pd_candidate_scenario_dict,
    search_min_replicas,
    simulate_candidate,
    verify_pd_floors,
)
from gpuscale.units import format_duration

BURST_HEADROOM = 1.2  # max replicas cover the peak rate x this at the target load
SEARCH_CEILING_FACTOR = 4  # without a GPU limit, floors are searched up to 4 x the analytic max


@dataclass
class Sized:
    option: HardwareOption
    scaler: ScalerChoice
    pool: WarmPool
    max_replicas: int
    decisions: list[Decision]
    cost: Callable[[list[Role]], CostEstimate]
    verify_pd: Callable[[dict[str, int]], tuple[dict[str, int], WarmPool]]
    scenario: dict | None = None
    notes: list[str] = field(default_factory=list)
    schedule: tuple[CronWindow, ...] = ()  # KEDA cron windows (trace histories)
    # the deployable settings a trace search chose with its schedule (plan/trace_configs.py)
    scale_up_tolerance: float | None = None
    consolidate_after_s: int | None = None
    prepulled_image: bool = False


def _per_node(opt: HardwareOption) -> int:
    return max(1, opt.it.num_gpus // opt.gpus) if opt.one_node else 1


def _max_replicas(
    plan: PlanInput, w: WorkloadInput, stats: TrafficStats, opt: HardwareOption
) -> int:
    peak = max(stats.burst_rate_per_s,
               stats.mean_rate_per_s * (1 + getattr(w.traffic, "diurnal_swing_frac", 0)))
    value = w.max_replicas or replicas_for(peak * BURST_HEADROOM, opt.cap.requests_per_s)
    if plan.cluster.max_gpus:
        value = min(value, _gpu_limit_replicas(plan, opt))
    return max(1, value)


def _gpu_limit_replicas(plan: PlanInput, opt: HardwareOption) -> int:
    return max(1, plan.cluster.max_gpus // opt.gpus) if plan.cluster.max_gpus else 0


def _setup(plan: PlanInput, opt: HardwareOption, scaler: ScalerChoice, max_repl: int,
           w: WorkloadInput, slo: SloInput) -> CandidateSetup:
    ttl_s, _ = consolidate_after_for(plan, scaler.cold_start_s)
    par = opt.par
    # inside one node PP stages run as one wider TP group (plan/sizing.replica_hardware);
    # across nodes the scenario states TP x PP, as it is deployed
    tp, pp = (opt.gpus, 1) if opt.one_node else (par.tp, par.pp)
    return CandidateSetup(opt.it.name, tp, _per_node(opt), max_repl, scaler.triggers,
                          scaler.scale_down_window_s, w.cold_start_s, slo.ttft_p99_s,
                          slo.itl_p99_s, float(ttl_s), pp=pp, ep=par.ep,
                          dp_attention=par.dp_attention, nodes_per_replica=opt.nodes_per_replica)


def _evaluator(plan, w, stats, setup, slo, base_dir, seed_offset: int = 0,
               window_shift_s: float = 0.0) -> Callable[[int], EvidenceRow]:
    def evaluate(m: int) -> EvidenceRow:
        data = candidate_scenario_dict(plan, w, stats, setup, m)
        data["seed"] = data["seed"] + seed_offset
        if window_shift_s:
            data["workload"]["start_s"] = data["workload"].get("start_s", 0.0) + window_shift_s
        return simulate_candidate(data, base_dir, slo.ttft_p99_s, slo.goodput_frac)
    return evaluate


def _floor_method(fs: FloorSearch | None, slo: SloInput, hi: int, max_candidates: int,
                  per_node: int, rounded: int) -> str:
    criterion = (f"P99 TTFT <= {slo.ttft_p99_s:g} s and >= {slo.goodput_frac:.0%} of requests "
                 "within TTFT and ITL")
    if fs is None or fs.found is None:
        return (f"no floor up to {hi} replicas (the GPU limit) met the SLO ({criterion}) "
                f"within {max_candidates} simulations per candidate: the plan does NOT meet its "
                "SLO; the largest floor tried is used")
    if fs.boundary:
        below = "" if fs.found == 1 else f", {fs.found - 1} does not"
        how = f"smallest simulated floor meeting the SLO ({criterion}): {fs.found} does{below}"
    else:
        how = (f"floor {fs.found} meets the SLO ({criterion}) but the boundary below it was not "
               f"reached within {max_candidates} simulations (raise simulation.max_candidates); "
               "a smaller floor may work")
    if rounded != fs.found:
        how += f"; rounded up to {rounded} to fill whole nodes ({per_node} replicas per node)"
    return how


def _fleet_trials(plan, w, stats, opt, setup, slo, base_dir, budget) -> FleetTrials:
    """Always-on fleets on the plan's own scenario (a shape's burst, a trace's first window),
    each from its own size, not the plan's floor (issue 27: a clean fixed fleet)."""
    def strategy(n: int) -> dict:
        return {"name": f"fixed-{n}", "autoscaler": {"kind": "fixed", "replicas": n},
                "initial_replicas": n, "ready_nodes": setup.nodes_for(n)}

    def scenario(n: int) -> dict:
        data = candidate_scenario_dict(plan, w, stats, setup, n)
        data["strategies"] = [strategy(n)]
        data["cluster"]["max_nodes"] = max(data["cluster"]["max_nodes"], setup.nodes_for(n))
        return data

    where = ("its burst" if not isinstance(w.traffic, TraceWorkload) else
             f"the trace's first {format_duration(plan.simulation.trace_window_s)}")
    runner = Runner(budget.workers, budget.backend, on_done=budget.tick)
    return FleetTrials(plan, w, slo, opt, setup.tp, where, scenario, strategy,
                       labelled_runs(runner, base_dir, slo.goodput_frac))


def _fixed_best(t: FleetTrials, stats: TrafficStats, setup: CandidateSetup
                ) -> tuple[EvidenceRow | None, list[EvidenceRow]]:
    """The cheapest always-on fleet that meets the SLO, on the same scenario as the plan, and
    every fleet tried."""
    def evaluate(n: int) -> EvidenceRow:
        label = f"{t.opt.label}, fixed {n}"
        return replace(t.run([t.fixed_scenario(n)], [label], t.slo.ttft_p99_s)[0],
                       min_replicas=n)

    hi = _gpu_limit_replicas(t.plan, t.opt) or SEARCH_CEILING_FACTOR * setup.max_replicas
    start = replicas_for(stats.mean_rate_per_s, t.opt.cap.requests_per_s)
    found, rows = search_min_replicas(evaluate, start, hi, t.plan.simulation.max_candidates)
    return next((r for r in rows if r.min_replicas == found), None), rows


def replay_scenario(plan, w, stats, setup, scaler: ScalerChoice, floor: int,
                    fixed: EvidenceRow | None) -> dict:
    """`gpuscale simulate` scenario of the workload's traffic: the plan, KEDA on queue depth
    with min 1, and the cheapest fixed fleet that met the SLO."""
    data = candidate_scenario_dict(plan, w, stats, setup, floor)
    data["name"] = f"{plan.name}-{w.name}"
    keda = data["strategies"][0]["autoscaler"]
    queue = {"query": {"metric": "vllm:num_requests_waiting", "aggregation": "sum"},
             "threshold": scaler.queue_threshold}
    # each from its own minimum: the baseline from 1 replica with KEDA's and the HPA's own
    # defaults (no plan window), the fixed fleet at its size (issue 27)
    baseline = {k: v for k, v in keda.items() if k != "advanced"}
    data["strategies"] = [
        {"name": "plan", "autoscaler": keda},
        {"name": "baseline-queue-depth", "autoscaler": dict(baseline, min_replica_count=1,
                                                           triggers=[queue]),
         "initial_replicas": 1, "ready_nodes": setup.nodes_for(1)},
    ]
    if fixed is not None:
        n = fixed.min_replicas
        data["strategies"].append({"name": "fixed-best", "autoscaler": {
            "kind": "fixed", "replicas": n}, "initial_replicas": n,
            "ready_nodes": setup.nodes_for(n)})
        data["cluster"]["max_nodes"] = max(data["cluster"]["max_nodes"],
                                           setup.nodes_for(fixed.min_replicas))
    return data


def held_out_windows(traffic: TraceWorkload, base_dir: Path, fit_s: float
                     ) -> list[tuple[str, float]]:
    """(label, start in the trace's own seconds) of the stretches a plan fitted on the
    trace's first `fit_s` seconds never saw (plan/history.py); none for a tiled trace."""
    if traffic.repeat > 1:
        return []
    arrival = traffic.generate(np.random.default_rng(0), base_dir).arrival_s
    return [(f"{w.label}, {format_duration(w.start_s)} in", w.start_s * traffic.rate_scale)
            for w in held_out_stretches(arrival, fit_s, fit_s)]


def _recheck(plan, w, stats, setup, slo, base_dir, floor: int, budget) -> tuple[EvidenceRow, ...]:
    """Robust, not lucky: a shape on other seeds (each draws its traffic anew); a trace on its
    held-out windows, other traffic (a seed replays the same requests, and an always-on
    fleet then gives the same bytes: it would prove nothing)."""
    if isinstance(w.traffic, TraceWorkload):
        rows = []
        for label, shift_s in held_out_windows(w.traffic, base_dir,
                                               plan.simulation.trace_window_s):
            budget.tick(f"re-check {label}")
            rows.append(replace(_evaluator(plan, w, stats, setup, slo, base_dir,
                                           window_shift_s=shift_s)(floor), config=label))
        return tuple(rows)
    rows = []
    for k in range(1, RECHECK_SEEDS + 1):
        budget.tick(f"re-check seed +{k}")
        rows.append(replace(_evaluator(plan, w, stats, setup, slo, base_dir, seed_offset=k)(floor),
                            config=f"seed {plan.simulation.seed + k} (the shape drawn anew)"))
    return tuple(rows)


def _cost_fn(stats: TrafficStats, opt: HardwareOption, slo: SloInput, chosen: EvidenceRow | None,
             recheck: tuple[EvidenceRow, ...]) -> Callable[[list[Role]], CostEstimate]:
    def cost(roles: list[Role]) -> CostEstimate:
        """Per day: the mean-rate fleet (never below the floor; an always-on fleet, min =
        max, is itself) in whole nodes, and the one oracle (metrics/oracle.py) at the
        replica's sustained throughput on this mix."""
        it, per_node = opt.it, _per_node(opt)
        replicas = sum(r.min_replicas for r in roles)
        if any(r.max_replicas > r.min_replicas for r in roles):  # an always-on fleet is itself
            replicas = max(replicas, replicas_for(stats.mean_rate_per_s, opt.cap.requests_per_s))
        nodes = math.ceil(replicas / per_node) if opt.one_node else \
            replicas * opt.nodes_per_replica
        gpu_hours = nodes * it.num_gpus * 24.0
        capacity = replica_sustained_rps(opt.hw, engine_config_of(opt.hw), stats.prompt_sample,
                                         stats.output_sample, tpot_slo_s=slo.itl_p99_s)
        oracle = oracle_gpu_hours_for(stats.mean_rate_per_s * 86400.0, capacity, opt.gpus,
                                      gpus_per_node=it.num_gpus)
        worst = min((r.slo_attainment for r in recheck), default=None)
        if worst is not None and chosen is not None:
            worst = min(worst, chosen.slo_attainment)
        sim_eff = (round(chosen.oracle_gpu_hours / chosen.gpu_hours, 4)
                   if chosen and chosen.oracle_gpu_hours and chosen.gpu_hours else None)
        return CostEstimate(round(gpu_hours, 2), round(nodes * it.on_demand_usd_per_hour * 24.0, 2),
                            round(oracle, 2), round(min(1.0, oracle / gpu_hours), 4),
                            chosen.slo_attainment if chosen else None, worst, sim_eff)
    return cost


def _pd_verifier(plan, w, stats, setup, slo, scaler, base_dir, budget, pool: WarmPool):
    def verify(floors: dict[str, int]) -> tuple[dict[str, int], WarmPool]:
        def evaluate(prefill_min: int, decode_min: int) -> EvidenceRow:
            budget.tick(f"P/D {prefill_min}+{decode_min}")
            data = pd_candidate_scenario_dict(plan, w, stats, setup, prefill_min, decode_min,
                                              scaler.queue_threshold, KV_TARGET_FRAC)
            row = simulate_candidate(data, base_dir, slo.ttft_p99_s, slo.goodput_frac)
            return replace(
                row,
                config=f"prefill {prefill_min} + decode {decode_min}",
                why="disaggregated check: "
                + (
                    "meets the SLO"
                    if row.meets_slo
                    else missed(row, slo.ttft_p99_s, slo.goodput_frac)
                ),
            )

        prefill, decode, rows = verify_pd_floors(
            evaluate,
            floors["prefill"],
            floors["decode"],
            max(1, plan.simulation.max_candidates // 2),
        )
        met = rows[-1].meets_slo
        method = _first_window(plan, w, stats) + (
            "prefill/decode floors split from the aggregated search, then simulated as a "
            "disaggregated deployment (two pools, KV transfer, prefill on queue depth, decode "
            "on KV-cache use); the prefill floor was raised until the SLO held"
            + ("" if met else "; the last floors tried still miss the SLO")
        )
        return {"prefill": prefill, "decode": decode}, WarmPool(
            prefill + decode, True, method, tuple(rows) + pool.evidence, pool.analytic_estimate,
            pool.recheck)
    return verify


def _analytic(plan, w, stats, slo, opt, scaler, max_repl) -> Sized:
    estimate = min(analytic_warm_pool(stats, opt.cap.requests_per_s, scaler.reaction_s,
                                      slo.ttft_p99_s), max_repl)
    pool = WarmPool(estimate, False, "simulation skipped (--no-simulate)", (), estimate)
    return Sized(opt, scaler, pool, max(max_repl, estimate + 1), [],
                 _cost_fn(stats, opt, slo, None, ()), lambda floors: (floors, pool))


def size_workload(plan: PlanInput, w: WorkloadInput, stats: TrafficStats, slo: SloInput,
                  options: list[HardwareOption], base_dir: Path, simulate: bool,
                  budget: SearchBudget, refusals: list) -> Sized:
    first = options[0]
    base = scaler_choice(plan, w, first, slo, refusals)
    if not simulate:
        sized = _analytic(plan, w, stats, slo, first, base, _max_replicas(plan, w, stats, first))
        sized.decisions += _scaler_decisions(w, sized, slo)
        return sized
    tried: list[tuple[HardwareOption, ScalerChoice, int, int, FloorSearch]] = []
    # one-node options when any exists (they come first), else those spanning nodes
    for opt in [o for o in options if o.one_node == first.one_node][:HARDWARE_OPTIONS]:
        max_repl = _max_replicas(plan, w, stats, opt)
        hi = _gpu_limit_replicas(plan, opt) or SEARCH_CEILING_FACTOR * max_repl
        choice = base if opt is first else scaler_choice(plan, w, opt, slo, [])
        for variant in scaler_variants(choice, w):
            if tried and budget.spent():
                break
            estimate = analytic_warm_pool(stats, opt.cap.requests_per_s, variant.reaction_s,
                                          slo.ttft_p99_s)
            setup = _setup(plan, opt, variant, max_repl, w, slo)
            fs = search_floor(
                opt.label,
                variant.label,
                _evaluator(plan, w, stats, setup, slo, base_dir),
                min(estimate, hi),
                hi,
                plan.simulation.max_candidates,
                budget,
            )
            tried.append((opt, variant, max_repl, hi, fs))
    win = pick_winner([t[-1] for t in tried])
    opt, scaler, max_repl, hi, fs = next((t for t in tried if t[-1] is win), tried[0])
    per_node = _per_node(opt)
    found = fs.found if win and fs.found is not None else max(r.min_replicas for r in fs.rows)
    rounded = math.ceil(found / per_node) * per_node
    setup = _setup(plan, opt, scaler, max(max_repl, rounded), w, slo)
    trials = _fleet_trials(plan, w, stats, opt, setup, slo, base_dir, budget)
    fixed, fixed_rows = _fixed_best(trials, stats, setup)
    evidence = evidence_with_reasons([t[-1] for t in tried], win, slo.ttft_p99_s, slo.goodput_frac)
    if win is None and fixed is None:  # nothing up to the GPU limit meets the SLO
        return _unreachable(trials, fixed_rows, evidence, stats, scaler, setup, refusals)
    chosen = fs.chosen if win else max(fs.rows, key=lambda r: r.min_replicas)
    if win and rounded != found:
        # the floor that ships is the rounded one: simulate it, so the evidence is what
        # `compare` on the replay scenario shows
        budget.tick(f"{opt.label}, floor {rounded} (whole nodes)")
        rerun = _evaluator(plan, w, stats, setup, slo, base_dir)(rounded)
        evidence = tuple(
            replace(r, why=f"meets the SLO; rounded up to {rounded} to fill whole nodes")
            if r.why.startswith("winner")
            else r
            for r in evidence
        )
        chosen = replace(rerun, config=f"{opt.label}, {scaler.label}",
                         why="winner: cheapest that meets the SLO, floor in whole nodes")
        evidence += (chosen,)
    if fixed is not None:
        evidence += (replace(fixed, why="fixed-best: cheapest always-on fleet meeting the SLO"),)
    estimate = analytic_warm_pool(stats, opt.cap.requests_per_s, scaler.reaction_s, slo.ttft_p99_s)
    method = _floor_method(win, slo, hi, plan.simulation.max_candidates, per_node, rounded) \
        if win is not None or fixed is None else \
        f"no scaler floor up to {hi} replicas met the SLO in the simulations tried"
    always_on = fixed is not None and (win is None or (chosen is not None
                                       and fixed.gpu_hours <= chosen.gpu_hours))
    if always_on:
        # issue 27: a plan costing more than the fixed fleet it lists as beaten is not a plan;
        # the fleet is, called what it is (min = max) with the reason autoscaling lost. So is
        # a fleet that meets the SLO where no scaler floor tried did.
        assert fixed is not None
        method += (f"; an always-on fleet of {fixed.min_replicas} met the SLO at "
                   f"{fixed.gpu_hours:.2f} GPU-h, " + (
                       f"no more than the scaler's {chosen.gpu_hours:.2f}: the plan is that "
                       "fleet (min = max), since the cold start leaves scaling nothing to save "
                       "on this traffic" if win is not None and chosen is not None else
                       "where no scaler floor tried did: the plan is that fleet (min = max)"))
        # in whole nodes (billed whole either way), simulated as it ships: KEDA min = max
        rounded = max_repl = math.ceil(fixed.min_replicas / per_node) * per_node
        setup = replace(setup, max_replicas=rounded)
        budget.tick(f"{opt.label}, always on {rounded}")
        chosen = replace(_evaluator(plan, w, stats, setup, slo, base_dir)(rounded),
                         config=f"{opt.label}, always on {rounded} (min = max)",
                         why="winner: the always-on fleet, in whole nodes")
        evidence = tuple(
            replace(r, why=f"meets the SLO; the always-on fleet of {rounded} costs no more")
            if r.why.startswith("winner") else
            r for r in evidence) + (chosen,)
    # robust, not lucky: what ships (the scaler, or the always-on fleet) re-checked
    recheck = _recheck(plan, w, stats, setup, slo, base_dir, rounded, budget) \
        if win or always_on else ()
    if budget.exhausted:
        method += f"; the time budget ended the search after {budget.simulations} simulations"
    pool = WarmPool(rounded, True, _first_window(plan, w, stats) + method, evidence, estimate,
                    recheck)
    sized = Sized(opt, scaler, pool, rounded if always_on else max(max_repl, rounded + 1), [],
                  _cost_fn(stats, opt, slo, chosen, recheck),
                  _pd_verifier(plan, w, stats, setup, slo, scaler, base_dir, budget, pool),
                  replay_scenario(plan, w, stats, setup, scaler, rounded, fixed))
    sized.decisions += _scaler_decisions(w, sized, slo)
    return sized


def _first_window(plan: PlanInput, w: WorkloadInput, stats: TrafficStats) -> str:
    """What a trace sized here was simulated on, said first: only its first window (a
    disaggregated trace; any other trace is planned on its whole history, trace_search.py)."""
    if not isinstance(w.traffic, TraceWorkload):
        return ""
    window_s = plan.simulation.trace_window_s
    span = f" of its {format_duration(stats.trace_span_s)}" if stats.trace_span_s else ""
    return (f"only the trace's first {format_duration(window_s)}{span} simulated (a "
            "disaggregated trace is not planned on its whole history: its floor is fitted on "
            "that window and re-checked on held-out stretches after it; no schedule is "
            "learned): ")


def _unreachable(t: FleetTrials, fixed_rows: list[EvidenceRow], evidence: tuple[EvidenceRow, ...],
                 stats: TrafficStats, scaler: ScalerChoice, setup: CandidateSetup,
                 refusals: list) -> Sized:
    """No scaler floor and no always-on fleet up to the GPU limit met the SLO: the plan is the
    cheapest always-on fleet within 0.1 point of what is reachable, and says what would reach
    the SLO (plan/unreachable.py, the analysis the trace search makes too)."""
    found = analyse_fleets(t, fixed_rows)
    close = replace(found.cheapest_close, why="cheapest within 0.1 point of the reachable")
    n = close.min_replicas
    rows = [replace(r, why=missed(r, t.slo.ttft_p99_s, t.slo.goodput_frac)) for r in fixed_rows]
    method = (f"the SLO is not reachable: no scaler floor and no always-on fleet up to "
              f"{found.reachable.min_replicas} replicas met it on {t.where}; the best reached "
              f"{found.reachable.slo_attainment:.2%}, and {n} replicas always on come within "
              "0.1 point: the plan is that fleet (min = max)")
    pool = WarmPool(n, True, method, evidence + tuple(rows) + (close,) + found.changes,
                    analytic_warm_pool(stats, t.opt.cap.requests_per_s, scaler.reaction_s,
                                       t.slo.ttft_p99_s))
    shipped = replace(setup, max_replicas=n)
    sized = Sized(t.opt, scaler, pool, n, [], _cost_fn(stats, t.opt, t.slo, close, ()),
                  lambda floors: (floors, pool),
                  replay_scenario(t.plan, t.w, stats, shipped, scaler, n, None))
    sized.decisions += _scaler_decisions(t.w, sized, t.slo, unreachable=True) + [
        found.decision(t.w)]
    sized.notes.append(found.line)
    refusals.append(found.refusal(t.w, t.slo))
    return sized


def _scaler_decisions(w: WorkloadInput, sized: Sized, slo: SloInput,
                      unreachable: bool = False) -> list[Decision]:
    s, pool, cap = sized.scaler, sized.pool, sized.option.cap
    subject = (f"{w.name}: aggregated floor (split into prefill and decode below)"
               if w.disaggregated else f"{w.name}: min replicas")
    out = [
        Decision(
            "warm-pool",
            subject,
            str(pool.min_replicas),
            pool.method
            + f"; reaction time {format_duration(s.reaction_s)} (signal lag + cold start "
            f"{format_duration(s.cold_start_s)} + node start-up)",
        ),
        Decision(
            "replicas",
            f"{w.name}: scaler",
            f"{w.autoscaler.upper()} on "
            f"{s.signal.replace('_', ' ')}; queue {s.queue_threshold}/replica, KV "
            f"{KV_TARGET_FRAC:.0%}/replica; {pool.min_replicas}-{sized.max_replicas} replicas; "
            f"scale-down stabilization {s.scale_down_window_s} s",
            s.signal_why + f". A replica serves ~{cap.requests_per_s:.2f} req/s; the queue "
            f"threshold drains in about half the {slo.ttft_p99_s:g} s TTFT SLO. The window is "
            "1.5 x (cold start + node start-up), longer than bringing a replica back, and "
            "never below 300 s",
        ),
    ]
    chosen = next((r for r in pool.evidence if r.why.startswith("winner")), None)
    if chosen is not None and chosen.slo_attainment < slo.goodput_frac:
        out.append(Decision("warm-pool", f"{w.name}: goodput", f"{chosen.slo_attainment:.1%} below "
                            f"the {slo.goodput_frac:.0%} target", "see the evidence"))
    if pool.simulated and chosen is None and pool.evidence and not unreachable:
        out.append(_slo_not_met(w, sized, slo))
    robustness = _robustness(w, pool, unreachable)
    if robustness is not None:
        out.append(robustness)
    return out


def _slo_not_met(w: WorkloadInput, sized: Sized, slo: SloInput) -> Decision:
    """What the largest floor simulated for the chosen option still missed."""
    pool = sized.pool
    last = max((r for r in pool.evidence if r.config.startswith(sized.option.label)),
               key=lambda r: r.min_replicas, default=pool.evidence[-1])
    missed = []
    if last.ttft_p99_s is None or last.ttft_p99_s > slo.ttft_p99_s:
        ttft_p99_s = last.ttft_p99_s if last.ttft_p99_s is not None else float("nan")
        missed.append(f"P99 TTFT {ttft_p99_s:.2f} s > {slo.ttft_p99_s:g} s")
    if last.itl_p99_s is not None and last.itl_p99_s > slo.itl_p99_s:
        missed.append(f"P99 TPOT {last.itl_p99_s:.3f} s > {slo.itl_p99_s:g} s")
    return Decision("warm-pool", f"{w.name}: SLO not met", "; ".join(missed) or
                    f"attainment {last.slo_attainment:.1%} < {slo.goodput_frac:.0%}",
                    "the largest floor simulated still misses the SLO; what it missed is "
                    "measured, not assumed")


def _robustness(w: WorkloadInput, pool: WarmPool, unreachable: bool) -> Decision | None:
    """How the plan held on traffic it was not fitted on (None where that is not said)."""
    if pool.recheck:
        worst = min(pool.recheck, key=lambda r: r.slo_attainment)
        return Decision(
            "warm-pool",
            f"{w.name}: robustness",
            f"worst SLO attainment {worst.slo_attainment:.1%} ({worst.config})",
            "the plan re-run on held-out windows of the trace (other traffic, not other "
            "seeds: a trace replays the same requests whatever the seed)"
            if isinstance(w.traffic, TraceWorkload) else
            "the plan re-run on other seeds, each a new draw of the shape's traffic",
        )
    if pool.simulated and isinstance(w.traffic, TraceWorkload) and not unreachable:
        return Decision("warm-pool", f"{w.name}: robustness", "not re-checked",
                        "the trace is no longer than the window the plan was fitted on: "
                        "nothing is held out (other seeds would replay the same requests)")
    return None
