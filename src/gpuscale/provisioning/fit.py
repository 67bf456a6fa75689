"""Resource arithmetic and first-fit packing shared by every node provider.

A node's allocatable resources are taken as the instance type's full capacity (GPUs, vCPUs,
memory); kube-reserved and DaemonSet overhead are not subtracted, because GPU pods are sized by
GPUs and the few hundred millicores of overhead never change a GPU packing decision.
Karpenter and Cluster Autoscaler both pack by *simulating* the scheduler on hypothetical
capacity; `Bin` is that hypothetical capacity and `first_fit` the simulation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from gpuscale.catalog import InstanceType
from gpuscale.cluster.objects import Node, NodeState, Pod, Taint, tolerates_all
from gpuscale.cluster.state import ClusterState

ZONE_LABEL = "topology.kubernetes.io/zone"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
# AWS instance-type labels Karpenter publishes (layer1-node-provisioning.md section 1.3).
GPU_NAME_LABEL = "karpenter.k8s.aws/instance-gpu-name"
GPU_COUNT_LABEL = "karpenter.k8s.aws/instance-gpu-count"
FAMILY_LABEL = "karpenter.k8s.aws/instance-family"

IN_FLIGHT = (NodeState.LAUNCHING, NodeState.REGISTERED)


class Resources(NamedTuple):
    """GPUs, CPU millicores and memory MiB: the three requests a GPU pod is placed by.

    A NamedTuple rather than a frozen dataclass: packing simulations create millions of these.
    """

    gpus: int = 0
    cpu_milli: int = 0
    memory_mib: int = 0

    def __add__(self, other: Resources) -> Resources:  # type: ignore[override]
        return Resources(self[0] + other[0], self[1] + other[1], self[2] + other[2])

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self[0] - other[0], self[1] - other[1], self[2] - other[2])

    def fits_in(self, capacity: Resources) -> bool:
        return self[0] <= capacity[0] and self[1] <= capacity[1] and self[2] <= capacity[2]


_CAPACITY: dict[str, Resources] = {}


def capacity_of(instance_type: InstanceType) -> Resources:
    cap = _CAPACITY.get(instance_type.name)
    if cap is None or cap[0] != instance_type.num_gpus:
        cap = Resources(instance_type.num_gpus, instance_type.vcpus * 1000,
                        int(instance_type.memory_gib * 1024))
        _CAPACITY[instance_type.name] = cap
    return cap


def request_of(pod: Pod) -> Resources:
    return Resources(pod.gpus, pod.cpu_milli, pod.memory_mib)


def sum_requests(pods) -> Resources:
    gpus = cpu = mem = 0
    for pod in pods:
        gpus += pod.gpus
        cpu += pod.cpu_milli
        mem += pod.memory_mib
    return Resources(gpus, cpu, mem)


def gpu_name_label(gpu: str) -> str:
    """Catalog GPU name -> the lower-case value AWS publishes ("H100-SXM" -> "h100")."""
    return gpu.split("-")[0].lower()


def instance_type_labels(instance_type: InstanceType) -> dict[str, str]:
    """Well-known labels of an instance type (the offering adds zone and capacity type)."""
    labels = {
        INSTANCE_TYPE_LABEL: instance_type.name,
        FAMILY_LABEL: instance_type.name.split(".")[0],
        GPU_NAME_LABEL: gpu_name_label(instance_type.gpu),
        GPU_COUNT_LABEL: str(instance_type.num_gpus),
        # The other numeric labels NodePools filter on (Gt/Lt need a value): MiB and vCPUs.
        "karpenter.k8s.aws/instance-cpu": str(instance_type.vcpus),
        "karpenter.k8s.aws/instance-memory": str(round(instance_type.memory_gib * 1024)),
        "karpenter.k8s.aws/instance-gpu-memory": str(
            round(instance_type.gpu_spec.memory_gib * 1024)),
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
    }
    family, dot, size = instance_type.name.partition(".")
    if dot:  # AWS names: family.size; the family is category letters, generation digits
        labels["karpenter.k8s.aws/instance-size"] = size
        match = re.match(r"([a-z]+)(\d+)", family)
        if match:
            labels["karpenter.k8s.aws/instance-category"] = match.group(1)
            labels["karpenter.k8s.aws/instance-generation"] = match.group(2)
    labels.update(instance_type.labels)
    return labels


def pod_priority_order(pods) -> list[Pod]:
    """Largest first: GPUs, then CPU, then memory, then age (first-fit decreasing).

    Karpenter sorts by CPU then memory (scheduling/queue.go, reference section 1.3); GPUs lead
    here because simulated serving pods often carry no CPU request, and a GPU-blind order would
    pack 1-GPU pods before 8-GPU pods.
    """
    return sorted(pods, key=lambda p: (-p.gpus, -p.cpu_milli, -p.memory_mib, p.created_s, p.name))


def pod_matches(pod: Pod, labels: Mapping[str, str], taints: tuple[Taint, ...]) -> bool:
    return all(labels.get(k) == v for k, v in pod.node_selector.items()) and tolerates_all(
        pod.tolerations, taints)


@dataclass
class Bin:
    """Spare capacity of one real or hypothetical node during a packing simulation."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    free: Resources
    pods: list[Pod] = field(default_factory=list)

    def try_add(self, pod: Pod) -> bool:
        need = request_of(pod)
        if not need.fits_in(self.free) or not pod_matches(pod, self.labels, self.taints):
            return False
        self.free = self.free - need
        self.pods.append(pod)
        return True


def first_fit(pods, bins: list[Bin]) -> list[Pod]:
    """Place each pod on the first bin with room; returns the pods that fit nowhere."""
    leftover = []
    for pod in pods:
        if not any(b.try_add(pod) for b in bins):
            leftover.append(pod)
    return leftover


def node_used(node: Node, cluster: ClusterState) -> Resources:
    return sum_requests(cluster.pods[n] for n in node.pod_names if n in cluster.pods)


def node_bin(node: Node, cluster: ClusterState, reserved: Resources = Resources()) -> Bin:
    """A live node as a bin: capacity minus bound pods minus `reserved` (nominated pods)."""
    free = capacity_of(node.instance_type) - node_used(node, cluster) - reserved
    return Bin(node.name, node.labels, node.taints, free)


def node_utilization_frac(node: Node, cluster: ClusterState) -> float:
    """Cluster Autoscaler's utilization: GPU nodes by GPU requests only, others by
    max(cpu, memory) (reference section 2.4, simulator/utilization/info.go)."""
    used = node_used(node, cluster)
    cap = capacity_of(node.instance_type)
    if cap.gpus > 0:
        return used.gpus / cap.gpus if node.state is NodeState.READY else 0.0
    return max(used.cpu_milli / max(cap.cpu_milli, 1), used.memory_mib / max(cap.memory_mib, 1))
