"""Nodes and pods as the layers see them."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from gpuscale.catalog import InstanceType
from gpuscale.cluster.groups import PodGroupSpec

GPU_RESOURCE = "nvidia.com/gpu"
# GPU feature discovery's label of a multi-node NVLink domain (the ClusterUUID.CliqueID of an
# NVL72 rack's GPUs; NVIDIA k8s-device-plugin gpu-feature-discovery, GPU Operator).
NVLINK_CLIQUE_LABEL = "nvidia.com/gpu.clique"


class NodeState(str, Enum):
    """Lifecycle of a node, following Karpenter's NodeClaim conditions.

    LAUNCHING: cloud instance requested, not yet registered. REGISTERED: the Node object
    exists but the GPU device plugin has not advertised `nvidia.com/gpu` (not schedulable for
    GPU pods). READY: GPUs allocatable. DRAINING: cordoned, pods being evicted. GONE: deleted.
    """

    LAUNCHING = "launching"
    REGISTERED = "registered"
    READY = "ready"
    DRAINING = "draining"
    GONE = "gone"


class PodPhase(str, Enum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal or Exists; empty key with Exists tolerates everything
    value: str = ""
    effect: str = ""  # empty = all effects

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


def tolerates_all(tolerations: tuple[Toleration, ...], taints: tuple[Taint, ...]) -> bool:
    """True when every NoSchedule/NoExecute taint is tolerated (PreferNoSchedule is soft)."""
    return all(
        taint.effect == "PreferNoSchedule" or any(t.tolerates(taint) for t in tolerations)
        for taint in taints
    )


@dataclass(slots=True)
class Node:
    name: str
    instance_type: InstanceType
    zone: str
    capacity_type: str = "on-demand"  # on-demand | spot | reserved
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    state: NodeState = NodeState.LAUNCHING
    pool: str = ""  # NodePool or node-group name
    created_s: float = 0.0
    ready_s: float | None = None
    deleted_s: float | None = None
    gpus_allocated: int = 0
    pod_names: list[str] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)

    @property
    def num_gpus(self) -> int:
        return self.instance_type.num_gpus

    @property
    def gpus_free(self) -> int:
        return self.num_gpus - self.gpus_allocated if self.state is NodeState.READY else 0

    @property
    def price_usd_per_hour(self) -> float:
        return self.instance_type.price_usd_per_hour(self.capacity_type)

    def billed_s(self, now_s: float) -> float:
        """Seconds billed so far: from launch request to deletion (clouds bill a booting VM)."""
        end_s = self.deleted_s if self.deleted_s is not None else now_s
        return max(0.0, end_s - self.created_s)


@dataclass(slots=True)
class Pod:
    name: str
    gpus: int
    cpu_milli: int = 0
    memory_mib: int = 0
    priority: int = 0
    tolerations: tuple[Toleration, ...] = ()
    node_selector: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    phase: PodPhase = PodPhase.PENDING
    node_name: str | None = None
    created_s: float = 0.0
    bound_s: float | None = None
    group: str | None = None  # PodGroup / gang name
    queue: str | None = None  # KAI queue
    # Added by the scheduling layer (defaults keep every other layer unchanged):
    # the PodGroup this pod's controller formed (min_member, topology, delays), shared by all
    # pods of the group; None = the scheduler forms one (see scheduling/groups.py).
    group_spec: PodGroupSpec | None = None
    # PriorityClass preemptionPolicy: PreemptLowerPriority (Kubernetes default) or Never.
    preemption_policy: str = "PreemptLowerPriority"

    def fits_selector(self, node: Node) -> bool:
        return all(node.labels.get(k) == v for k, v in self.node_selector.items())
