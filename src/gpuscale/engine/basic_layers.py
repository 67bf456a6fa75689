"""The simplest layer 1 and layer 2 that make scale-up cost time.

`FirstFitScheduler`: binds pending pods, oldest first, to the first ready node (by name) with
enough free GPUs; what does not fit is reported unschedulable. `NodePool`: ready nodes at t=0
plus nodes launched on demand that become ready after a drawn launch delay, removed after an
optional empty TTL. Karpenter, Cluster Autoscaler, kube-scheduler and KAI models plug into the
same seams (`cluster.state.ClusterState` listeners and `notify_unschedulable`).
"""

from __future__ import annotations

import math
from typing import Callable

from gpuscale.catalog import InstanceType
from gpuscale.cluster.objects import Node, NodeState, Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, Simulation


class FirstFitScheduler:
    def __init__(self, sim: Simulation, cluster: ClusterState,
                 on_unschedulable: Callable[[list[Pod], float], None]) -> None:
        self.sim = sim
        self.cluster = cluster
        self.on_unschedulable = on_unschedulable
        self._pending_cycle = False
        cluster.on_pod_pending.append(lambda pod: self.request_cycle())
        cluster.on_node_ready.append(lambda node: self.request_cycle())
        cluster.on_pod_evicted.append(lambda pod, cause: self.request_cycle())
        cluster.on_pod_deleted.append(lambda pod: self.request_cycle())

    def request_cycle(self) -> None:
        """Batch all changes of one instant into one scheduling cycle."""
        if not self._pending_cycle:
            self._pending_cycle = True
            self.sim.schedule(self.sim.now_s, Priority.LIFECYCLE + 1, self.cycle)

    def cycle(self) -> None:
        self._pending_cycle = False
        now_s = self.sim.now_s
        pending = sorted(self.cluster.pending_pods(), key=lambda p: (p.created_s, p.name))
        if not pending:
            return
        nodes = sorted(self.cluster.ready_nodes(), key=lambda n: n.name)
        unschedulable = []
        for pod in pending:
            node = next((n for n in nodes if n.gpus_free >= pod.gpus), None)
            if node is None:
                unschedulable.append(pod)
            else:
                self.cluster.bind(pod, node, now_s)
        if unschedulable:
            self.on_unschedulable(unschedulable, now_s)


class NodePool:
    """A fixed warm floor plus on-demand nodes of one instance type."""

    def __init__(self, sim: Simulation, cluster: ClusterState, instance_type: InstanceType, *,
                 capacity_type: str, max_nodes: int, launch_delay_s: Callable[[], float],
                 empty_node_ttl_s: float = math.inf) -> None:
        self.sim = sim
        self.cluster = cluster
        self.instance_type = instance_type
        self.capacity_type = capacity_type
        self.max_nodes = max_nodes
        self.launch_delay_s = launch_delay_s
        self.empty_node_ttl_s = empty_node_ttl_s
        self._seq = 0
        self.launch_waits_s: list[float] = []
        self._first_unschedulable_s: dict[str, float] = {}
        cluster.on_pod_bound.append(self._on_pod_bound)

    def add_ready_node(self, now_s: float) -> Node:
        node = self._new_node(now_s)
        self.cluster.mark_node_ready(node, now_s)
        return node

    def _new_node(self, now_s: float) -> Node:
        self._seq += 1
        zones = self.instance_type.zones
        name = f"{self.instance_type.name}-{self._seq}"
        zone = zones[(self._seq - 1) % len(zones)]
        node = Node(name=name, instance_type=self.instance_type, zone=zone,
                    capacity_type=self.capacity_type, created_s=now_s, pool="default",
                    labels={"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone,
                            "node.kubernetes.io/instance-type": self.instance_type.name})
        self.cluster.add_node(node)
        return node

    def notify_unschedulable(self, pods: list[Pod], now_s: float) -> None:
        for pod in pods:
            self._first_unschedulable_s.setdefault(pod.name, now_s)
        launching_gpus = sum(n.num_gpus for n in self.cluster.nodes.values()
                             if n.state is NodeState.LAUNCHING)
        needed_gpus = sum(p.gpus for p in pods) - launching_gpus
        per_node = self.instance_type.num_gpus
        while needed_gpus > 0 and len(self.cluster.nodes) < self.max_nodes:
            node = self._new_node(now_s)
            self.sim.schedule(now_s + self.launch_delay_s(), Priority.LIFECYCLE, self._ready, node)
            needed_gpus -= per_node

    def _ready(self, node: Node) -> None:
        if node.name in self.cluster.nodes:
            self.cluster.mark_node_ready(node, self.sim.now_s)
            self._arm_ttl(node)

    def _on_pod_bound(self, pod: Pod) -> None:
        first = self._first_unschedulable_s.pop(pod.name, None)
        if first is not None:
            self.launch_waits_s.append(self.sim.now_s - first)

    def _arm_ttl(self, node: Node) -> None:
        if math.isfinite(self.empty_node_ttl_s):
            self.sim.schedule(self.sim.now_s + self.empty_node_ttl_s, Priority.LIFECYCLE,
                              self._maybe_remove, node)

    def _maybe_remove(self, node: Node) -> None:
        if node.name not in self.cluster.nodes:
            return
        if node.gpus_allocated == 0:
            self.cluster.remove_node(node, self.sim.now_s, "empty")
        else:
            self._arm_ttl(node)
