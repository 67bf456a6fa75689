"""The layer-2 contract: a pod scheduler attached to the shared ClusterState.

A scheduler listens for pods turning Pending and nodes turning Ready, runs one scheduling
cycle per instant (events at the same time are batched), retries on a backoff, binds what fits
through `ClusterState.bind`, and reports what it cannot place through `on_unschedulable`:
those pods carry `PodScheduled=False/Unschedulable`, the signal Karpenter and Cluster
Autoscaler act on (layer2-scheduling.md 1.1). For a gang, every pod of the gang is reported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from gpuscale.cluster.objects import Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import RandomStreams, Simulation

UnschedulableCallback = Callable[[list[Pod], float], None]


class PodScheduler(Protocol):
    """One scheduler instance owns the placement of every pod in the cluster."""

    kind: str

    def attach(self, sim: Simulation, cluster: ClusterState, streams: RandomStreams,
               on_unschedulable: UnschedulableCallback) -> None:
        """Subscribe to the cluster's events (pods pending, evicted and deleted, nodes ready)
        and start the periodic retry."""
        ...

    def summary(self) -> dict | None:
        """The `scheduling` key of a run's JSON summary (see docs/scheduling.md); None for a
        scheduler that keeps no metrics (first fit), whose runs have no such key."""
        ...


def ignore_unschedulable(pods: list[Pod], now_s: float) -> None:
    """`on_unschedulable` for runs without a node provider (static clusters, the replay)."""
