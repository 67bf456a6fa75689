"""One workload's roles: hardware, placement, scaler and warm pool, each with its decision.

`workload_roles` runs the steps in order; each step is a small function that returns what the
next needs and appends its `Decision`s and `Refusal`s to `PlanOut`. The warm pool (and, when
simulating, the hardware option and scaler variant) comes from `search.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpuscale.plan.clock import trace_clock
from gpuscale.plan.hardware import HardwareOption, hardware_options
from gpuscale.plan.inputs import PlanInput, SloInput, WorkloadInput
from gpuscale.plan.model import CostEstimate, Decision, Refusal, Role, WarmPool
from gpuscale.plan.scaler import ScalerChoice
from gpuscale.plan.search import SearchBudget
from gpuscale.plan.sizing import KV_TARGET_FRAC, traffic_stats
from gpuscale.plan.sizing_search import size_workload
from gpuscale.plan.trace_sizing import size_trace
from gpuscale.workloads.replay import TraceWorkload


@dataclass
class PlanOut:
    """What the workloads add to the plan, in order."""

    decisions: list[Decision] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    warm_pools: dict[str, WarmPool] = field(default_factory=dict)
    costs: dict[str, CostEstimate] = field(default_factory=dict)
    scenarios: dict[str, dict] = field(default_factory=dict)  # workload -> replay scenario
    unmet_slo: list[str] = field(default_factory=list)  # SLOs no fleet reaches, one line each


@dataclass(frozen=True)
class Placement:
    gpus_per_pod: int
    pods: int
    gang: bool
    required: str | None
    preferred: str | None


def _hardware_decisions(plan: PlanInput, w: WorkloadInput, opt: HardwareOption, slo: SloInput,
                        out: PlanOut) -> None:
    names = ", ".join(plan.cluster.instance_types or [opt.it.name])
    out.decisions.append(
        Decision(
            "nodes",
            f"{w.name}: hardware",
            f"{opt.it.name}, {opt.par.label}" + (
                f", {opt.nodes_per_replica} nodes per replica" if not opt.one_node else ""),
            opt.par.reason + f"; instance types allowed: {names}",
        )
    )
    allowed = 1.0 - slo.goodput_frac
    if opt.unreachable_ttft_frac > 0:
        bound = 1.0 - opt.unreachable_ttft_frac
        out.decisions.append(Decision(
            "replicas", f"{w.name}: TTFT reachable", f"{opt.unreachable_ttft_frac:.2%} of requests "
            f"can never meet the {slo.ttft_p99_s:g} s TTFT SLO at TP{opt.par.tp}",
            "their prompt alone takes longer to prefill on an idle replica; no autoscaler can fix "
            f"that, so at most {bound:.2%} of requests can meet the SLO"))
        if opt.unreachable_ttft_frac > allowed:
            out.refusals.append(Refusal(
                f"{w.name}: goodput {slo.goodput_frac:.0%} within a {slo.ttft_p99_s:g} s TTFT",
                f"the reachable bound, {bound:.2%}", "even the widest TP inside one node prefills "
                "the longest prompts slower than the TTFT SLO; raise the SLO, shorten the prompts, "
                "or use faster GPUs"))


def _placement(plan: PlanInput, w: WorkloadInput, opt: HardwareOption, out: PlanOut) -> Placement:
    par, it = opt.par, opt.it
    # a replica wider than a node takes whole nodes, one pod each (sim/replica_pods.py)
    gpus_per_pod, pods = (opt.gpus, 1) if opt.one_node else (it.num_gpus, opt.nodes_per_replica)
    gang = pods > 1
    domain_label = plan.cluster.nvlink_domain_label
    finest = plan.cluster.topology_labels[-1] if plan.cluster.topology_labels else None
    if gang:
        if w.gang_scheduling is False:
            out.refusals.append(
                Refusal(
                    f"{w.name}: no gang scheduling",
                    "a KAI gang of the whole replica",
                    f"one replica is {pods} pods ({par.label}); scheduled pod by pod, "
                    "a partial placement holds GPUs idle and two replicas can deadlock "
                    "(layer2 1.4, audit GPU030)",
                )
            )
        out.decisions.append(
            Decision(
                "scheduling",
                f"{w.name}: gang",
                f"LeaderWorkerSet of size {pods}, schedulerName "
                f"kai-scheduler (KAI's pod-grouper makes one PodGroup per group, minMember {pods})",
                f"{opt.par.label} spans pods; all of a replica's pods start together or none "
                "does (layer2 2.10)",
            )
        )
    else:
        out.decisions.append(
            Decision(
                "scheduling",
                f"{w.name}: gang",
                "none needed",
                f"one replica is one pod with {opt.gpus} GPUs, already atomic",
            )
        )
    domain_gpus = plan.cluster.nvlink_domain_gpus or it.nvlink_domain_gpus
    # a group inside a rack-scale NVLink domain (GB200 NVL72) must share it: its TP / EP
    # traffic rides NVLink there, the network elsewhere
    required = domain_label if (gang and opt.gpus <= domain_gpus
                                and domain_label != "kubernetes.io/hostname") else None
    preferred = (
        (domain_label if domain_label != "kubernetes.io/hostname" else finest) if gang else None
    )
    out.decisions.append(
        Decision(
            "scheduling",
            f"{w.name}: topology",
            f"required {required}"
            if required
            else (f"preferred {preferred}" if preferred else "none"),
            _topology_reason(par.tp, opt, domain_gpus, required, preferred),
        )
    )
    return Placement(gpus_per_pod, pods, gang, required, preferred)


def _topology_reason(tp: int, opt: HardwareOption, domain_gpus: int, required: str | None,
                     preferred: str | None) -> str:
    if opt.one_node:
        return (f"the TP{tp} group runs inside one pod on one node, i.e. one NVLink domain of "
                f"{domain_gpus} GPUs" + ("; pipeline stages prefer one block so activations "
                                         "cross few switches" if preferred else ""))
    if required:
        return (f"the replica's {opt.nodes_per_replica} pods must share one {domain_gpus}-GPU "
                "NVLink domain: its all-reduce and all-to-all ride NVLink only there")
    par = opt.par
    crossing = ("the EP all-to-all" if par.ep > 1 else "pipeline sends" if par.pp > 1
                else "the TP all-reduce")
    return (f"the replica's {opt.nodes_per_replica} nodes exchange activations over the "
            f"inter-node network ({opt.hw.layout.network_gb_s_per_gpu:g} GB/s per GPU: "
            f"{crossing})" + (f"; they prefer one {preferred} block so the traffic crosses "
                              "few switches" if preferred else ""))


def _role(w: WorkloadInput, role: str, opt: HardwareOption, placement: Placement,
          scaler: ScalerChoice, floor: int, maximum: int) -> Role:
    name = w.name if role == "serve" else f"{w.name}-{role}"
    signal = {"serve": scaler.signal, "prefill": "queue_depth", "decode": "kv_cache"}[role]
    return Role(
        # what it is
        workload=w.name, role=role, name=name, namespace=w.tenant, tenant=w.tenant,
        model=w.model, precision=w.precision.value, image=w.image, critical=w.critical,
        # where it runs (plan/hardware.py, _placement)
        instance_type=opt.it.name, tp=opt.par.tp, pp=opt.par.pp, ep=opt.par.ep,
        dp_attention=opt.par.dp_attention,
        gpus_per_pod=placement.gpus_per_pod, pods_per_replica=placement.pods,
        gang=placement.gang, topology_required=placement.required,
        topology_preferred=placement.preferred,
        # how it scales (plan/scaler.py and the search)
        min_replicas=floor, max_replicas=maximum, signal=signal,
        queue_threshold=scaler.queue_threshold, kv_threshold=KV_TARGET_FRAC,
        cold_start_s=round(scaler.cold_start_s, 1),
        scale_down_window_s=scaler.scale_down_window_s, polling_interval_s=15,
        autoscaler=w.autoscaler, capacity_rps=round(opt.cap.requests_per_s, 4))


def _pd_split(w: WorkloadInput, opt: HardwareOption, out: PlanOut) -> dict[str, float]:
    if not w.disaggregated:
        return {"serve": 1.0}
    prefill_frac = min(0.9, max(0.1, opt.cap.prefill_s * opt.cap.requests_per_s))
    out.decisions.append(
        Decision(
            "replicas",
            f"{w.name}: prefill/decode",
            "two Deployments with separate ScaledObjects: prefill "
            "on queue depth, decode on KV-cache use",
            "prefill is compute-bound and drives TTFT, decode is "
            f"bandwidth-bound and drives ITL; the floor found by the aggregated search is split "
            f"{prefill_frac:.0%}/{1 - prefill_frac:.0%} by each phase's share of a replica's time",
        )
    )
    return {"prefill": prefill_frac, "decode": 1 - prefill_frac}


def workload_roles(plan: PlanInput, w: WorkloadInput, base_dir: Path, simulate: bool,
                   out: PlanOut, budget: SearchBudget, source: str = "<plan input>"
                   ) -> list[Role]:
    """Hardware, placement, scaler and warm pool of one workload, as roles."""
    slo = plan.slo_of(w)
    stats = traffic_stats(w, base_dir, plan.simulation.trace_window_s)
    options = hardware_options(plan, w, stats, slo)
    if simulate and isinstance(w.traffic, TraceWorkload) and not w.disaggregated:
        clock = trace_clock(plan, w, stats.start_time, base_dir, source)  # the time of day
        out.decisions.append(clock.decision)
        sized = size_trace(clock.plan, w, stats, slo, options[0], base_dir, budget,
                           out.refusals, source, clock.check_start)
    else:
        sized = size_workload(plan, w, stats, slo, options, base_dir, simulate, budget,
                              out.refusals)
    opt, scaler, pool = sized.option, sized.scaler, sized.pool
    _hardware_decisions(plan, w, opt, slo, out)
    placement = _placement(plan, w, opt, out)
    out.decisions += sized.decisions
    split = _pd_split(w, opt, out)
    floors = {role: max(1, math.ceil(pool.min_replicas * share)) for role, share in split.items()}
    if w.disaggregated and pool.simulated:
        floors, pool = sized.verify_pd(floors)
        checks = [r for r in pool.evidence if r.config.startswith("prefill ")]
        out.decisions.append(Decision(
            "warm-pool", f"{w.name}: prefill/decode floors, simulated",
            f"prefill {floors['prefill']}, decode {floors['decode']}", pool.method + ": "
            + "; ".join(f"{r.config} -> P99 TTFT {_fmt_s(r.ttft_p99_s)}"
                        f"{' (meets)' if r.meets_slo else ''}" for r in checks)))
    roles = []
    for role, share in split.items():
        maximum = max(floors[role] + 1, math.ceil(sized.max_replicas * share)) \
            if sized.max_replicas > floors[role] or role != "serve" else floors[role]
        roles.append(replace(_role(w, role, opt, placement, scaler, floors[role], maximum),
                             schedule=sized.schedule, scale_up_tolerance=sized.scale_up_tolerance,
                             consolidate_after_s=sized.consolidate_after_s,
                             prepulled_image=sized.prepulled_image))
        out.warm_pools[roles[-1].name] = replace(pool, min_replicas=floors[role])
    out.costs[w.name] = sized.cost(roles)
    out.unmet_slo += sized.notes
    if sized.scenario is not None:
        out.scenarios[w.name] = sized.scenario
    return roles


def _fmt_s(value: float | None) -> str:
    if value is not None and math.isinf(value):
        return "timeout"  # requests that never got a first token (metrics/summary.py)
    return "-" if value is None else f"{value:.2f} s"
