"""The layer-1 contract: what a node provider is given and what it must do.

A node provider owns the nodes of the cluster: it creates them (with a lifecycle: launching,
registered, ready), removes them (scale-down, consolidation, expiry, spot loss) and reports
what that cost. It never binds pods; layer 2 does, and tells layer 1 which pods it could not
place (`notify_unschedulable`), as kube-scheduler tells Karpenter and Cluster Autoscaler by
setting `PodScheduled=False/Unschedulable` (reference layer1-node-provisioning.md 1.1, 2.2).
"""

from __future__ import annotations

from typing import Any, Protocol

from gpuscale.cluster.objects import Pod
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

    def summary(self) -> dict[str, Any]:
        """The `nodes` key of the JSON run summary (see provisioning/metrics.py)."""
        ...


# One registry entry (`kind:` in YAML, params model, builder, summary): the shape every layer
# registers (gpuscale/registry.py).
ProviderSpec = PolicySpec
