"""PodDisruptionBudgets (`policy/v1`) as the node providers' voluntary disruptions honour them.

A PDB's allowed disruptions are what the disruption controller publishes in
`status.disruptionsAllowed`: currentHealthy - desiredHealthy, where desiredHealthy is
`minAvailable`, or expected - `maxUnavailable`; a percentage is of the expected pods, rounded
up (kubernetes `pkg/controller/disruption/disruption.go`, `intstr.GetScaledValueFromIntOrPercent`
with roundUp=true). The Eviction API refuses an eviction that would take it below zero
(429), so a drain waits; reference layer1-node-provisioning.md 1.8 (Karpenter drains through the
Eviction API, honouring PDBs) and 2.3 (restrictive PDBs block CA scale-down).

Approximations: the expected pods are the matching pods that exist (bound or pending), not the
controller's scale; a pod counts healthy while bound (layer 1 does not see readiness probes, so
a pod still loading its weights counts healthy: real PDBs block a little more often); every
pod is in the PDB's namespace (the simulation has one).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuscale.cluster.objects import Pod
from gpuscale.cluster.state import ClusterState

_PERCENT = re.compile(r"^(\d+)%$")


def _scaled(value: int | str, expected: int) -> int:
    """An int-or-percent against `expected`, a percentage rounded up."""
    if isinstance(value, int):
        return value
    match = _PERCENT.match(value)
    assert match is not None  # validated by the params model
    return math.ceil(int(match.group(1)) * expected / 100)


class PodDisruptionBudgetParams(BaseModel):
    """One PDB: which pods it covers and how many must stay."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="metadata.name.")
    match_labels: dict[str, str] = Field(default_factory=dict, description="spec.selector."
                                         "matchLabels; {} = every pod (policy/v1's empty "
                                         "selector).")
    min_available: int | str | None = Field(None, description="spec.minAvailable: a count or "
                                            "a percentage such as \"50%\".")
    max_unavailable: int | str | None = Field(None, description="spec.maxUnavailable: a count "
                                              "or a percentage.")

    @model_validator(mode="after")
    def _check(self) -> PodDisruptionBudgetParams:
        given = [v for v in (self.min_available, self.max_unavailable) if v is not None]
        if len(given) != 1:
            raise ValueError(f"PodDisruptionBudget {self.name}: set exactly one of "
                             "min_available and max_unavailable")
        value = given[0]
        if isinstance(value, int) and value < 0:
            raise ValueError(f"PodDisruptionBudget {self.name}: expected a count >= 0, got "
                             f"{value}")
        if isinstance(value, str) and not _PERCENT.match(value):
            raise ValueError(f"PodDisruptionBudget {self.name}: expected an integer or a "
                             f"percentage such as \"50%\", got {value!r}")
        return self

    def covers(self, pod: Pod) -> bool:
        return all(pod.labels.get(k) == v for k, v in self.match_labels.items())


def allowed_disruptions(pdb: PodDisruptionBudgetParams, cluster: ClusterState) -> int:
    """status.disruptionsAllowed now."""
    pods = [p for p in cluster.pods.values() if pdb.covers(p)]
    expected = len(pods)
    healthy = sum(1 for p in pods if p.node_name is not None)
    if pdb.min_available is not None:
        desired = _scaled(pdb.min_available, expected)
    else:
        assert pdb.max_unavailable is not None
        desired = expected - _scaled(pdb.max_unavailable, expected)
    return max(0, healthy - desired)


def blocking(pdbs: Iterable[PodDisruptionBudgetParams], pods: Iterable[Pod],
             cluster: ClusterState) -> PodDisruptionBudgetParams | None:
    """The first PDB that covers one of `pods` and allows no disruption now (Karpenter's
    `pdb.Limits.CanEvictPods`: such a node is not a disruption candidate)."""
    pods = list(pods)
    for pdb in pdbs:
        if any(pdb.covers(p) for p in pods) and allowed_disruptions(pdb, cluster) == 0:
            return pdb
    return None


def can_evict_all(pdbs: Iterable[PodDisruptionBudgetParams], pods: Iterable[Pod],
                  cluster: ClusterState, planned: Counter | None = None) -> bool:
    """Every one of `pods` can be evicted, with `planned` evictions (PDB name -> pods) already
    counted against the budgets (Cluster Autoscaler's drain simulation over one scale-down
    pass); adds these pods to `planned` when they can."""
    pods = list(pods)
    planned = planned if planned is not None else Counter()
    need: Counter = Counter()
    for pdb in pdbs:
        n = sum(1 for p in pods if pdb.covers(p))
        if n and n + planned[pdb.name] > allowed_disruptions(pdb, cluster):
            return False
        need[pdb.name] = n
    planned.update(need)
    return True


def may_evict(pdbs: Iterable[PodDisruptionBudgetParams], pod: Pod,
              cluster: ClusterState) -> bool:
    """The Eviction API would let this one pod go now."""
    return all(allowed_disruptions(pdb, cluster) > 0 for pdb in pdbs if pdb.covers(pod))
