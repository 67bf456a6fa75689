"""Warm-pool sizing: the smallest minimum replica count that keeps P99 TTFT within the SLO.

Each candidate is a scenario (scenario/models.py) built from the plan input: the workload's
burst arriving while the fleet sits at its floor (the trough of the day), the plan's KEDA
scaler with `minReplicaCount = candidate`, the cold start and the node start-up. It runs on
the real engine (`engine.simulate_scenario`). The search starts from an analytic estimate
and walks one replica at a time towards the boundary, so the evidence table shows the size
that passes and the one below it that fails. Approximations: docs/plan.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpuscale.plan.inputs import PlanInput, TrafficShape, WorkloadInput
from gpuscale.plan.model import EvidenceRow
from gpuscale.plan.sizing import TrafficStats
from gpuscale.serving.engine_defaults import default_weight_load_gbps

Evaluate = Callable[[int], EvidenceRow]
# Controller lag before a scaler's decision exists: scrape interval + KEDA/HPA poll (15 s each,
# layer3-replica-autoscaling.md 1.1 and 1.9).
SIGNAL_LAG_S = 30.0


def analytic_warm_pool(stats: TrafficStats, capacity_rps: float, reaction_s: float,
                       ttft_slo_s: float) -> int:
    """Fluid estimate: during a burst of rate R the floor m serves m*c while new capacity takes
    `reaction_s` (T); the backlog (R - m c) T must drain within the TTFT SLO, so
    m >= R T / (c (slo + T)). Grows with the burst rate and with the cold start."""
    need = stats.burst_rate_per_s * reaction_s / (capacity_rps * (ttft_slo_s + reaction_s))
    steady = stats.trough_rate_per_s / capacity_rps
    return max(1, math.ceil(max(need, steady) - 1e-9))


def search_min_replicas(evaluate: Evaluate, start: int, hi: int, max_candidates: int
                        ) -> tuple[int | None, list[EvidenceRow]]:
    """Smallest m in [1, hi] with evaluate(m).meets_slo, assuming more replicas never hurt.

    From `start`: if it passes, search lower (steps that double) until one fails or m = 1;
    if it fails, search higher the same way up to `hi` (the GPU limit). Then bisect the
    bracket. Returns (smallest passing m or None, rows in m order); whether the boundary was
    found within `max_candidates` is `boundary_found(found, rows)`, never assumed."""
    rows: dict[int, EvidenceRow] = {}

    def run(m: int) -> bool:
        if m not in rows:
            rows[m] = evaluate(m)
        return rows[m].meets_slo

    def budget_left() -> bool:
        return len(rows) < max_candidates

    hi = max(1, hi)
    m = min(max(1, start), hi)
    passing, failing, step = m, 0, 1
    if run(m):
        while passing > 1 and budget_left():
            probe = max(1, passing - step)
            if run(probe):
                passing = probe
                step *= 2
            else:
                failing = probe
                break
    else:
        failing = m
        while True:
            if failing >= hi or not budget_left():
                return None, [rows[k] for k in sorted(rows)]
            probe = min(hi, failing + step)
            if run(probe):
                passing = probe
                break
            failing = probe
            step *= 2
    while passing - failing > 1 and failing >= 1 and budget_left():
        mid = (failing + passing) // 2
        if run(mid):
            passing = mid
        else:
            failing = mid
    return passing, [rows[k] for k in sorted(rows)]


def boundary_found(found: int | None, rows: list[EvidenceRow]) -> bool:
    """True when `found` passes and found - 1 was simulated and failed (or found is 1)."""
    if found is None:
        return False
    below = {r.min_replicas: r.meets_slo for r in rows}
    return found == 1 or below.get(found - 1) is False


def shape_phases(traffic: TrafficShape, stats: TrafficStats, plan: PlanInput) -> list[dict]:
    """One burst on top of the trough: the moment the fleet is at its floor."""
    sim = plan.simulation
    return [
        {
            "name": "trough",
            "duration_s": sim.quiet_before_burst_s or 1.0,
            "rate_per_s": stats.trough_rate_per_s,
        },
        {
            "name": "burst",
            "duration_s": traffic.burst_duration_s,
            "rate_per_s": stats.burst_rate_per_s,
        },
        {
            "name": "after",
            "duration_s": sim.after_burst_s or 1.0,
            "rate_per_s": stats.trough_rate_per_s,
        },
    ]


@dataclass(frozen=True)
class CandidateSetup:
    """What a candidate scenario needs beyond the plan input."""

    instance_type: str
    tp: int
    replicas_per_node: int
    max_replicas: int
    triggers: tuple[dict, ...]
    scale_down_window_s: int
    cold_start_s: float | None  # None = the scenario's default cold-start model
    ttft_slo_s: float
    itl_slo_s: float
    empty_node_ttl_s: float = float("inf")  # the plan's consolidateAfter (WhenEmpty)


def drain_s(stats: TrafficStats, setup: CandidateSetup) -> float:
    """Long enough for the longest output to finish at the ITL SLO after the window ends, so
    no request is cut off by the end of the run (at least 300 s)."""
    return float(max(300.0, math.ceil(1.2 * (setup.ttft_slo_s
                                             + stats.max_output_tokens * setup.itl_slo_s))))


def candidate_scenario_dict(plan: PlanInput, workload: WorkloadInput, stats: TrafficStats,
                            setup: CandidateSetup, min_replicas: int) -> dict:
    """The scenario (as a mapping for `scenario_from_dict`) that tests one warm-pool size."""
    from gpuscale.catalog import get_model
    from gpuscale.plan.scaler import hpa_behavior  # scaler imports this module

    if isinstance(workload.traffic, TrafficShape):
        phases = shape_phases(workload.traffic, stats, plan)
        load = {"kind": "piecewise", "phases": phases,
                "prompt_tokens": workload.traffic.prompt_tokens.model_dump(),
                "output_tokens": workload.traffic.output_tokens.model_dump()}
        duration = sum(p["duration_s"] for p in phases)
    else:
        load = workload.traffic.model_dump()
        duration = plan.simulation.trace_window_s
    cold: dict = {}
    if setup.cold_start_s is not None:
        model = get_model(workload.model)
        load_s = model.weight_bytes(workload.precision) / (default_weight_load_gbps() * 1e9)
        cold = {"image_pull": {"kind": "fixed", "value_s": 0.0},
                "engine_init": {"kind": "fixed", "value_s": max(0.0, setup.cold_start_s - load_s)}}
    per_node = max(1, setup.replicas_per_node)
    return {
        "name": f"{plan.name}-{workload.name}-warm-{min_replicas}",
        "seed": plan.simulation.seed,
        "duration_s": duration,
        "drain_s": drain_s(stats, setup),
        "model": {"name": workload.model, "precision": workload.precision.value, "tp": setup.tp},
        "cold_start": cold,
        "cluster": {"instance_type": setup.instance_type,
                    "ready_nodes": math.ceil(min_replicas / per_node),
                    "max_nodes": max(math.ceil(setup.max_replicas / per_node),
                                     math.ceil(min_replicas / per_node)),
                    "node_launch": {"kind": "lognormal", "median_s": plan.cluster.node_ready_s,
                                    "sigma": 0.25},
                    # the NodePool's consolidateAfter: an emptied node is released, as planned
                    **({"empty_node_ttl_s": setup.empty_node_ttl_s}
                       if math.isfinite(setup.empty_node_ttl_s) else {})},
        "workload": load,
        "slo": {"ttft_s": setup.ttft_slo_s, "tpot_s": setup.itl_slo_s},
        "initial_replicas": min_replicas,
        "strategies": [{"name": f"warm-{min_replicas}", "autoscaler": {
            "kind": "keda", "polling_interval_s": 15.0, "min_replica_count": min_replicas,
            "max_replica_count": max(setup.max_replicas, min_replicas),
            "triggers": list(setup.triggers),
            "advanced": {"horizontal_pod_autoscaler_config": {
                "behavior": hpa_behavior(setup.scale_down_window_s)}}}}],
    }


def simulate_candidate(scenario_dict: dict, base_dir: Path, ttft_slo_s: float,
                       goodput_frac: float = 0.0) -> EvidenceRow:
    """Run one candidate on the engine and reduce it to an evidence row. It meets the SLO when
    P99 TTFT is within it and at least `goodput_frac` of requests met TTFT and TPOT. Requests
    still decoding when the drain ends are not drops (they were being served; counting them
    rejected working floors on 32k-token outputs, issue 13 defect 3)."""
    from gpuscale.scenario import scenario_from_dict
    from gpuscale.sim import simulate_scenario

    scenario = scenario_from_dict(scenario_dict, source="<warm-pool candidate>")
    result, _ = simulate_scenario(scenario, base_dir)
    s = result.runs[0].summary  # typed: metrics/run_summary.py
    p99 = s.ttft_s.p99
    # Requests still decoding when the drain ends are in flight, not dropped (issue 13 #3).
    dropped = s.requests.dropped
    attained = s.slo_attainment
    return EvidenceRow(
        min_replicas=scenario.initial_replicas, ttft_p99_s=p99, itl_p99_s=s.tpot_s.p99,
        slo_attainment=attained, dropped=dropped, gpu_hours=s.gpu_hours,
        meets_slo=p99 is not None and p99 <= ttft_slo_s and attained >= goodput_frac,
        oracle_gpu_hours=s.oracle_gpu_hours, cost_usd=s.cost_usd,
        drain_gpu_hours=s.drain_gpu_hours)


def pd_candidate_scenario_dict(plan: PlanInput, workload: WorkloadInput, stats: TrafficStats,
                               setup: CandidateSetup, prefill_min: int, decode_min: int,
                               queue_threshold: float, kv_target_frac: float) -> dict:
    """The disaggregated version of `candidate_scenario_dict`: two pools with the planned
    floors, prefill scaled on its queue depth, decode on its KV-cache use, as rendered."""
    data = candidate_scenario_dict(plan, workload, stats, setup, prefill_min + decode_min)
    keda = data["strategies"][0]["autoscaler"]

    def scaler(minimum: int, trigger: dict) -> dict:
        return dict(keda, min_replica_count=minimum,
                    max_replica_count=max(keda["max_replica_count"], minimum),
                    triggers=[trigger])

    data["name"] = f"{plan.name}-{workload.name}-pd-{prefill_min}-{decode_min}"
    data["disaggregation"] = {"prefill": {"initial_replicas": prefill_min},
                              "decode": {"initial_replicas": decode_min}}
    data["strategies"] = [{
        "name": f"pd-{prefill_min}-{decode_min}",
        "prefill": scaler(prefill_min, {"query": {"metric": "vllm:num_requests_waiting",
                                                  "aggregation": "sum"},
                                        "threshold": queue_threshold}),
        "decode": scaler(decode_min, {"query": {"metric": "vllm:kv_cache_usage_perc",
                                                "aggregation": "sum"},
                                      "threshold": kv_target_frac}),
    }]
    return data


def verify_pd_floors(evaluate_pd: Callable[[int, int], EvidenceRow], prefill_min: int,
                     decode_min: int, max_candidates: int) -> tuple[int, int, list[EvidenceRow]]:
    """Simulate the split floors; while P99 TTFT misses the SLO, add a prefill replica (TTFT is
    the prefill pool's job), up to `max_candidates` simulations. Returns the floors and rows."""
    rows = [evaluate_pd(prefill_min, decode_min)]
    while not rows[-1].meets_slo and len(rows) < max_candidates:
        prefill_min += 1
        rows.append(evaluate_pd(prefill_min, decode_min))
    return prefill_min, decode_min, rows  # the last floors simulated, met or not
