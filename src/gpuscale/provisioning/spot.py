"""Spot interruptions: when they happen, the two-minute notice, cordon, drain and reclaim.

AWS gives a 2-minute interruption notice; with an interruption queue Karpenter taints, drains
and terminates the node at the notice and a replacement follows (reference
layer1-node-provisioning.md 1.8 "Interruption"). Cluster Autoscaler has no handler of its own;
`notice_handled: false` models a cluster without aws-node-termination-handler, where pods die
when the instance is reclaimed. Interruption times are drawn per instance type from a rate
(exponential time-to-interruption from launch) or given as a list of absolute times.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from gpuscale.cluster.objects import Node, NodeState
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, RandomStreams, Simulation
from gpuscale.provisioning.metrics import NodeMetrics
from gpuscale.provisioning.nodes import no_items
from gpuscale.units import SECONDS_PER_HOUR

CAUSE = "spot_interruption"


class SpotInterruptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rate_per_node_hour: float = Field(0.0, ge=0, description="Interruptions per node-hour "
                                      "(Poisson); 0 = none. No default rate is sourced: AWS's "
                                      "Spot Advisor publishes only buckets (<5% ... >20%/month).")
    times_s: list[float] = Field(default_factory=no_items, description="Absolute notice times; at "
                                 "each one the oldest live spot node of the type is interrupted.")


class SpotParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    interruptions: dict[str, SpotInterruptions] = Field(default_factory=dict, description=
                                                        "Per instance type name; '*' = any type.")
    notice_s: float = Field(120.0, ge=0, description="Notice before reclaim; AWS gives 2 min.")
    notice_handled: bool = Field(True, description="Cordon and drain at the notice (Karpenter "
                                 "interruption queue / node-termination-handler); else pods "
                                 "are lost at reclaim.")
    drain_s: float = Field(30.0, ge=0, description="Notice to instance termination when "
                           "handled: the Kubernetes default terminationGracePeriodSeconds, 30 s "
                           "(capped at notice_s).")


class SpotInterrupter:
    """Schedules interruption notices for one provider's spot nodes and carries them out."""

    def __init__(self, params: SpotParams, sim: Simulation, cluster: ClusterState,
                 metrics: NodeMetrics, streams: RandomStreams,
                 on_interrupted: Callable[[Node], None] = lambda node: None) -> None:
        self.params, self.sim, self.cluster, self.metrics = params, sim, cluster, metrics
        self.rng = streams.get("provisioning.spot")
        self.on_interrupted = on_interrupted
        for type_name, spec in params.interruptions.items():
            for t in spec.times_s:
                sim.schedule(t, Priority.LIFECYCLE, self._notice_oldest, type_name)

    def _spec(self, node: Node) -> SpotInterruptions | None:
        table = self.params.interruptions
        return table.get(node.instance_type.name) or table.get("*")

    def node_launched(self, node: Node) -> None:
        """Draw this node's time to interruption (memoryless, from launch)."""
        spec = self._spec(node)
        if node.capacity_type != "spot" or spec is None or spec.rate_per_node_hour <= 0:
            return
        wait_s = self.rng.exponential(SECONDS_PER_HOUR / spec.rate_per_node_hour)
        self.sim.schedule(self.sim.now_s + wait_s, Priority.LIFECYCLE, self.notice, node)

    def _notice_oldest(self, type_name: str) -> None:
        live = [n for n in self.cluster.nodes.values()
                if n.capacity_type == "spot" and n.name in self.metrics.node_names
                and n.state is not NodeState.DRAINING
                and (type_name == "*" or n.instance_type.name == type_name)]
        if live:
            self.notice(min(live, key=lambda n: (n.created_s, n.name)))

    def notice(self, node: Node) -> None:
        if self.cluster.nodes.get(node.name) is not node:
            return
        now_s = self.sim.now_s
        self.metrics.events["spot_interruption_notices"] += 1
        self.on_interrupted(node)
        reclaim_s = self.params.notice_s
        if self.params.notice_handled:
            self.cluster.mark_for_deletion(node)  # cordon: nothing new lands here
            self.metrics.sample()
            self._evict_all(node)
            reclaim_s = min(self.params.drain_s, self.params.notice_s)
        self.sim.schedule(now_s + reclaim_s, Priority.LIFECYCLE, self._reclaim, node)

    def _evict_all(self, node: Node) -> None:
        pods = [self.cluster.pods[n] for n in list(node.pod_names) if n in self.cluster.pods]
        for pod in pods:
            self.cluster.evict(pod, CAUSE)
        self.metrics.evicted(CAUSE, len(pods))

    def _reclaim(self, node: Node) -> None:
        if self.cluster.nodes.get(node.name) is not node:
            return
        self._evict_all(node)
        self.cluster.remove_node(node, self.sim.now_s, CAUSE)
