"""`make_plan(input, base_dir)`: every decision of the three layers, sized and explained.

Order: refuse what cannot be planned; per workload (plan/workload.py) choose hardware and
parallelism, the scaler and the warm pool by a search over simulations (plan/search.py,
plan/sizing_search.py); then NodePools and queues from the roles; then monitoring and cost.
Every choice lands in `Plan.decisions` with its reason, every refused request in
`Plan.refusals`.
"""

from __future__ import annotations

from pathlib import Path

from gpuscale.catalog import get_instance_type
from gpuscale.plan import layers
from gpuscale.plan.inputs import PlanInput
from gpuscale.plan.model import Decision, Plan, Refusal, Role
from gpuscale.plan.search import SearchBudget
from gpuscale.plan.workload import PlanOut, workload_roles


def _single_node_cluster(plan: PlanInput) -> bool:
    cluster = plan.cluster
    types = {get_instance_type(t).gpu for t in cluster.instance_types}
    types |= {get_instance_type(g.instance_type).gpu for g in cluster.node_groups}
    if len(types) != 1:
        return False
    if not cluster.instance_types:
        return cluster.nodes_fixed <= 1
    per_node = min(get_instance_type(t).num_gpus for t in cluster.instance_types)
    return (
        cluster.max_gpus is not None and cluster.max_gpus <= per_node and cluster.nodes_fixed <= 1
    )


def _refusal_plan(plan: PlanInput) -> Plan:
    advice = (
        "Start from a managed serverless endpoint (e.g. Amazon Bedrock or SageMaker serverless/"
        "asynchronous inference, or a provider's per-token API) for this model: with one node of "
        "one GPU type there is no node to add or remove, no replica to place elsewhere and no "
        "burst headroom, so Karpenter, gang scheduling and a replica autoscaler have nothing to "
        "decide, while the node's fixed cost is paid around the clock. Come back to a "
        "Kubernetes plan when the traffic needs more than one node."
    )
    refusal = Refusal("a Karpenter / KAI / KEDA plan for a one-node, one-GPU-type cluster",
                      "no manifests; a managed serverless endpoint", advice, hard=True)
    decision = Decision(
        "overall", "plan", "no autoscaling plan", "one node of one GPU type: see refusal"
    )
    return Plan(
        plan.name, plan.cluster.name, (decision,), (refusal,), managed_endpoint_advice=advice
    )


def _monitoring(plan: PlanInput) -> list[Decision]:
    return [
        Decision(
            "monitoring",
            "dashboard",
            "per-replica queue depth, per-replica KV-cache use, P99 TTFT/ITL, "
            "pending GPU pods (node provision wait), gang deferrals, consolidation events",
            "recording rules in the PrometheusRule give the first four; gang deferrals and "
            "consolidation are read from KAI and Karpenter events/metrics (names vary by version)",
        ),
        Decision(
            "monitoring",
            "kill switch",
            "PrometheusRule alert GpuscaleTTFTP99Breach per workload, for: 5m, severity critical",
            "P99 TTFT over the SLO for five minutes means the autoscaling "
            "plan is not holding; the alert's runbook rolls back to the last known autoscaler "
            "state",
        ),
        Decision(
            "monitoring",
            "roll-back",
            "kubectl annotate scaledobject <name> "
            "autoscaling.keda.sh/paused-replicas=<last good replicas>, then re-apply the previous "
            "manifests",
            "pausing KEDA freezes replicas at a known-good count (layer3 2.5) while the "
            "previous ScaledObject/NodePool are restored from version control",
        ),
    ]


def make_plan(plan: PlanInput, base_dir: Path, *, simulate: bool = True,
              budget: SearchBudget | None = None, source: str = "<plan input>") -> Plan:
    """The whole plan; `simulate=False` sizes the warm pool analytically (fast, stated).
    `budget` carries the time budget, the clock and the progress callback (from the CLI)."""
    if _single_node_cluster(plan):
        return _refusal_plan(plan)
    budget = budget or SearchBudget()
    out = PlanOut()
    roles: list[Role] = []
    for w in plan.workloads:
        roles += workload_roles(plan, w, base_dir, simulate, out, budget, source)
    decisions, refusals, warm_pools, costs = out.decisions, out.refusals, out.warm_pools, out.costs
    pools, pool_decisions, pool_refusals = layers.nodepools(plan, roles)
    queues, queue_decisions, queue_refusals = layers.queues(plan, roles)
    decisions = pool_decisions + queue_decisions + decisions + _monitoring(plan)
    topology = tuple(plan.cluster.topology_labels) + ("kubernetes.io/hostname",) \
        if any(r.gang for r in roles) else ()
    return Plan(
        name=plan.name,
        cluster_name=plan.cluster.name,
        decisions=tuple(decisions),
        refusals=tuple(pool_refusals + queue_refusals + refusals),
        roles=tuple(roles),
        nodepools=tuple(pools),
        queues=tuple(queues),
        warm_pools=warm_pools,
        costs=costs,
        topology_levels=topology,
        node_role=plan.cluster.node_role or f"KarpenterNodeRole-{plan.cluster.name}",
        reserved_ids=tuple(r.reservation_id for r in plan.cluster.reserved if r.reservation_id),
        ttft_slo_s={w.name: plan.slo_of(w).ttft_p99_s for w in plan.workloads},
        goodput_frac={w.name: plan.slo_of(w).goodput_frac for w in plan.workloads},
        scenarios=dict(sorted(out.scenarios.items())),
        unmet_slo=tuple(out.unmet_slo),
    )
