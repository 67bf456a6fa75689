"""The layer-1 contract: what a node provider is given and what it must do.

A node provider owns the nodes of the cluster: it creates them (with a lifecycle: launching,
registered, ready), removes them (scale-down, consolidation, expiry, spot loss) and reports
what that cost. It never binds pods; layer 2 does, and tells layer 1 which pods it could not
place (`notify_unschedulable`), as kube-scheduler tells Karpenter and Cluster Autoscaler by
setting `PodScheduled=False/Unschedulable` (reference layer1-node-provisioning.md 1.1, 2.2).
"""

from __future__ import annotations

from typing import Any, Protocol

from gpuscale.cluster.objects import Node, Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import RandomStreams, Simulation
from gpuscale.registry import PolicySpec


class NodeProvider(Protocol):
    """Layer 1: adds and removes nodes in reaction to unschedulable pods and its own loops."""

    kind: str

    def attach(self, sim: Simulation, cluster: ClusterState, streams: RandomStreams) -> None:
        """Create initial nodes and register periodic loops and cluster listeners."""
        ...

    def notify_unschedulable(self, pods: list[Pod], now_s: float) -> None:
        """Called by the scheduler each time it marks pods PodScheduled=False/Unschedulable."""
        ...

    def adopt_ready_nodes(self, count: int, instance_type: Any,
                          capacity_type: str = "on-demand",
                          pool_name: str | None = None, group_nodes: int = 1) -> list[Node]:
        """Take `count` nodes that already run at t=0 (a cluster at its warm floor) as the
        provider's own, so its loops treat them like nodes it launched. A provider whose t=0
        nodes are all its own (static groups, node groups at min size) adopts none and
        returns []; the caller then adds unmanaged nodes if it needs them. `group_nodes`: the
        nodes of one replica spanning nodes, which share a zone (sim/replica_pods.py), as
        the nodes launched for that replica's gang would."""
        ...

    def summary(self) -> dict[str, Any]:
        """The `nodes` key of the JSON run summary (see provisioning/metrics.py)."""
        ...


class AdoptsNoNodes:
    """`adopt_ready_nodes` for providers whose t=0 nodes are all their own."""

    def adopt_ready_nodes(self, count: int, instance_type: Any,
                          capacity_type: str = "on-demand",
                          pool_name: str | None = None, group_nodes: int = 1) -> list[Node]:
        return []



# One registry entry (`kind:` in YAML, params model, builder, summary): the shape every layer
# registers (gpuscale/registry.py).
ProviderSpec = PolicySpec
