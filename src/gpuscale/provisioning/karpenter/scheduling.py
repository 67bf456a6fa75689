"""Karpenter's scheduling simulation: which pods go to existing, planned or new NodeClaims.

Pods are taken largest first and tried against (1) existing and in-flight nodes, (2) claims
already planned this round, fewest pods first, (3) a new claim from the first NodePool (by
weight) that has a compatible offering (reference layer1-node-provisioning.md 1.3,
provisioning/scheduling/scheduler.go). A planned claim keeps every offering that still fits
all of its pods; the cloud provider picks one at launch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuscale.cluster.objects import Pod
from gpuscale.provisioning.fit import Bin, Resources, pod_matches, pod_priority_order, request_of
from gpuscale.provisioning.karpenter.nodepool import NodePoolParams, Offering, pool_taints


@dataclass
class PoolCapacity:
    """A pool's launchable offerings right now and what its limits still allow."""

    pool: NodePoolParams
    offerings: list[Offering]  # available (not blocked by insufficient capacity), cheapest first
    room: Resources | None = None  # remaining resource limits; None = unlimited
    room_nodes: int | None = None  # remaining node-count limit; None = unlimited

    def launchable(self, offering: Offering) -> bool:
        if self.room_nodes is not None and self.room_nodes < 1:
            return False
        return self.room is None or offering.capacity.fits_in(self.room)

    def reserve(self, offering: Offering) -> None:
        if self.room is not None:
            self.room = self.room - offering.capacity
        if self.room_nodes is not None:
            self.room_nodes -= 1


@dataclass
class ClaimPlan:
    """A NodeClaim being planned: its pool, the offerings that fit all its pods, its pods."""

    pool: NodePoolParams
    offerings: list[Offering]
    pods: list[Pod] = field(default_factory=list)
    requests: Resources = Resources()

    def try_add(self, pod: Pod) -> bool:
        need = self.requests + request_of(pod)
        taints = pool_taints(self.pool)
        fitting = [o for o in self.offerings
                   if need.fits_in(o.capacity) and pod_matches(pod, o.labels, taints)]
        if not fitting:
            return False
        self.offerings, self.requests = fitting, need
        self.pods.append(pod)
        return True


@dataclass
class SchedulingResult:
    existing: dict[str, list[Pod]]  # node name -> pods that fit there already
    new_claims: list[ClaimPlan]
    unplaceable: list[Pod]


def schedule_pods(pods: list[Pod], bins: list[Bin], pools: list[PoolCapacity]) -> SchedulingResult:
    """Plan where `pods` go; `pools` must already be in weight order."""
    existing: dict[str, list[Pod]] = {}
    claims: list[ClaimPlan] = []
    unplaceable: list[Pod] = []
    for pod in pod_priority_order(pods):
        home = next((b for b in bins if b.try_add(pod)), None)
        if home is not None:
            existing.setdefault(home.name, []).append(pod)
            continue
        if any(c.try_add(pod) for c in sorted(claims, key=lambda c: len(c.pods))):
            continue
        claim = _new_claim(pod, pools)
        if claim is None:
            unplaceable.append(pod)
        else:
            claims.append(claim)
    return SchedulingResult(existing, claims, unplaceable)


def _new_claim(pod: Pod, pools: list[PoolCapacity]) -> ClaimPlan | None:
    for cap in pools:
        offerings = [o for o in cap.offerings if cap.launchable(o)]
        plan = ClaimPlan(cap.pool, offerings)
        if offerings and plan.try_add(pod):
            # Limits are checked against the cheapest offering, the one most likely launched;
            # Karpenter's own limit check is eventually consistent and can overshoot too.
            cap.reserve(plan.offerings[0])
            return plan
    return None
