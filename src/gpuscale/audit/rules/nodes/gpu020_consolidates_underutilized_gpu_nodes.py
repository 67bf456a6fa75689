"""GPU020: a GPU NodePool that consolidates underutilized (not only empty) nodes."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.nodepools import is_gpu_nodepool

DEFAULT_POLICY = "WhenEmptyOrUnderutilized"  # layer1-node-provisioning.md 1.8


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    if not is_gpu_nodepool(obj) or obj.get("spec", "replicas") is not None:
        return  # static pools ignore consolidation (layer1 1.5)
    policy = obj.get("spec", "disruption", "consolidationPolicy")
    if policy is None or policy == DEFAULT_POLICY:
        how = "is" if policy else "defaults to"
        path = ("spec", "disruption", "consolidationPolicy") if policy else ("spec", "disruption")
        yield Hit(path, {"how": how})


RULE = Rule(
    id="GPU020",
    name="gpu-nodepool-consolidates-busy-nodes",
    severity=Severity.WARNING,
    kinds=("NodePool",),
    family="nodes",
    summary=(
        "A GPU NodePool lets Karpenter consolidate underutilized nodes, "
        "evicting running GPU pods."
    ),
    message="consolidationPolicy {how} WhenEmptyOrUnderutilized: Karpenter may evict running GPU "
    "pods to repack them onto fewer or cheaper nodes",
    why="Under `WhenEmptyOrUnderutilized` (the default) Karpenter deletes or replaces any node "
    "whose pods fit elsewhere more cheaply. For GPU serving that evicts a replica which needs "
    "minutes to reload its model, and for training it kills a step in progress; the saving "
    "is usually smaller than the lost GPU time.",
    fix="Use `consolidationPolicy: WhenEmpty` for GPU pools (`Balanced`, v1.14+, still moves "
    "busy GPU nodes: GPU029), and protect long jobs with `karpenter.sh/do-not-disrupt`.",
    references=(
        "layer1-node-provisioning.md section 1.8 (consolidationPolicy, default "
        "WhenEmptyOrUnderutilized)",
        "kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go",
    ),
    check=check,
)
