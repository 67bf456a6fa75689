"""Pod annotations layer 1 honours."""

from __future__ import annotations

from gpuscale.cluster.objects import Node, Pod
from gpuscale.provisioning.fit import DO_NOT_DISRUPT
from gpuscale.units import parse_duration_s


def do_not_disrupt_active(pod: Pod, now_s: float) -> bool:
    """`karpenter.sh/do-not-disrupt` on a pod: "true" protects it for good; a duration such as
    "30m" (Karpenter >= v1.12) protects it until it has run that long; any other value is
    ignored, as Karpenter ignores it with an event (reference 1.8, utils/pod/scheduling.go)."""
    value = pod.annotations.get(DO_NOT_DISRUPT)
    if value is None:
        return False
    if value == "true":
        return True
    try:
        duration_s = parse_duration_s(value)
    except ValueError:
        return False
    started_s = pod.bound_s if pod.bound_s is not None else now_s
    return now_s - started_s < duration_s


def node_do_not_disrupt(node: Node) -> bool:
    """On a node only "true" counts (statenode.go)."""
    return node.annotations.get(DO_NOT_DISRUPT) == "true"


def eviction_cost(pod: Pod) -> float:
    """Karpenter's per-pod eviction cost: 1 + deletion-cost/2^27 + priority/2^25, clamped to
    [-10, 10] (reference 1.8, utils/disruption/disruption.go)."""
    deletion_cost = float(pod.annotations.get("controller.kubernetes.io/pod-deletion-cost", 0))
    return max(-10.0, min(10.0, 1.0 + deletion_cost / 2**27 + pod.priority / 2**25))
