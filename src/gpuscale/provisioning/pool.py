"""`pool`: the default node provider of a `simulate` scenario without `nodes:`.

A warm floor of ready nodes (adopted at t=0) plus nodes of one instance type launched on
demand, all in the type's first zone: pods reported unschedulable make enough nodes appear to
cover their GPUs (minus the GPUs already launching), each ready after a drawn launch delay,
removed after an optional empty TTL. It is what a scenario's `cluster:` block describes;
Karpenter, Cluster Autoscaler and `static` plug into the same `NodeProvider` seam.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from gpuscale.catalog import InstanceType
from gpuscale.cluster.objects import Node, NodeState, Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, RandomStreams, Simulation
from gpuscale.metrics.store import percentile_linear

KIND = "pool"


class NodePool:
    """A fixed warm floor plus on-demand nodes of one instance type."""

    kind = KIND

    def __init__(self, instance_type: InstanceType, *, capacity_type: str, max_nodes: int,
                 launch_delay_s: Callable[[np.random.Generator], float],
                 empty_node_ttl_s: float = math.inf) -> None:
        self.instance_type = instance_type
        self.capacity_type = capacity_type
        self.max_nodes = max_nodes
        self.draw_launch_delay_s = launch_delay_s
        self.empty_node_ttl_s = empty_node_ttl_s
        self._seq = 0
        self.launch_waits_s: list[float] = []
        self._first_unschedulable_s: dict[str, float] = {}

    def attach(self, sim: Simulation, cluster: ClusterState, streams: RandomStreams) -> None:
        self.sim = sim
        self.cluster = cluster
        self.rng = streams.get("provisioning.node_launch")
        cluster.on_pod_bound.append(self._on_pod_bound)

    def adopt_ready_nodes(self, count: int, instance_type: InstanceType | None = None,
                          capacity_type: str | None = None,
                          pool_name: str | None = None, group_nodes: int = 1) -> list[Node]:
        """The warm floor: `count` nodes of the pool's own type, Ready at t=0 (one zone, so
        any `group_nodes` share it)."""
        nodes = []
        for _ in range(count):
            node = self._new_node(0.0)
            self.cluster.mark_node_ready(node, 0.0)
            nodes.append(node)
        return nodes

    def _new_node(self, now_s: float) -> Node:
        self._seq += 1
        name = f"{self.instance_type.name}-{self._seq}"
        # One zone: a replica spanning nodes needs its nodes in one (EFA / InfiniBand do not
        # cross zones; sim/replica_pods.py), and a `cluster:` block names none. Spreading the
        # pool over the type's zones left such a replica unplaceable on its own warm floor.
        zone = self.instance_type.zones[0]
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
            self.sim.schedule(now_s + self.draw_launch_delay_s(self.rng), Priority.LIFECYCLE,
                              self._ready, node)
            needed_gpus -= per_node

    def summary(self) -> dict[str, Any]:
        """Unschedulable-to-bound wait of the pods that waited for a node, seconds."""
        waits = np.asarray(self.launch_waits_s)
        return {"provisioning_wait_s": {
            # np.percentile's float, without its numpy.ma import (metrics/store.py)
            "p50": round(percentile_linear(self.launch_waits_s, 50), 3) if len(waits) else None,
            "p99": round(percentile_linear(self.launch_waits_s, 99), 3) if len(waits) else None,
        }}

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
