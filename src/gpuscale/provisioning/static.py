"""`static`: a fixed set of nodes that never scales (a baseline, or a pre-provisioned pool).

Nodes are ready at t=0, or become ready after a fixed `ready_after_s` (capacity that was
ordered before the run, e.g. a reservation starting later). Pods it cannot host stay Pending.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gpuscale.catalog import get_instance_type
from gpuscale.cluster.objects import Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import RandomStreams, Simulation
from gpuscale.provisioning.base import AdoptsNoNodes
from gpuscale.provisioning.latency import NodeLatencies, fixed
from gpuscale.provisioning.lifecycle import NodeLauncher
from gpuscale.provisioning.metrics import NodeMetrics
from gpuscale.provisioning.nodes import CapacityType, TaintSpec, make_node, no_items


class StaticNodes(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    instance_type: str = Field(description="Catalog instance type name, e.g. p5.48xlarge.")
    count: int = Field(1, ge=0, description="Number of identical nodes.")
    capacity_type: CapacityType = Field("on-demand", description="Billing class of the nodes.")
    zone: str | None = Field(None, description="Zone; default the instance type's first zone.")
    pool: str = Field("static", description="Pool name put on the nodes (for reports).")
    labels: dict[str, str] = Field(default_factory=dict, description="Extra node labels.")
    taints: list[TaintSpec] = Field(default_factory=no_items, description="Node taints.")
    ready_after_s: float = Field(0.0, ge=0, description="Seconds after t=0 at which the nodes "
                                 "become ready; 0 = ready from the start.")


class StaticParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["static"] = "static"
    nodes: list[StaticNodes] = Field(default_factory=no_items, description="Groups of fixed nodes.")


class StaticProvider(AdoptsNoNodes):
    kind = "static"

    def __init__(self, params: StaticParams) -> None:
        self.params = params
        self.metrics = NodeMetrics(self.kind)

    def attach(self, sim: Simulation, cluster: ClusterState, streams: RandomStreams) -> None:
        self.metrics.attach(sim, cluster)
        launcher = NodeLauncher(sim, cluster, self.metrics, streams.get("provisioning.static"))
        for group_index, group in enumerate(self.params.nodes):
            itype = get_instance_type(group.instance_type)
            zone = group.zone or itype.zones[0]
            taints = tuple(t.to_taint() for t in group.taints)
            for i in range(group.count):
                node = make_node(f"{group.pool}-{group_index}-{i}", itype, zone,
                                 group.capacity_type, group.pool, group.labels, taints)
                if group.ready_after_s == 0:
                    launcher.add_ready(node)
                else:
                    delay = NodeLatencies(launch=fixed(0.0), registration=fixed(0.0),
                                          initialization=fixed(group.ready_after_s))
                    launcher.launch(node, delay)

    def notify_unschedulable(self, pods: list[Pod], now_s: float) -> None:
        self.metrics.pods_unschedulable(pods, now_s)

    def summary(self) -> dict[str, Any]:
        return self.metrics.summary()


def build(params: StaticParams) -> StaticProvider:
    return StaticProvider(params)
