"""A STAND-IN node provider for scheduling-only runs (not Karpenter, not Cluster Autoscaler).

It does the one thing layer 2 needs to show its interplay with layer 1: pods reported
unschedulable make nodes appear. Like Karpenter it first counts free GPUs on existing nodes and
on nodes already launching, packs the rest onto new nodes of one type, and launches one node
per claim with no atomic multi-node launch (layer2-scheduling.md 1.4), each Ready
`ready_delay_s` after the report (+ `stagger_s` per extra node of the same batch). A gang can
therefore have some nodes up and billing while it cannot start. The real layer 1 replaces this
through the same `notify_unschedulable(pods, now_s)` call.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gpuscale.catalog import get_instance_type
from gpuscale.cluster.objects import Node, Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, RandomStreams, Simulation

HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"


class StandInProviderParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["stand-in"] = "stand-in"
    instance_type: str = Field(description="Catalog instance type every new node gets.")
    ready_delay_s: float = Field(300.0, ge=0, description="Report to GPUs allocatable, s; ~5 min "
                                 "is a typical GPU node launch + driver start (assumption).")
    stagger_s: float = Field(0.0, ge=0, description="Extra delay per further node of one batch, "
                             "s: claims launch independently, so they arrive apart.")
    max_nodes: int = Field(8, ge=0, description="Most nodes this provider ever adds (a limit).")
    zone: str = Field("zone-a", description="Zone label of new nodes.")
    labels: dict[str, str] = Field(default_factory=dict, description="Extra node labels.")


class StandInProvider:
    """A `NodeProvider` (provisioning/base.py) without metrics of its own."""

    kind = "stand-in"

    def __init__(self, params: StandInProviderParams) -> None:
        self.params = params
        self.instance_type = get_instance_type(params.instance_type)
        self.covered: dict[str, str] = {}  # pod -> node launched for it
        self.claims: dict[str, int] = {}  # launching node -> GPUs not yet promised
        self.launched = 0

    def attach(self, sim: Simulation, cluster: ClusterState, streams: RandomStreams) -> None:
        self.sim, self.cluster = sim, cluster

    def adopt_ready_nodes(self, count: int, instance_type: Any,
                          capacity_type: str = "on-demand",
                          pool_name: str | None = None, group_nodes: int = 1) -> list[Node]:
        return []  # initial nodes stay unmanaged: the stand-in only adds nodes

    def summary(self) -> dict[str, Any]:
        return {}  # keeps no metrics: the run's `nodes` block has no `provider` key

    def notify_unschedulable(self, pods: list[Pod], now_s: float) -> None:
        todo = sorted((p for p in pods if p.name not in self.covered and p.node_name is None),
                      key=lambda p: (-p.gpus, p.name))
        free = [n.gpus_free for n in self.cluster.ready_nodes()]
        new_nodes: list[str] = []
        for pod in todo:
            slot = next((i for i, f in enumerate(free) if f >= pod.gpus), None)
            if slot is not None:  # Karpenter would expect it to fit where it is
                free[slot] -= pod.gpus
                continue
            claim = next((n for n, f in self.claims.items() if f >= pod.gpus), None)
            if claim is None:
                if self.launched >= self.params.max_nodes or pod.gpus > self.instance_type.num_gpus:
                    continue
                claim = self._launch(now_s, len(new_nodes))
                new_nodes.append(claim)
            self.claims[claim] -= pod.gpus
            self.covered[pod.name] = claim

    def _launch(self, now_s: float, index: int) -> str:
        self.launched += 1
        name = f"standin-{self.launched}"
        labels = {HOSTNAME_LABEL: name, ZONE_LABEL: self.params.zone, **self.params.labels}
        node = Node(name=name, instance_type=self.instance_type, zone=self.params.zone,
                    labels=labels, pool="stand-in", created_s=now_s)
        self.cluster.add_node(node)
        self.claims[name] = self.instance_type.num_gpus
        ready_s = now_s + self.params.ready_delay_s + index * self.params.stagger_s
        self.sim.schedule(ready_s, Priority.LIFECYCLE, self._ready, node)
        return name

    def _ready(self, node: Node) -> None:
        self.claims.pop(node.name, None)
        for pod in [p for p, n in self.covered.items() if n == node.name]:
            del self.covered[pod]
        self.cluster.mark_node_ready(node, self.sim.now_s)
