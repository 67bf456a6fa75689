"""`make_plan(input, base_dir)`: every decision of the three layers, sized and explained.

Order: refuse what cannot be planned; per workload choose hardware and parallelism, the
scaling signal and its thresholds, the warm pool (by simulation); then NodePools and queues
from the roles; then monitoring and cost. Every choice lands in `Plan.decisions` with its
reason, every refused request in `Plan.refusals`.
"""

from __future__ import annotations

import math
from pathlib import Path

from gpuscale.catalog import get_instance_type, get_model
from gpuscale.errors import UserInputError
from gpuscale.plan import layers
from gpuscale.plan.inputs import PlanInput, WorkloadInput
from gpuscale.plan.model import CostEstimate, Decision, Plan, Refusal, Role, WarmPool
from gpuscale.plan.sizing import (TARGET_LOAD_FRAC, KV_TARGET_FRAC, Capacity, choose_parallelism,
                                  cold_start_estimate_s, queue_threshold, replica_capacity,
                                  replica_hardware, replicas_for, traffic_stats)
from gpuscale.plan.warm_pool import (SIGNAL_LAG_S, CandidateSetup, analytic_warm_pool,
                                     candidate_scenario_dict, pd_candidate_scenario_dict,
                                     search_min_replicas, simulate_candidate, verify_pd_floors)
from gpuscale.units import GIB, format_duration

# Prefill share of a replica's busy time above which it is prefill-bound (queue depth), below
# which decode-bound (KV cache); in between the signal is a composite (our rule, docs/plan.md).
PREFILL_BOUND_FRAC = 0.6
DECODE_BOUND_FRAC = 0.3
MIN_SCALE_DOWN_WINDOW_S = 300  # the HPA default (layer3 1.8); never shorter
MAX_SCALE_DOWN_WINDOW_S = 3600  # API maximum of stabilizationWindowSeconds


def _single_node_cluster(plan: PlanInput) -> bool:
    cluster = plan.cluster
    types = {get_instance_type(t).gpu for t in cluster.instance_types}
    types |= {get_instance_type(g.instance_type).gpu for g in cluster.node_groups}
    if len(types) != 1:
        return False
    if not cluster.instance_types:
        return cluster.nodes_fixed <= 1
    per_node = min(get_instance_type(t).num_gpus for t in cluster.instance_types)
    return cluster.max_gpus is not None and cluster.max_gpus <= per_node and cluster.nodes_fixed <= 1


def _refusal_plan(plan: PlanInput) -> Plan:
    advice = ("Start from a managed serverless endpoint (e.g. Amazon Bedrock or SageMaker serverless/"
              "asynchronous inference, or a provider's per-token API) for this model: with one node of "
              "one GPU type there is no node to add or remove, no replica to place elsewhere and no "
              "burst headroom, so Karpenter, gang scheduling and a replica autoscaler have nothing to "
              "decide, while the node's fixed cost is paid around the clock. Come back to a "
              "Kubernetes plan when the traffic needs more than one node.")
    refusal = Refusal("a Karpenter / KAI / KEDA plan for a one-node, one-GPU-type cluster",
                      "no manifests; a managed serverless endpoint", advice, hard=True)
    decision = Decision("overall", "plan", "no autoscaling plan", "one node of one GPU type: see refusal")
    return Plan(plan.name, plan.cluster.name, (decision,), (refusal,), managed_endpoint_advice=advice)


def _choose_hardware(plan: PlanInput, w: WorkloadInput, stats, slo):
    """Cheapest served request among the allowed instance types (price per GPU-h x GPUs /
    requests/s of one replica). A TP size given in the input must fit one node (a TP group is
    one pod), and one NVLink domain where any allowed type offers that."""
    model = get_model(w.model)
    names = plan.cluster.instance_types or sorted({g.instance_type for g in plan.cluster.node_groups})
    candidates, too_small = [], []
    for name in names:
        it = get_instance_type(name)
        domain = plan.cluster.nvlink_domain_gpus or it.nvlink_domain_gpus
        par = choose_parallelism(model, w.precision, it, domain)
        if isinstance(w.tp, int):
            if w.tp > it.num_gpus:
                too_small.append(f"{name} ({it.num_gpus})")
                continue
            reason = f"TP{w.tp} x PP{w.pp} as given in the input"
            if w.tp > domain:
                reason += (f"; TP{w.tp} is wider than the {domain}-GPU NVLink domain of {name}, so "
                           "every layer's all-reduce crosses PCIe or the network (audit GPU033)")
            par = type(par)(w.tp, w.pp, reason)
        elif w.pp > 1:
            par = type(par)(par.tp, max(par.pp, w.pp), par.reason + f"; PP{w.pp} as given")
        hw = replica_hardware(model, w.precision, it, par.tp * par.pp)
        cap = replica_capacity(hw, stats.mean_prompt_tokens, stats.mean_output_tokens, slo.itl_p99_s)
        if cap.kv_tokens > 0:
            usd_per_request = it.on_demand_usd_per_hour / it.num_gpus * par.tp * par.pp / cap.requests_per_s
            # An explicit TP inside an NVLink domain beats any type where it is not.
            candidates.append(((par.tp > domain, usd_per_request), it, par, cap))
    if not candidates:
        if too_small and len(too_small) == len(names):
            raise UserInputError(f"workload {w.name}: tp {w.tp} needs {w.tp} GPUs in one node (a TP "
                                 f"group is one pod); GPUs per node: {', '.join(too_small)}; use "
                                 "tp: choose or an instance type with more GPUs")
        weights_gib = model.weight_bytes(w.precision) / GIB
        raise UserInputError(
            f"workload {w.name}: {w.model} fits none of {', '.join(names)}: its {weights_gib:.0f} GiB "
            f"of {w.precision.value} weights leave no KV cache"
            + (f" at TP{w.tp} x PP{w.pp}; use tp: choose" if isinstance(w.tp, int) else ""))
    return min(candidates, key=lambda c: c[0])


def _signal(w: WorkloadInput, cap: Capacity, refusals: list[Refusal]) -> tuple[str, str]:
    prefill_frac = cap.prefill_s * cap.requests_per_s
    auto = ("queue_depth" if prefill_frac >= PREFILL_BOUND_FRAC else
            "kv_cache" if prefill_frac <= DECODE_BOUND_FRAC else "composite")
    why = (f"prefill takes {prefill_frac:.0%} of a replica's busy time: "
           + {"queue_depth": "prefill-bound, so queued requests (TTFT) saturate first",
              "kv_cache": "decode-bound, so the KV cache (concurrent sequences) saturates first",
              "composite": "mixed, so the scaler takes the larger of queue depth and KV-cache use"}[auto])
    if w.scale_on in ("gpu_util", "gpu_memory"):
        metric = "DCGM_FI_DEV_GPU_UTIL" if w.scale_on == "gpu_util" else "DCGM_FI_DEV_FB_USED"
        refusals.append(Refusal(
            f"{w.name}: scale on {metric}", auto.replace("_", " "),
            "GPU duty cycle reads ~100 % from batch size 1 (a kernel is always resident in a "
            "continuous-batching engine) and vLLM pre-allocates GPU memory at start-up, so neither "
            "tracks load: the scaler would grow on the first request and never shrink "
            "(serving-engine-metrics / layer3 section 8, audit GPU001/GPU002)"))
        return auto, why
    if w.scale_on != "auto":
        return w.scale_on, f"as requested ({why})"
    return auto, why


def _window_s(cold_s: float, node_ready_s: float) -> int:
    value = math.ceil(1.5 * (cold_s + node_ready_s) / 60.0) * 60
    return int(min(MAX_SCALE_DOWN_WINDOW_S, max(MIN_SCALE_DOWN_WINDOW_S, value)))


def _triggers(signal: str, queue_thr: float) -> tuple[dict, ...]:
    queue = {"query": {"metric": "vllm:num_requests_waiting", "aggregation": "sum"}, "threshold": queue_thr}
    kv = {"query": {"metric": "vllm:kv_cache_usage_perc", "aggregation": "sum"}, "threshold": KV_TARGET_FRAC}
    return {"queue_depth": (queue,), "kv_cache": (kv,), "composite": (queue, kv)}[signal]


def _warm_pool(plan: PlanInput, w: WorkloadInput, stats, setup: CandidateSetup, cap: Capacity,
               reaction_s: float, base_dir: Path, simulate: bool, multi_node: bool) -> WarmPool:
    estimate = analytic_warm_pool(stats, cap.requests_per_s, reaction_s, setup.ttft_slo_s)
    estimate = min(estimate, setup.max_replicas)
    if not simulate or multi_node:
        why = ("simulation skipped (--no-simulate)" if not simulate else
               "a replica spans nodes, which the simulator does not place; analytic estimate")
        return WarmPool(estimate, False, why, (), estimate)

    def evaluate(m: int):
        return simulate_candidate(candidate_scenario_dict(plan, w, stats, setup, m), base_dir,
                                  setup.ttft_slo_s)

    found, rows = search_min_replicas(evaluate, estimate, setup.max_replicas,
                                      plan.simulation.max_candidates)
    if found is None:
        top = max(r.min_replicas for r in rows)
        return WarmPool(top, True, f"no candidate up to {top} met the P99 TTFT SLO within "
                        f"{plan.simulation.max_candidates} simulations; the largest tried is used",
                        tuple(rows), estimate)
    return WarmPool(found, True, f"smallest simulated floor with P99 TTFT <= {setup.ttft_slo_s:g} s "
                    f"and no dropped request (search started at the analytic estimate {estimate})",
                    tuple(rows), estimate)


def _fmt_s(value: float | None) -> str:
    if value is not None and math.isinf(value):
        return "timeout"  # requests that never got a first token (metrics/summary.py)
    return "-" if value is None else f"{value:.2f} s"


def _verify_pd(plan: PlanInput, w: WorkloadInput, stats, setup: CandidateSetup,
               floors: dict[str, int], queue_thr: float, base_dir: Path):
    """Simulate the prefill/decode floors split from the aggregated search; raise the prefill
    floor until P99 TTFT meets the SLO (a few simulations at most)."""
    def evaluate(prefill_min: int, decode_min: int):
        data = pd_candidate_scenario_dict(plan, w, stats, setup, prefill_min, decode_min,
                                          queue_thr, KV_TARGET_FRAC)
        return simulate_candidate(data, base_dir, setup.ttft_slo_s)

    prefill_min, decode_min, rows = verify_pd_floors(
        evaluate, floors["prefill"], floors["decode"], max(1, plan.simulation.max_candidates // 2))
    return {"prefill": prefill_min, "decode": decode_min}, rows


def _workload_roles(plan: PlanInput, w: WorkloadInput, base_dir: Path, simulate: bool,
                    decisions: list[Decision], refusals: list[Refusal],
                    warm_pools: dict[str, WarmPool], costs: dict[str, CostEstimate]) -> list[Role]:
    slo = plan.slo_of(w)
    stats = traffic_stats(w, base_dir, plan.simulation.trace_window_s)
    _, it, par, cap = _choose_hardware(plan, w, stats, slo)
    model = get_model(w.model)
    decisions.append(Decision("nodes", f"{w.name}: hardware", f"{it.name}, TP{par.tp} x PP{par.pp}",
                              par.reason + f"; cheapest served request among {', '.join(plan.cluster.instance_types or [it.name])}"))
    gpus = par.tp * par.pp
    if gpus <= it.num_gpus:
        gpus_per_pod, pods = gpus, 1
    else:
        gpus_per_pod, pods = par.tp, par.pp
    gang = pods > 1
    domain_label = plan.cluster.nvlink_domain_label
    finest = plan.cluster.topology_labels[-1] if plan.cluster.topology_labels else None
    if gang:
        if w.gang_scheduling is False:
            refusals.append(Refusal(f"{w.name}: no gang scheduling", "a KAI gang of the whole replica",
                                    f"one replica is {pods} pods (TP{par.tp} x PP{par.pp}); scheduled pod by "
                                    "pod, a partial placement holds GPUs idle and two replicas can deadlock "
                                    "(layer2 1.4, audit GPU030)"))
        decisions.append(Decision("scheduling", f"{w.name}: gang", f"LeaderWorkerSet of size {pods}, "
                                  "schedulerName kai-scheduler (KAI's pod-grouper makes one PodGroup per group, "
                                  f"minMember {pods})", "TP x PP spans pods; all of a replica's pods start "
                                  "together or none does (layer2 2.10)"))
    else:
        decisions.append(Decision("scheduling", f"{w.name}: gang", "none needed",
                                  f"one replica is one pod with {gpus} GPUs, already atomic"))
    required = domain_label if gang and par.tp > it.num_gpus else None
    preferred = (domain_label if domain_label != "kubernetes.io/hostname" else finest) if gang else None
    decisions.append(Decision(
        "scheduling", f"{w.name}: topology",
        f"required {required}" if required else (f"preferred {preferred}" if preferred else "none"),
        (f"the TP{par.tp} group runs inside one pod on one node, i.e. one NVLink domain of "
         f"{plan.cluster.nvlink_domain_gpus or it.nvlink_domain_gpus} GPUs")
        + ("; pipeline stages prefer one block so activations cross few switches" if preferred else "")))
    cold = w.cold_start_s or cold_start_estimate_s(model, w.precision)
    window = _window_s(cold, plan.cluster.node_ready_s)
    queue_thr = queue_threshold(cap.requests_per_s, slo.ttft_p99_s)
    peak = max(stats.burst_rate_per_s, stats.mean_rate_per_s * (1 + getattr(w.traffic, "diurnal_swing_frac", 0)))
    max_repl = w.max_replicas or replicas_for(peak * 1.2, cap.requests_per_s)
    if plan.cluster.max_gpus:
        max_repl = min(max_repl, max(1, plan.cluster.max_gpus // (gpus_per_pod * pods)))
    signal, signal_why = _signal(w, cap, refusals)
    reaction = SIGNAL_LAG_S + cold + plan.cluster.node_ready_s
    setup = CandidateSetup(it.name, min(gpus, it.num_gpus), max(1, it.num_gpus // gpus), max_repl,
                           _triggers(signal, queue_thr), window, w.cold_start_s, slo.ttft_p99_s, slo.itl_p99_s)
    pool = _warm_pool(plan, w, stats, setup, cap, reaction, base_dir, simulate, pods > 1)
    max_repl = max(max_repl, pool.min_replicas + 1)
    decisions.append(Decision("warm-pool", f"{w.name}: min replicas", str(pool.min_replicas), pool.method
                              + f"; reaction time {format_duration(reaction)} (signal lag + cold start "
                              f"{format_duration(cold)} + node start-up)"))
    decisions.append(Decision(
        "replicas", f"{w.name}: scaler", f"{w.autoscaler.upper()} on {signal.replace('_', ' ')}; "
        f"queue {queue_thr}/replica, KV {KV_TARGET_FRAC:.0%}/replica; {pool.min_replicas}-{max_repl} replicas; "
        f"scale-down stabilization {window} s", signal_why + f". A replica serves ~{cap.requests_per_s:.2f} "
        f"req/s; {queue_thr} waiting requests drain in half the {slo.ttft_p99_s:g} s TTFT SLO. The window is "
        f"1.5 x (cold start + node start-up), longer than bringing a replica back, and never below 300 s"))
    prefill_frac = min(0.9, max(0.1, cap.prefill_s * cap.requests_per_s))
    if w.disaggregated:
        split = {"prefill": prefill_frac, "decode": 1 - prefill_frac}
        decisions.append(Decision(
            "replicas", f"{w.name}: prefill/decode", "two Deployments with separate ScaledObjects: prefill on "
            "queue depth, decode on KV-cache use", "prefill is compute-bound and drives TTFT, decode is "
            f"bandwidth-bound and drives ITL; the warm pool is split {prefill_frac:.0%}/{1 - prefill_frac:.0%} "
            "by each phase's share of a replica's time, then checked on a disaggregated "
            "simulation when simulation is on"))
    else:
        split = {"serve": 1.0}
    floors = {role: max(1, math.ceil(pool.min_replicas * share)) for role, share in split.items()}
    if w.disaggregated and pool.simulated:
        floors, pd_rows = _verify_pd(plan, w, stats, setup, floors, queue_thr, base_dir)
        last = pd_rows[-1]
        decisions.append(Decision(
            "warm-pool", f"{w.name}: prefill/decode floors, simulated",
            f"prefill {floors['prefill']}, decode {floors['decode']}",
            "the split floors were simulated as a disaggregated deployment (two pools, KV "
            "transfer, prefill on queue depth, decode on KV-cache use): "
            + "; ".join(f"{r.min_replicas} replicas -> P99 TTFT {_fmt_s(r.ttft_p99_s)}"
                        f"{' (meets)' if r.meets_slo else ''}" for r in pd_rows)
            + ("" if last.meets_slo else "; the last floor tried still misses the SLO")))
    roles = []
    for role, share in split.items():
        name = w.name if role == "serve" else f"{w.name}-{role}"
        role_signal = {"serve": signal, "prefill": "queue_depth", "decode": "kv_cache"}[role]
        role_min = floors[role]
        role_max = max(role_min + 1, math.ceil(max_repl * share))
        warm_pools[name] = WarmPool(role_min, pool.simulated, pool.method, pool.evidence, pool.analytic_estimate)
        roles.append(Role(
            w.name, role, name, w.tenant, w.tenant, w.model, w.precision.value, it.name, par.tp, par.pp,
            gpus_per_pod, pods, gang, role_min, role_max, role_signal, queue_thr, KV_TARGET_FRAC,
            round(cold, 1), window, 15, w.autoscaler, w.image, w.critical,
            round(cap.requests_per_s, 4), required, preferred))
    costs[w.name] = _cost(stats, cap, pool, gpus, it, roles)
    attained = costs[w.name].slo_attainment
    if attained is not None and attained < slo.goodput_frac:
        decisions.append(Decision(
            "warm-pool", f"{w.name}: goodput", f"{attained:.1%} of requests meet both SLOs in the burst "
            f"simulation, below the {slo.goodput_frac:.0%} target", "the warm pool is sized on P99 TTFT; the "
            "shortfall is inter-token latency at high batch: lower the KV threshold or max_num_seqs, or "
            "raise TP"))
    return roles


def _cost(stats, cap: Capacity, pool: WarmPool, gpus: int, it, roles: list[Role]) -> CostEstimate:
    """Per day: the mean-rate fleet (never below the floor) in whole nodes; the oracle follows
    demand exactly at the target load with fractional GPUs and no warm pool."""
    replicas = max(sum(r.min_replicas for r in roles), replicas_for(stats.mean_rate_per_s, cap.requests_per_s))
    per_node = max(1, it.num_gpus // gpus) if gpus <= it.num_gpus else 1
    nodes = math.ceil(replicas / per_node) if gpus <= it.num_gpus else replicas * math.ceil(gpus / it.num_gpus)
    gpu_hours = nodes * it.num_gpus * 24.0
    oracle = stats.mean_rate_per_s / (cap.requests_per_s * TARGET_LOAD_FRAC) * gpus * 24.0
    attained = None
    chosen = [r for r in pool.evidence if r.min_replicas == pool.min_replicas]
    if chosen:
        attained = chosen[0].slo_attainment
    return CostEstimate(round(gpu_hours, 2), round(nodes * it.on_demand_usd_per_hour * 24.0, 2),
                        round(oracle, 2), round(min(1.0, oracle / gpu_hours), 4), attained)


def _monitoring(plan: PlanInput) -> list[Decision]:
    return [
        Decision("monitoring", "dashboard", "per-replica queue depth, per-replica KV-cache use, P99 TTFT/ITL, "
                 "pending GPU pods (node provision wait), gang deferrals, consolidation events",
                 "recording rules in the PrometheusRule give the first four; gang deferrals and "
                 "consolidation are read from KAI and Karpenter events/metrics (names vary by version)"),
        Decision("monitoring", "kill switch", "PrometheusRule alert GpuscaleTTFTP99Breach per workload, "
                 "for: 5m, severity critical", "P99 TTFT over the SLO for five minutes means the autoscaling "
                 "plan is not holding; the alert's runbook rolls back to the last known autoscaler state"),
        Decision("monitoring", "roll-back", "kubectl annotate scaledobject <name> "
                 "autoscaling.keda.sh/paused-replicas=<last good replicas>, then re-apply the previous "
                 "manifests", "pausing KEDA freezes replicas at a known-good count (layer3 2.5) while the "
                 "previous ScaledObject/NodePool are restored from version control"),
    ]


def make_plan(plan: PlanInput, base_dir: Path, *, simulate: bool = True) -> Plan:
    """The whole plan; `simulate=False` sizes the warm pool analytically (fast, stated)."""
    if _single_node_cluster(plan):
        return _refusal_plan(plan)
    decisions: list[Decision] = []
    refusals: list[Refusal] = []
    warm_pools: dict[str, WarmPool] = {}
    costs: dict[str, CostEstimate] = {}
    roles: list[Role] = []
    for w in plan.workloads:
        roles += _workload_roles(plan, w, base_dir, simulate, decisions, refusals, warm_pools, costs)
    pools, pool_decisions, pool_refusals = layers.nodepools(plan, roles)
    queues, queue_decisions, queue_refusals = layers.queues(plan, roles)
    decisions = pool_decisions + queue_decisions + decisions + _monitoring(plan)
    topology = tuple(plan.cluster.topology_labels) + ("kubernetes.io/hostname",) \
        if any(r.gang for r in roles) else ()
    return Plan(
        name=plan.name, cluster_name=plan.cluster.name, decisions=tuple(decisions),
        refusals=tuple(pool_refusals + queue_refusals + refusals), roles=tuple(roles),
        nodepools=tuple(pools), queues=tuple(queues), warm_pools=warm_pools, costs=costs,
        topology_levels=topology, node_role=plan.cluster.node_role or f"KarpenterNodeRole-{plan.cluster.name}",
        reserved_ids=tuple(r.reservation_id for r in plan.cluster.reserved if r.reservation_id),
        ttft_slo_s={w.name: plan.slo_of(w).ttft_p99_s for w in plan.workloads})
