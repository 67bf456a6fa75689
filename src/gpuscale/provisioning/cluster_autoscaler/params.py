"""Scenario parameters of the `cluster_autoscaler` node provider: flags and node groups.

Defaults are Cluster Autoscaler's flag defaults (reference layer1-node-provisioning.md
section 2, pkg/config/flags/flags.go and pkg/config/const.go).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuscale.catalog import get_instance_type
from gpuscale.provisioning.capacity_buffer import CapacityBufferParams
from gpuscale.provisioning.disruption_budget import PodDisruptionBudgetParams
from gpuscale.provisioning.latency import NodeLatencies
from gpuscale.provisioning.nodes import CapacityType, TaintSpec, check_unique, no_items
from gpuscale.provisioning.spot import SpotParams

Expander = Literal["least-waste", "price", "priority", "random", "most-pods", "least-nodes"]


class NodeGroupParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="Node group (ASG / managed node group) name.")
    instance_type: str = Field(description="The one catalog instance type of every node.")
    capacity_type: CapacityType = Field("on-demand", description="Billing class of the group.")
    min_size: int = Field(0, ge=0, description="Never scaled below; created ready at t=0.")
    max_size: int = Field(ge=0, description="Never scaled above.")
    zones: list[str] | None = Field(None, description="Zones nodes are spread over "
                                    "round-robin; None = every zone of the instance type.")
    labels: dict[str, str] = Field(default_factory=dict, description="Extra node labels.")
    taints: list[TaintSpec] = Field(default_factory=no_items, description="Node taints.")
    gpu_label: bool = Field(True, description="Nodes carry the provider GPU label "
                            "(k8s.amazonaws.com/accelerator), so CA treats a registered node "
                            "without allocatable GPUs as upcoming; without it CA over-scales "
                            "(reference 2.4).")

    @model_validator(mode="after")
    def _check(self) -> NodeGroupParams:
        if self.min_size > self.max_size:
            raise ValueError(f"node group {self.name}: min_size {self.min_size} > max_size "
                             f"{self.max_size}")
        get_instance_type(self.instance_type)
        return self


class ClusterAutoscalerParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["cluster_autoscaler"] = "cluster_autoscaler"
    node_groups: list[NodeGroupParams] = Field(min_length=1)
    scan_interval_s: float = Field(10.0, gt=0, description="--scan-interval; 10s.")
    expanders: list[Expander] = Field(
        default_factory=lambda: list[Expander](["least-waste"]),
        min_length=1,
        description="--expander chain; default least-waste; remaining ties are broken at random.",
    )
    priorities: dict[int, list[str]] = Field(default_factory=dict, description="Priority "
                                             "expander ConfigMap: priority -> group-name "
                                             "regexes; highest wins, unmatched never chosen.")
    new_pod_scale_up_delay_s: float = Field(0.0, ge=0, description="--new-pod-scale-up-delay.")
    expendable_pods_priority_cutoff: int = Field(-10, description="Pods below this priority "
                                                 "never trigger scale-up.")
    max_nodes_per_scaleup: int = Field(1000, ge=1, description="--max-nodes-per-scaleup.")
    max_node_provision_time_s: float = Field(900.0, gt=0, description="--max-node-provision-"
                                             "time; 15m.")
    initial_backoff_s: float = Field(300.0, ge=0, description="--initial-node-group-backoff-"
                                     "duration; 5m.")
    max_backoff_s: float = Field(1800.0, ge=0, description="--max-node-group-backoff-duration.")
    scale_down_enabled: bool = True
    scale_down_utilization_threshold: float = Field(0.5, ge=0, le=1, description="CPU/memory "
                                                    "nodes; default 0.5.")
    scale_down_gpu_utilization_threshold: float = Field(0.5, ge=0, le=1, description="GPU "
                                                        "nodes, judged on GPU requests only.")
    scale_down_unneeded_time_s: float = Field(600.0, ge=0, description="10m.")
    scale_down_delay_after_add_s: float = Field(600.0, ge=0, description="10m.")
    scale_down_delay_after_delete_s: float = Field(0.0, ge=0, description="0s.")
    scale_down_delay_after_failure_s: float = Field(180.0, ge=0, description="3m.")
    max_scale_down_parallelism: int = Field(10, ge=1, description="Empty nodes removed at once.")
    max_drain_parallelism: int = Field(1, ge=1, description="Non-empty nodes drained at once.")
    drain_duration_s: float = Field(30.0, ge=0, description="Eviction to VM termination: the "
                                    "default pod terminationGracePeriodSeconds (30 s).")
    node_latencies: NodeLatencies = Field(default_factory=NodeLatencies)
    spot: SpotParams = Field(default_factory=SpotParams)
    capacity_buffers: list[CapacityBufferParams] = Field(
        default_factory=no_items, description="CapacityBuffers (autoscaling.x-k8s.io): virtual "
        "pods CA packs with the pending ones at each scan and keeps on nodes at scale-down; "
        "their nodes are ready at t=0 (without the image) (provisioning/capacity_buffer.py). "
        "Empty = none.")
    pod_disruption_budgets: list[PodDisruptionBudgetParams] = Field(
        default_factory=no_items, description="PodDisruptionBudgets: a node is not unneeded while "
        "evicting its pods would take a PDB below its allowed disruptions. Empty = none.")

    @model_validator(mode="after")
    def _check(self) -> ClusterAutoscalerParams:
        check_unique([x.name for x in self.node_groups], "node group")
        check_unique([x.name for x in self.capacity_buffers], "capacity buffer")
        check_unique([x.name for x in self.pod_disruption_budgets], "PodDisruptionBudget")
        if "priority" in self.expanders and not self.priorities:
            raise ValueError("the priority expander needs `priorities`")
        return self
