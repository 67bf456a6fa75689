"""A node's walk from launch request to GPU-allocatable, with timeouts; shared by providers.

Phases follow Karpenter's NodeClaim conditions (reference layer1-node-provisioning.md 1.6):
Launched (cloud returned an instance), Registered (Node joined; our `REGISTERED` state, GPUs
not yet allocatable), Initialized (device plugin advertised `nvidia.com/gpu`; our `READY`).
Karpenter deletes a claim not launched within 5 min or not registered within 15 min of its
creation (lifecycle/liveness.go); Cluster Autoscaler gives a node 15 min
(`--max-node-provision-time`, reference 2.2). Both are passed in as timeouts here.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from gpuscale.cluster.objects import Node, NodeState
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, Simulation
from gpuscale.provisioning.latency import NodeLatencies
from gpuscale.provisioning.metrics import NodeMetrics

NodeCallback = Callable[[Node], None]
FailureCallback = Callable[[Node, str], None]


def _noop(*_args) -> None:
    return None


class NodeLauncher:
    """Adds a node in LAUNCHING state and schedules its phase transitions or its failure."""

    def __init__(self, sim: Simulation, cluster: ClusterState, metrics: NodeMetrics,
                 rng: np.random.Generator, *, launch_timeout_s: float = math.inf,
                 registration_timeout_s: float = math.inf,
                 on_ready: NodeCallback = _noop, on_failed: FailureCallback = _noop) -> None:
        self.sim, self.cluster, self.metrics, self.rng = sim, cluster, metrics, rng
        self.launch_timeout_s = launch_timeout_s
        self.registration_timeout_s = registration_timeout_s
        self.on_ready = on_ready
        self.on_failed = on_failed

    def launch(self, node: Node, latencies: NodeLatencies) -> None:
        now_s = self.sim.now_s
        node.created_s = now_s
        node.state = NodeState.LAUNCHING
        self.cluster.add_node(node)
        self.metrics.node_created(node)
        launch_s, register_s, initialize_s = latencies.draw(self.rng)
        if launch_s > self.launch_timeout_s:
            self.sim.schedule(now_s + self.launch_timeout_s, Priority.LIFECYCLE, self._fail, node,
                              "launch_timeout")
            return
        registered_at_s = now_s + launch_s + register_s
        if registered_at_s - now_s > self.registration_timeout_s:
            self.sim.schedule(now_s + self.registration_timeout_s, Priority.LIFECYCLE, self._fail,
                              node, "registration_timeout")
            return
        self.sim.schedule(registered_at_s, Priority.LIFECYCLE, self._registered, node)
        self.sim.schedule(registered_at_s + initialize_s, Priority.LIFECYCLE, self._initialized,
                          node)

    def add_ready(self, node: Node) -> None:
        """A node that exists from the start (static capacity, CA min size at t=0)."""
        node.created_s = self.sim.now_s
        self.cluster.add_node(node)
        self.metrics.node_created(node)
        self.cluster.mark_node_ready(node, self.sim.now_s)
        self.on_ready(node)

    def _alive(self, node: Node) -> bool:
        return self.cluster.nodes.get(node.name) is node

    def _registered(self, node: Node) -> None:
        if self._alive(node) and node.state is NodeState.LAUNCHING:
            node.state = NodeState.REGISTERED
            self.metrics.sample()

    def _initialized(self, node: Node) -> None:
        if self._alive(node) and node.state is NodeState.REGISTERED:
            self.cluster.mark_node_ready(node, self.sim.now_s)
            self.on_ready(node)

    def _fail(self, node: Node, cause: str) -> None:
        if not self._alive(node):
            return
        if cause == "launch_timeout":
            node.created_s = self.sim.now_s  # no instance ever ran: nothing to bill
        self.cluster.remove_node(node, self.sim.now_s, cause)
        self.metrics.failures[cause] += 1
        self.on_failed(node, cause)
