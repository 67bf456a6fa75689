"""The Kubernetes objects the three layers share: nodes, pods, taints, tolerations.

Belongs here: mutable simulation state as `@dataclass(slots=True)` and small predicates on it
(does a pod tolerate a node's taints, does it fit). Must not decide anything: deciding is the
layers' job (provisioning, scheduling, autoscaling).
"""

from gpuscale.cluster.objects import (
    GPU_RESOURCE,
    Node,
    NodeState,
    Pod,
    PodPhase,
    Taint,
    Toleration,
    tolerates_all,
)

__all__ = ["GPU_RESOURCE", "Node", "NodeState", "Pod", "PodPhase", "Taint", "Toleration",
           "tolerates_all"]
