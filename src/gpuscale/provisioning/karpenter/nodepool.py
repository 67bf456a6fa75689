"""The NodePool as a scenario writes it: fields mirror the `karpenter.sh/v1` NodePool CRD.

Field names are snake_case in Python; YAML may use either snake_case or the CRD's camelCase
(`consolidateAfter`, `expireAfter`), so a `spec.disruption` block can be pasted from a real
NodePool. Defaults are the CRD's (reference layer1-node-provisioning.md 1.8): policy
WhenEmptyOrUnderutilized, consolidateAfter 0s, budgets [{nodes: "10%"}], expireAfter 720h.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from gpuscale.catalog import InstanceType, instance_types
from gpuscale.catalog.specs import ANY_ZONE
from gpuscale.cluster.objects import Taint
from gpuscale.provisioning.fit import (
    CAPACITY_TYPE_LABEL,
    ZONE_LABEL,
    Resources,
    capacity_of,
    instance_type_labels,
)
from gpuscale.provisioning.latency import NodeLatencies
from gpuscale.provisioning.nodes import TaintSpec, no_items
from gpuscale.units import parse_duration_s, parse_quantity


@lru_cache(maxsize=1024)
def _seconds(text: str) -> float:
    return parse_duration_s(text)

_CONFIG = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel,
                     populate_by_name=True)
_DURATION_PATTERN = r"^(([0-9]+(s|m|h))+|Never)$"  # CRD pattern of consolidateAfter/expireAfter
_BUDGET_DURATION_PATTERN = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"
_BUDGET_NODES_PATTERN = r"^((100|[0-9]{1,2})%|[0-9]+)$"
Reason = Literal["Underutilized", "Empty", "Drifted"]


class Requirement(BaseModel):
    model_config = _CONFIG

    key: str = Field(description="Node label key, e.g. karpenter.k8s.aws/instance-gpu-name.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
    values: list[str] = Field(default_factory=no_items, description="Label values (strings).")
    min_values: int | None = Field(None, ge=1, le=50, description="Rendered only; not "
                                   "enforced by the simulator.")

    @model_validator(mode="after")
    def _check_values(self) -> Requirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"requirement {self.key}: operator {self.operator} needs values")
        if self.operator in ("Gt", "Lt", "Gte", "Lte") and (
                len(self.values) != 1 or not self.values[0].isdigit()):
            raise ValueError(f"requirement {self.key}: {self.operator} needs one integer value")
        return self

    def allows(self, labels: dict[str, str]) -> bool:
        """Does a node with `labels` satisfy this requirement?

        A key the offering does not define is a custom label the NodePool will put on the node
        (In/Exists), so it is satisfied; numeric operators need a defined numeric label.
        """
        value = labels.get(self.key)
        op = self.operator
        if value is None:
            return op not in ("Gt", "Lt", "Gte", "Lte")
        if op == "In":
            return value in self.values
        if op == "NotIn":
            return value not in self.values
        if op in ("Exists", "DoesNotExist"):
            return op == "Exists"
        if not value.isdigit():
            return False
        a, b = int(value), int(self.values[0])
        return {"Gt": a > b, "Lt": a < b, "Gte": a >= b, "Lte": a <= b}[op]


class Budget(BaseModel):
    model_config = _CONFIG

    nodes: str = Field("10%", pattern=_BUDGET_NODES_PATTERN, description="Max nodes disrupted "
                       "at once: an integer or a percentage of the pool (rounded up).")
    schedule: str | None = Field(None, description="UTC cron (5 fields or @daily...) at which "
                                 "the budget becomes active; None = always active.")
    duration: str | None = Field(None, pattern=_BUDGET_DURATION_PATTERN, description="How long "
                                 "the budget stays active after each schedule hit.")
    reasons: list[Reason] | None = Field(None, description="Disruption reasons the budget "
                                         "applies to; None = all.")

    @field_validator("nodes", mode="before")
    @classmethod
    def _int_to_str(cls, value):
        return str(value) if isinstance(value, int) else value

    @model_validator(mode="after")
    def _schedule_needs_duration(self) -> Budget:
        if (self.schedule is None) != (self.duration is None):
            raise ValueError("budget schedule and duration must be set together")
        if self.schedule is not None:
            from gpuscale.cron import schedule_problem

            problem = schedule_problem(self.schedule)
            if problem:  # at load, not mid-run (ValueError from the cron matcher)
                raise ValueError(problem)
        return self

    @property
    def duration_s(self) -> float:
        return _seconds(self.duration) if self.duration else 0.0


class Disruption(BaseModel):
    model_config = _CONFIG

    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] = Field(
        "WhenEmptyOrUnderutilized", description="Which nodes consolidation may remove; CRD "
        "default.")
    consolidate_after: str = Field("0s", pattern=_DURATION_PATTERN, description="Quiet time "
                                   "after the last pod event before a node may be consolidated; "
                                   "CRD default 0s, 'Never' disables consolidation.")
    budgets: list[Budget] = Field(default_factory=lambda: [Budget()], max_length=50,
                                  description="Disruption budgets; CRD default [{nodes: 10%}].")

    @property
    def consolidate_after_s(self) -> float:
        return _seconds(self.consolidate_after)


class NodeClassRef(BaseModel):
    model_config = _CONFIG

    group: str = "karpenter.k8s.aws"
    kind: str = "EC2NodeClass"
    name: str = "default"


class NodePoolParams(BaseModel):
    model_config = _CONFIG

    name: str = Field(description="NodePool name (metadata.name).")
    weight: int | None = Field(None, ge=1, le=100, description="Higher weight is tried first; "
                               "unset counts as 0.")
    requirements: list[Requirement] = Field(default_factory=no_items, description="Constraints on "
                                            "instance type, GPU, capacity type and zone.")
    labels: dict[str, str] = Field(default_factory=dict, description="Labels put on nodes.")
    taints: list[TaintSpec] = Field(default_factory=no_items, description="Taints put on nodes.")
    startup_taints: list[TaintSpec] = Field(default_factory=no_items, description="Rendered only: "
                                            "their removal is part of the initialize latency.")
    limits: dict[str, int | str] = Field(default_factory=dict, description="Caps on the sum of "
                                         "cpu, memory, nvidia.com/gpu or nodes in the pool.")
    expire_after: str = Field("720h", pattern=_DURATION_PATTERN, description="Forceful node "
                              "lifetime; CRD default 720h.")
    termination_grace_period: str | None = Field(None, pattern=r"^([0-9]+(s|m|h))+$",
                                                 description="Max drain time; None = forever.")
    disruption: Disruption = Field(default_factory=Disruption)
    node_class_ref: NodeClassRef = Field(default_factory=NodeClassRef)
    node_latencies: NodeLatencies | None = Field(None, description="Per-pool phase latencies "
                                                 "(e.g. pre-baked images); None = provider's.")

    @field_validator("limits")
    @classmethod
    def _quantities(cls, limits: dict[str, int | str]) -> dict[str, int | str]:
        # Checked at load time: a bad quantity would otherwise surface mid-run as a traceback.
        for key, value in limits.items():
            if parse_quantity(value) < 0:  # raises ValueError on a malformed quantity
                raise ValueError(f"limits.{key} must be >= 0, got {value!r}")
        return limits

    @property
    def expire_after_s(self) -> float:
        return _seconds(self.expire_after)

    @property
    def capacity_types(self) -> tuple[str, ...]:
        """Allowed capacity types; Karpenter defaults a pool without the requirement to
        on-demand only (pkg/apis/v1 defaulting)."""
        reqs = [r for r in self.requirements if r.key == CAPACITY_TYPE_LABEL]
        cts = ("on-demand", "spot")  # reserved capacity is not modelled
        if not reqs:
            return ("on-demand",)
        return tuple(c for c in cts if all(r.allows({CAPACITY_TYPE_LABEL: c}) for r in reqs))

    def node_labels(self) -> dict[str, str]:
        """Labels the pool adds: its own plus single-valued `In` requirements on custom keys."""
        labels = {r.key: r.values[0] for r in self.requirements
                  if r.operator == "In" and len(r.values) == 1}
        labels.update(self.labels)
        return labels

    def limit_resources(self) -> tuple[Resources | None, int | None]:
        """(resource caps or None, node-count cap or None); absent resources are unlimited."""
        if not self.limits:
            return None, None
        big = 10**12
        gpus = self.limits.get("nvidia.com/gpu")
        cpu = self.limits.get("cpu")
        mem = self.limits.get("memory")
        caps = Resources(
            int(parse_quantity(gpus)) if gpus is not None else big,
            int(parse_quantity(cpu) * 1000) if cpu is not None else big,
            int(parse_quantity(mem) / 2**20) if mem is not None else big)
        nodes = self.limits.get("nodes")
        return caps, int(parse_quantity(nodes)) if nodes is not None else None


@dataclass(frozen=True)
class Offering:
    """One (instance type, zone, capacity type) a NodeClaim may launch as."""

    instance_type: InstanceType
    zone: str
    capacity_type: str
    price_usd_per_hour: float
    labels: dict[str, str] = field(hash=False, compare=False)

    @property
    def capacity(self) -> Resources:
        return capacity_of(self.instance_type)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.instance_type.name, self.zone, self.capacity_type)


def _zones_of(itype: InstanceType, pool: NodePoolParams) -> tuple[str, ...]:
    """An instance type's zones; one offered in any zone (a user entry without `zones`,
    catalog.specs.ANY_ZONE) takes the zones the pool's requirements name, else that marker."""
    if itype.zones != (ANY_ZONE,):
        return itype.zones
    named = [v for r in pool.requirements if r.key == ZONE_LABEL and r.operator == "In"
             for v in r.values]
    return tuple(dict.fromkeys(named)) or itype.zones


def pool_offerings(pool: NodePoolParams) -> list[Offering]:
    """Every catalog offering the pool's requirements allow, cheapest first."""
    out = []
    for itype in instance_types().values():
        for zone in _zones_of(itype, pool):
            for ct in pool.capacity_types:
                labels = instance_type_labels(itype)
                labels.update({ZONE_LABEL: zone, CAPACITY_TYPE_LABEL: ct})
                if all(r.allows(labels) for r in pool.requirements):
                    labels.update(pool.node_labels())
                    out.append(Offering(itype, zone, ct, itype.price_usd_per_hour(ct), labels))
    return sorted(out, key=lambda o: (o.price_usd_per_hour, o.key))


def pool_taints(pool: NodePoolParams) -> tuple[Taint, ...]:
    return tuple(t.to_taint() for t in pool.taints)


def order_by_weight(pools: list[NodePoolParams]) -> list[NodePoolParams]:
    """Descending weight (unset = 0); equal weights by name, later in the alphabet first
    (reference 1.3, utils/nodepool `OrderByWeight`)."""
    return sorted(pools, key=lambda p: (p.weight or 0, p.name), reverse=True)
