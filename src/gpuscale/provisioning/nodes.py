"""Building blocks shared by the providers' params: taints, capacity types, node construction."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gpuscale.catalog import InstanceType
from gpuscale.cluster.objects import Node, Taint
from gpuscale.provisioning.fit import (
    CAPACITY_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
    instance_type_labels,
)

CapacityType = Literal["on-demand", "spot", "reserved"]
# Karpenter on AWS picks the first capacity type with an available offering in this order
# (reference 1.3, providers/instance/instance.go `getCapacityType`).
CAPACITY_TYPE_RANK = {"reserved": 0, "spot": 1, "on-demand": 2}


class TaintSpec(BaseModel):
    """A node taint as written in a NodePool or node-group template."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str = Field(description="Taint key, e.g. nvidia.com/gpu.")
    value: str = Field("", description="Taint value; empty is allowed.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        "NoSchedule", description="Kubernetes taint effect.")

    def to_taint(self) -> Taint:
        return Taint(self.key, self.value, self.effect)


def no_items() -> list:
    """A new empty list: `Field(default_factory=no_items)` in the params models, where
    `default_factory=list` would give the same. pydantic reads each factory's signature (does
    it take the validated data?), and a builtin's is parsed from its text signature: the first
    such parse compiles tokenize's patterns (~5 ms of `simulate`'s import over these fields);
    a function's signature is read from its code."""
    return []


_NO_LABELS: Mapping[str, str] = MappingProxyType({})


def make_node(name: str, instance_type: InstanceType, zone: str, capacity_type: str, pool: str,
              labels: Mapping[str, str] = _NO_LABELS, taints: tuple[Taint, ...] = (),
              pool_label: str = NODEPOOL_LABEL) -> Node:
    """A Node carrying the well-known labels a scheduler and node selectors look at."""
    all_labels = instance_type_labels(instance_type)
    all_labels.update({ZONE_LABEL: zone, CAPACITY_TYPE_LABEL: capacity_type,
                       "kubernetes.io/hostname": name})
    if pool_label:
        all_labels[pool_label] = pool
    all_labels.update(dict(labels))
    return Node(name=name, instance_type=instance_type, zone=zone, capacity_type=capacity_type,
                labels=all_labels, taints=tuple(taints), pool=pool)


def check_unique(names: list[str], what: str) -> None:
    """Raise ValueError naming the repeated names (pools and groups are keyed by name)."""
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"duplicate {what} names: {', '.join(repeated)}")
