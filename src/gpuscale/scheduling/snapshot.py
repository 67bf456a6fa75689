"""A per-cycle view of free node capacity, with assume/forget for trial placements.

kube-scheduler keeps such a cache (assumed pods) and KAI takes a snapshot per cycle and works
on it inside Statements (layer2-scheduling.md 2.5, 2.10); here one object serves both.
CPU and memory are not tracked by `Node`, so they are summed from the pods bound to it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuscale.cluster.objects import Node, NodeState, Pod, tolerates_all
from gpuscale.cluster.state import ClusterState

MIB_PER_GIB = 1024


@dataclass(slots=True)
class NodeFree:
    """Free capacity of one Ready node during a cycle (GPUs whole, as the device plugin)."""

    node: Node
    gpus: int
    cpu_milli: int
    memory_mib: int
    cap_cpu_milli: int
    cap_memory_mib: int

    @property
    def name(self) -> str:
        return self.node.name

    def label(self, key: str) -> str:
        return self.node.labels.get(key, "")


def passes_filters(pod: Pod, nf: NodeFree) -> bool:
    """kube-scheduler filters that matter for GPU pods: NodeResourcesFit (GPUs, CPU,
    memory), TaintToleration, NodeAffinity via nodeSelector (layer2-scheduling.md 1.1)."""
    return (pod.gpus <= nf.gpus and pod.cpu_milli <= nf.cpu_milli
            and pod.memory_mib <= nf.memory_mib
            and tolerates_all(pod.tolerations, nf.node.taints) and pod.fits_selector(nf.node))


def passes_static_filters(pod: Pod, nf: NodeFree) -> bool:
    """Filters that no eviction can change (taints, selector, capacity of an empty node)."""
    return (pod.gpus <= nf.node.num_gpus and pod.cpu_milli <= nf.cap_cpu_milli
            and pod.memory_mib <= nf.cap_memory_mib
            and tolerates_all(pod.tolerations, nf.node.taints) and pod.fits_selector(nf.node))


class Snapshot:
    """Free capacity of all Ready nodes, in the cluster's node order (deterministic)."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.nodes: list[NodeFree] = []
        self.by_name: dict[str, NodeFree] = {}
        for node in cluster.nodes.values():
            if node.state is not NodeState.READY:
                continue
            cap_cpu = node.instance_type.vcpus * 1000
            cap_mem = int(node.instance_type.memory_gib * MIB_PER_GIB)
            pods = [cluster.pods[n] for n in node.pod_names if n in cluster.pods]
            nf = NodeFree(node, node.gpus_free, cap_cpu - sum(p.cpu_milli for p in pods),
                          cap_mem - sum(p.memory_mib for p in pods), cap_cpu, cap_mem)
            self.nodes.append(nf)
            self.by_name[node.name] = nf

    def assume(self, pod: Pod, nf: NodeFree) -> None:
        nf.gpus -= pod.gpus
        nf.cpu_milli -= pod.cpu_milli
        nf.memory_mib -= pod.memory_mib

    def forget(self, pod: Pod, nf: NodeFree) -> None:
        nf.gpus += pod.gpus
        nf.cpu_milli += pod.cpu_milli
        nf.memory_mib += pod.memory_mib

    def feasible(self, pod: Pod) -> list[NodeFree]:
        return [nf for nf in self.nodes if passes_filters(pod, nf)]

    def free_gpus(self) -> int:
        return sum(nf.gpus for nf in self.nodes)
