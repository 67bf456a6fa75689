"""Decision rules for layer 1 (NodePools) and layer 2 (KAI queues), each with its reason.

Pure functions of the plan input and the roles already sized; they return the plan objects
plus `Decision`/`Refusal` rows. References: layer1-node-provisioning.md 1.4 and 1.8,
layer2-scheduling.md 2.2-2.6.
"""

from __future__ import annotations

import math

from gpuscale.catalog import get_instance_type
from gpuscale.catalog.specs import ANY_ZONE
from gpuscale.plan.inputs import PlanInput, TrafficShape
from gpuscale.plan.model import Decision, NodePoolPlan, QueuePlan, Refusal, Role
from gpuscale.units import format_duration

# calibration.md A18 / audit GPU021: a GPU node is re-bought in 3-10 min; Cluster Autoscaler
# waits 10 min before removing an unneeded node. Never consolidate sooner than this.
MIN_CONSOLIDATE_AFTER_S = 600
MAX_CONSOLIDATE_AFTER_S = 3600
# Keep an empty node through a traffic dip when the dip is shorter than this many restarts
# (node start-up + replica cold start): re-buying costs a restart of GPU time plus SLO risk.
KEEP_THROUGH_DIP_RESTARTS = 3
SERVING_POOL = "gpu-serving"
BATCH_POOL = "gpu-batch"


def _round_up_min(seconds: float) -> int:
    return int(math.ceil(seconds / 60.0) * 60)


def consolidate_after_s(plan: PlanInput, roles: list[Role]) -> tuple[int, str]:
    """consolidateAfter from cold start and traffic dips (the rule is in docs/plan.md), or the
    one a trace search simulated (the longest, when several roles share the NodePool)."""
    rule = consolidate_after_for(plan, max((r.cold_start_s for r in roles), default=0.0))
    chosen = [r.consolidate_after_s for r in roles if r.consolidate_after_s is not None]
    if not chosen:
        return rule
    unchosen = [r for r in roles if r.consolidate_after_s is None]
    value = max(chosen + ([rule[0]] if unchosen else []))
    return value, ("the value the trace search simulated for its schedule: capacity for the "
                   "known ramps comes from the cron windows, so an emptied node is let go "
                   "sooner than the cold-start rule's "
                   f"{format_duration(rule[0])} (it bills only after each window)")


def consolidate_after_for(plan: PlanInput, cold_start_s: float) -> tuple[int, str]:
    """`consolidate_after_s` for a replica cold start (the search simulates it per candidate)."""
    restart = plan.cluster.node_ready_s + cold_start_s
    dips = [w.traffic.burst_period_s - w.traffic.burst_duration_s for w in plan.workloads
            if isinstance(w.traffic, TrafficShape) and w.traffic.burst_factor > 1]
    dip = max(dips, default=0.0)
    if dip and dip <= KEEP_THROUGH_DIP_RESTARTS * restart:
        value = dip + 60
        why = (
            f"the gap between bursts ({format_duration(dip)}) is under "
            f"{KEEP_THROUGH_DIP_RESTARTS} restarts ({format_duration(restart)} each: "
            "node start-up + cold start), so an emptied node is kept through it"
        )
    else:
        value = 2 * restart
        why = (
            f"twice a restart ({format_duration(restart)}: node start-up "
            f"{format_duration(plan.cluster.node_ready_s)}"
            " + replica cold start), so a short dip does not cost a re-buy"
            + (
                f"; the {format_duration(dip)} gaps between bursts are long enough to release nodes"
                if dip
                else ""
            )
        )
    clamped = min(MAX_CONSOLIDATE_AFTER_S, max(MIN_CONSOLIDATE_AFTER_S, _round_up_min(value)))
    if clamped != _round_up_min(value):
        why += (f"; clamped to [{format_duration(MIN_CONSOLIDATE_AFTER_S)}, "
                f"{format_duration(MAX_CONSOLIDATE_AFTER_S)}]")
    return clamped, why


def _gpus_rounded_to_nodes(gpus: int, instance_types: tuple[str, ...]) -> int:
    per_node = max(get_instance_type(t).num_gpus for t in instance_types)
    return max(per_node, math.ceil(gpus / per_node) * per_node)


def _gang_zone(pool: str, zones: tuple[str, ...], roles: list[Role],
               types: tuple[str, ...], decisions: list[Decision]) -> tuple[str, ...]:
    """One zone for a pool whose replicas span nodes. Karpenter launches a node per pending
    pod and knows nothing of KAI's gang, so over several zones it may start a group's nodes
    apart, where the group can never run (its pods exchange activations over EFA, which
    stays inside one availability zone) and the nodes idle until consolidated; the
    simulated Karpenter does the same (a scheduled scale-up of a 2-node replica took 25 min
    instead of 5). The input's first zone, else the first the pool's types share."""
    if not any(r.pods_per_replica > 1 for r in roles) or len(zones) == 1:
        return zones
    shared = [z for z in get_instance_type(types[0]).zones
              if z != ANY_ZONE and all(z in get_instance_type(t).zones for t in types)]
    chosen = zones[:1] or tuple(shared[:1])
    if not chosen:
        return zones
    decisions.append(Decision(
        "nodes", f"NodePool {pool}: one zone", chosen[0],
        "a replica spans nodes (a LeaderWorkerSet group): Karpenter launches each pending pod's "
        "node on its own and would spread a group over zones, where it cannot run (EFA stays "
        "inside one availability zone); " + (
            "the first of the input's zones" if zones else
            "the first zone every allowed instance type is offered in (give cluster.zones to "
            "choose)")))
    return chosen


def nodepools(
    plan: PlanInput, roles: list[Role]
) -> tuple[list[NodePoolPlan], list[Decision], list[Refusal]]:
    decisions: list[Decision] = []
    refusals: list[Refusal] = []
    cluster = plan.cluster
    if cluster.consolidation_policy == "WhenEmptyOrUnderutilized":
        refusals.append(
            Refusal(
                "consolidationPolicy: WhenEmptyOrUnderutilized on the GPU NodePools",
                "WhenEmpty",
                "Karpenter would evict running GPU pods to repack them; each evicted replica "
                "reloads its model for minutes and a training step in progress is lost "
                "(layer1 1.8, audit GPU020)",
            )
        )
    after_s, after_why = consolidate_after_s(plan, roles)
    zones = tuple(cluster.zones)
    pools: list[NodePoolPlan] = []
    serving = [r for r in roles if r.critical]
    batch = [r for r in roles if not r.critical]
    training = [t for t in plan.all_tenants if t.kind == "training"]
    if serving:
        types = tuple(sorted({r.instance_type for r in serving}))
        gpus = sum(r.max_replicas * r.gpus_per_replica for r in serving)
        limit = _gpus_rounded_to_nodes(min(gpus, cluster.max_gpus or gpus), types)
        capacity = ("reserved", "on-demand") if cluster.reserved else ("on-demand",)
        serving_zones = _gang_zone(SERVING_POOL, zones, serving, types, decisions)
        pools.append(
            NodePoolPlan(SERVING_POOL, types, capacity, serving_zones, limit, after_s, "1",
                         weight=50)
        )
        decisions += [
            Decision(
                "nodes",
                f"NodePool {SERVING_POOL}: instance types and capacity",
                f"{', '.join(types)}; {' then '.join(capacity)}",
                "the types the SLO-critical models were sized on; no spot, because a 2-minute "
                "interruption notice is shorter than a replica's cold start"
                + (
                    "; reserved capacity is used first (Karpenter order reserved > spot > "
                    "on-demand)"
                    if cluster.reserved
                    else ""
                ),
            ),
            Decision(
                "nodes",
                f"NodePool {SERVING_POOL}: GPU limit",
                f"nvidia.com/gpu: {limit}",
                f"the sum of every critical role's max replicas x GPUs per replica ({gpus}), "
                "rounded up to whole nodes"
                + (
                    f" and capped by the cluster's {cluster.max_gpus} GPUs"
                    if cluster.max_gpus and cluster.max_gpus < gpus
                    else ""
                ),
            ),
        ]
    if batch or training:
        types = tuple(
            sorted(
                {r.instance_type for r in batch} | set(cluster.instance_types if training else ())
            )
        )
        gpus = sum(r.max_replicas * r.gpus_per_replica for r in batch)
        gpus += sum(
            max(t.gpu_limit, t.gpu_quota or 0) if t.gpu_limit >= 0 else (t.gpu_quota or 0) * 2
            for t in training
        )
        limit = _gpus_rounded_to_nodes(min(max(gpus, 1), cluster.max_gpus or max(gpus, 1)), types)
        batch_zones = _gang_zone(BATCH_POOL, zones, batch, types, decisions)
        pools.append(
            NodePoolPlan(
                BATCH_POOL, types, ("spot", "on-demand"), batch_zones, limit, after_s, "1",
                weight=10
            )
        )
        decisions.append(
            Decision(
                "nodes",
                f"NodePool {BATCH_POOL}",
                f"{', '.join(types)}; spot then on-demand; nvidia.com/gpu: {limit}",
                "non-critical inference and training tolerate interruption, so spot comes first; "
                "the limit covers their quotas/limits (twice the quota when unlimited)",
            )
        )
    if pools:
        decisions += [
            Decision(
                "nodes",
                "consolidation",
                f"consolidationPolicy: WhenEmpty, consolidateAfter: {format_duration(after_s)}",
                "only empty GPU nodes are removed; " + after_why,
            ),
            Decision(
                "nodes",
                "taint",
                "nvidia.com/gpu=true:NoSchedule on every GPU node",
                "keeps CPU-only pods off GPU nodes, so they neither take a GPU node's CPU nor "
                "keep an empty GPU node from being consolidated (audit GPU023)",
            ),
            Decision(
                "nodes",
                "disruption budget",
                'nodes: "1"',
                "at most one GPU node is drained at a "
                "time, so one replica's cold start is the worst a consolidation or drift costs",
            ),
            Decision(
                "nodes",
                "karpenter.sh/do-not-disrupt",
                "on training pods (annotate their pod templates), not on serving pods",
                "a training pod loses its progress when evicted; serving pods are protected by a "
                "PodDisruptionBudget instead, so drift and expiry can still replace their nodes "
                "one at a time"
                if training
                else "not needed: serving pods are protected by a PodDisruptionBudget, so drift "
                "and expiry can still replace nodes one at a time",
            ),
        ]
    return pools, decisions, refusals


def queues(
    plan: PlanInput, roles: list[Role]
) -> tuple[list[QueuePlan], list[Decision], list[Refusal]]:
    """A parent queue for the cluster and one leaf per tenant (only leaves take jobs)."""
    decisions: list[Decision] = []
    refusals: list[Refusal] = []
    parent = f"{plan.name}-root"
    leaves: list[QueuePlan] = []
    for tenant in plan.all_tenants:
        peak = sum(r.max_replicas * r.gpus_per_replica for r in roles if r.tenant == tenant.name)
        if tenant.kind == "inference":
            quota = peak if tenant.gpu_quota is None else tenant.gpu_quota
            if quota < peak:
                refusals.append(
                    Refusal(
                        f"queue {tenant.name}: gpu quota {quota}",
                        f"quota {peak} (the peak of its replicas)",
                        "inference runs non-preemptible (priority class inference, 125), and KAI "
                        "lets non-preemptible pods use only in-quota GPUs: the replicas above the "
                        "quota would never start (layer2 2.3)",
                    )
                )
                quota = peak
        else:
            quota = tenant.gpu_quota or 0
            if peak > quota:
                # Serving replicas run non-preemptible wherever they are queued; in a training
                # tenant they would get only its (training-sized) quota and the rest never start.
                served = sorted({r.workload for r in roles if r.tenant == tenant.name})
                refusals.append(
                    Refusal(
                        f"queue {tenant.name} (kind training): gpu quota {quota}",
                        f"quota {peak}, the peak of the serving replicas it hosts "
                        f"({', '.join(served)})",
                        "serving pods run non-preemptible (priority class inference, 125), and "
                        "KAI lets non-preemptible pods use only in-quota GPUs: beyond the quota "
                        "they would never start (layer2 2.3, audit GPU041); or move the workloads "
                        "to an inference tenant",
                    )
                )
                quota = peak
        leaves.append(QueuePlan(tenant.name, parent, tenant.priority, quota, tenant.gpu_limit,
                                tenant.over_quota_weight, tenant.kind))
    limit = plan.cluster.max_gpus or -1
    queues_out = [
        QueuePlan(parent, None, 100, sum(q.gpu_quota for q in leaves), limit, 1, "parent")
    ] + leaves
    inference = [q for q in leaves if q.kind == "inference"]
    training = [q for q in leaves if q.kind == "training"]
    decisions.append(
        Decision(
            "scheduling",
            "KAI queues",
            f"{parent} -> "
            + ", ".join(
                f"{q.name} (quota {q.gpu_quota:g}, limit {q.gpu_limit:g}, priority {q.priority})"
                for q in leaves
            ),
            "one leaf per tenant under a cluster parent (only leaves take workloads); inference "
            "quotas cover their peak replicas so nothing of it runs over quota where reclaim "
            "could take it",
        )
    )
    if inference and training:
        decisions.append(
            Decision(
                "scheduling",
                "preemption",
                "inference: priorityClassName inference (125, non-preemptible); "
                "training: train (50, preemptible)",
                "production inference is never preempted or reclaimed by training; training "
                "borrows idle "
                "GPUs over its quota and gives them back when inference grows (layer2 2.3, 2.6)",
            )
        )
        low = [q.name for q in inference if any(q.priority <= t.priority for t in training)]
        if low:
            decisions.append(
                Decision(
                    "scheduling",
                    "queue priority",
                    f"check {', '.join(low)}",
                    "an inference queue has a priority not above a training queue: idle GPUs "
                    "beyond the quotas are offered to training first",
                )
            )
    return queues_out, decisions, refusals
