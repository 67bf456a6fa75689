"""Hardware options of one workload: instance type x parallelism, ranked by served-request price.

Each allowed instance type gets the TP `sizing.choose_parallelism` picks from the workload's
tokens in flight (or the TP the input gives), widened while more than `1 - goodput_frac` of
the requests could never meet the TTFT SLO because their prompt alone prefills too slowly
(issue 13, defect 5). Options whose replica fits one node come first; a replica spanning
nodes (a MoE model's experts over whole nodes, a dense model's pipeline stages) is a
LeaderWorkerSet group that the simulator places as a gang, whole nodes each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpuscale.catalog import InstanceType, get_instance_type, get_model
from gpuscale.errors import UserInputError
from gpuscale.plan.inputs import PlanInput, SloInput, WorkloadInput
from gpuscale.plan.sizing import (
    Capacity,
    Parallelism,
    TrafficStats,
    choose_parallelism,
    replica_capacity,
    replica_hardware,
    unreachable_ttft_frac,
)
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.units import GIB


@dataclass(frozen=True)
class HardwareOption:
    it: InstanceType
    par: Parallelism
    cap: Capacity
    hw: ReplicaHardware
    unreachable_ttft_frac: float  # share of requests whose prefill alone exceeds the TTFT SLO
    usd_per_request: float
    outside_domain: bool  # an explicit TP wider than the NVLink domain

    @property
    def gpus(self) -> int:
        return self.par.tp * self.par.pp

    @property
    def one_node(self) -> bool:
        return self.gpus <= self.it.num_gpus

    @property
    def nodes_per_replica(self) -> int:
        """Whole nodes one replica takes (1 inside a node)."""
        return 1 if self.one_node else math.ceil(self.gpus / self.it.num_gpus)

    @property
    def label(self) -> str:
        return f"{self.it.name} {self.par.label}"


def _widen_for_ttft(model, w: WorkloadInput, it: InstanceType, domain: int, par: Parallelism,
                    stats: TrafficStats, slo: SloInput) -> tuple[Parallelism, float]:
    """Widen TP (inside the node and domain) while too many prompts cannot meet the TTFT SLO."""
    allowed = 1.0 - slo.goodput_frac
    frac = unreachable_ttft_frac(replica_hardware(model, w.precision, it, par.gpus, par),
                                 stats.prompt_sample, slo.ttft_p99_s)
    if frac <= allowed or not isinstance(w.tp, str) or par.pp > 1 or par.gpus > it.num_gpus:
        return par, frac
    fracs, tp = {}, par.tp * 2
    while tp <= min(domain, it.num_gpus):
        if not model.tp_error(tp):
            fracs[tp] = unreachable_ttft_frac(replica_hardware(model, w.precision, it, tp),
                                              stats.prompt_sample, slo.ttft_p99_s)
        tp *= 2
    if not fracs:
        return par, frac
    meeting = [t for t, f in sorted(fracs.items()) if f <= allowed]
    # the smallest TP that brings the share within the goodput target; else the one that
    # leaves the fewest out (the widest on a tie: its prefill is the fastest)
    best = meeting[0] if meeting else min(fracs, key=lambda t: (fracs[t], -t))
    if fracs[best] < frac or not meeting:
        return Parallelism(best, 1, par.reason + f"; widened to TP{best} so that the longest "
                           "prompts prefill within the TTFT SLO" + ("" if meeting else
                           " as far as one node allows")), fracs[best]
    return par, frac


def _given_parallelism(w: WorkloadInput, it: InstanceType, domain: int,
                       par: Parallelism) -> Parallelism:
    if isinstance(w.tp, int):
        given = Parallelism(w.tp, w.pp, "", w.ep or 1, bool(w.dp_attention))
        reason = f"{given.label} as given in the input"
        if w.tp > domain and not given.dp_attention:
            reason += (f"; TP{w.tp} is wider than the {domain}-GPU NVLink domain of {it.name}, so "
                       "every layer's all-reduce crosses PCIe or the network (audit GPU033)")
        return replace(given, reason=reason)
    if w.pp > 1:
        return Parallelism(par.tp, max(par.pp, w.pp), par.reason + f"; PP{w.pp} as given")
    return par


def _given_fits(w: WorkloadInput, model, it: InstanceType, domain: int) -> bool:
    """A given TP x PP fits one node, or fills whole nodes (one LeaderWorkerSet pod each) with
    its TP group inside the NVLink domain, or is a MoE model's (EP / TP over the network, as
    SGLang's --nnodes deployments run)."""
    tp = int(w.tp)
    gpus = tp * w.pp
    if gpus <= it.num_gpus:
        return True
    return gpus % it.num_gpus == 0 and (model.is_moe or tp <= max(domain, it.num_gpus))


def hardware_options(plan: PlanInput, w: WorkloadInput, stats: TrafficStats,
                     slo: SloInput) -> list[HardwareOption]:
    """Every allowed instance type's option, best first: one node before several, an
    explicit TP inside its NVLink domain before one outside it, then cheapest request."""
    model = get_model(w.model)
    names = plan.cluster.instance_types or sorted(
        {g.instance_type for g in plan.cluster.node_groups}
    )
    options, too_small = [], []
    for name in names:
        it = get_instance_type(name)
        domain = plan.cluster.nvlink_domain_gpus or it.nvlink_domain_gpus
        if isinstance(w.tp, int) and not _given_fits(w, model, it, domain):
            too_small.append(f"{name} ({it.num_gpus})")
            continue
        par = choose_parallelism(model, w.precision, it, domain, stats, slo.itl_p99_s)
        par = _given_parallelism(w, it, domain, par)
        par, frac = _widen_for_ttft(model, w, it, domain, par, stats, slo)
        hw = replica_hardware(model, w.precision, it, par.gpus, par)
        cap = replica_capacity(hw, stats.mean_prompt_tokens, stats.mean_output_tokens,
                               slo.itl_p99_s)
        if cap.kv_tokens <= 0:
            continue
        usd = it.on_demand_usd_per_hour / it.num_gpus * par.tp * par.pp / cap.requests_per_s
        options.append(HardwareOption(it, par, cap, hw, frac, usd, par.tp > domain))
    if not options:
        if too_small and len(too_small) == len(names):
            raise UserInputError(
                f"workload {w.name}: tp {w.tp}{f' x pp {w.pp}' if w.pp > 1 else ''} needs "
                f"{int(w.tp) * w.pp} GPUs in one node (a TP "
                f"group is one pod); GPUs per node: {', '.join(too_small)}; a replica spans "
                "nodes only in whole nodes and, unless a MoE model's experts spread over them, "
                "inside one NVLink domain; use tp: choose or an instance type with more GPUs"
            )
        weights_gib = model.weight_bytes(w.precision) / GIB
        raise UserInputError(
            f"workload {w.name}: {w.model} fits none of {', '.join(names)}: "
            f"its {weights_gib:.0f} GiB of {w.precision.value} weights leave no KV cache"
            + (f" at TP{w.tp} x PP{w.pp}; use tp: choose" if isinstance(w.tp, int) else "")
        )
    allowed = 1.0 - slo.goodput_frac
    return sorted(options, key=lambda o: (not o.one_node, o.outside_domain,
                                          o.unreachable_ttft_frac > allowed, o.usd_per_request))
