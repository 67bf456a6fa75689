"""A per-cycle view of free node capacity, with assume/forget for trial placements.

kube-scheduler keeps such a cache (assumed pods) and KAI takes a snapshot per cycle and works
on it inside Statements (layer2-scheduling.md 2.5, 2.10); here one object serves both.
CPU and memory are not tracked by `Node`, so they are summed from the pods bound to it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuscale.cluster.objects import Node, NodeState, Pod, tolerates_all
from gpuscale.cluster.state import ClusterState

MIB_PER_GIB = 1024
_NONE = np.zeros(0, dtype=np.intp)


@dataclass(slots=True)
class NodeFree:
    """Free capacity of one Ready node during a cycle (GPUs whole, as the device plugin)."""

    node: Node
    gpus: int
    cpu_milli: int
    memory_mib: int
    cap_cpu_milli: int
    cap_memory_mib: int
    index: int = -1  # position in Snapshot.nodes (and in its arrays)

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
        # Lowest priority of any pod bound to a snapshot node (lowered by `assume`, never
        # raised by `forget`, so it is a bound): no pod below it means no preemption victim.
        self._min_bound_priority = float("inf")
        pods_by_name = cluster.pods
        for node in cluster.nodes.values():
            if node.state is not NodeState.READY:
                continue
            cap_cpu = node.instance_type.vcpus * 1000
            cap_mem = int(node.instance_type.memory_gib * MIB_PER_GIB)
            # One pass over the node's pods (this runs for every node at every cycle).
            used_cpu = used_mem = 0
            for pod_name in node.pod_names:
                pod = pods_by_name.get(pod_name)
                if pod is not None:
                    used_cpu += pod.cpu_milli
                    used_mem += pod.memory_mib
                    if pod.priority < self._min_bound_priority:
                        self._min_bound_priority = pod.priority
            nf = NodeFree(node, node.gpus_free, cap_cpu - used_cpu, cap_mem - used_mem,
                          cap_cpu, cap_mem, len(self.nodes))
            self.nodes.append(nf)
            self.by_name[node.name] = nf
        self._arrays: np.ndarray | None = None  # built on the first feasible_indices()
        self._static_ok: dict[tuple, np.ndarray] = {}
        # Pod shapes that fit nowhere, valid while capacity has only been taken (`assume`);
        # any `forget` gives capacity back and clears them.
        self._fits_nowhere: set[tuple] = set()

    def assume(self, pod: Pod, nf: NodeFree) -> None:
        nf.gpus -= pod.gpus
        nf.cpu_milli -= pod.cpu_milli
        nf.memory_mib -= pod.memory_mib
        if pod.priority < self._min_bound_priority:
            self._min_bound_priority = pod.priority
        self._sync(nf)

    def forget(self, pod: Pod, nf: NodeFree) -> None:
        nf.gpus += pod.gpus
        nf.cpu_milli += pod.cpu_milli
        nf.memory_mib += pod.memory_mib
        self._fits_nowhere.clear()
        self._sync(nf)

    def has_bound_priority_below(self, priority: int) -> bool:
        return self._min_bound_priority < priority

    def _sync(self, nf: NodeFree) -> None:
        if self._arrays is not None and nf.index >= 0:
            self._arrays[:3, nf.index] = (nf.gpus, nf.cpu_milli, nf.memory_mib)

    # -- vectorised filters: one numpy pass over the nodes per pod instead of a Python call
    # per node (the whole openb list on its 1,213 nodes is 10M filter calls otherwise).
    def arrays(self) -> np.ndarray:
        """Rows: free GPUs, free CPU (milli), free memory (MiB), CPU and memory capacity;
        one column per node of `nodes`, as float64 (what the scorers take)."""
        if self._arrays is None:
            self._arrays = np.array([[nf.gpus for nf in self.nodes],
                                     [nf.cpu_milli for nf in self.nodes],
                                     [nf.memory_mib for nf in self.nodes],
                                     [nf.cap_cpu_milli for nf in self.nodes],
                                     [nf.cap_memory_mib for nf in self.nodes]],
                                    dtype=float).reshape(5, len(self.nodes))
        return self._arrays

    def _static_mask(self, pod: Pod) -> np.ndarray:
        """TaintToleration and nodeSelector per node for this pod's shape (cached: taints and
        labels do not change within a cycle)."""
        key = (pod.tolerations, tuple(sorted(pod.node_selector.items())))
        mask = self._static_ok.get(key)
        if mask is None:
            mask = np.array([tolerates_all(pod.tolerations, nf.node.taints)
                             and pod.fits_selector(nf.node) for nf in self.nodes], dtype=bool)
            self._static_ok[key] = mask
        return mask

    def feasible_indices(self, pod: Pod) -> np.ndarray:
        """Indices into `nodes` of the nodes passing `passes_filters`, in node order."""
        shape = (pod.gpus, pod.cpu_milli, pod.memory_mib, pod.tolerations,
                 tuple(sorted(pod.node_selector.items())) if pod.node_selector else ())
        if shape in self._fits_nowhere:
            return _NONE
        a = self.arrays()
        ok = ((a[0] >= pod.gpus) & (a[1] >= pod.cpu_milli) & (a[2] >= pod.memory_mib)
              & self._static_mask(pod))
        found = np.flatnonzero(ok)
        if not len(found):
            self._fits_nowhere.add(shape)
        return found

    def best_fit(self, pod: Pod, pack: bool) -> NodeFree | None:
        """KAI's pick over all nodes with no topology rank (kai/scheduler.py `_pick`): the
        feasible node with the fewest (pack) or most GPUs left after placing, or CPU for a
        CPU-only pod; the first in node order on ties (argmin returns the first)."""
        found = self.feasible_indices(pod)
        if not len(found):
            return None
        a = self.arrays()
        left = a[0, found] - pod.gpus if pod.gpus else a[1, found] - pod.cpu_milli
        # ndarray.argmin: np.argmin's own body, without its Python wrapper per pod
        return self.nodes[int(found[int((left if pack else -left).argmin())])]

    def feasible(self, pod: Pod) -> list[NodeFree]:
        return [self.nodes[i] for i in self.feasible_indices(pod)]

    def free_gpus(self) -> int:
        return sum(nf.gpus for nf in self.nodes)
