"""GPU029: a GPU NodePool with `consolidationPolicy: Balanced` (Karpenter v1.14+)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.nodepools import is_gpu_nodepool


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    if not is_gpu_nodepool(obj) or obj.get("spec", "replicas") is not None:
        return  # static pools ignore consolidation (layer1 1.5)
    if obj.get("spec", "disruption", "consolidationPolicy") == "Balanced":
        yield Hit(("spec", "disruption", "consolidationPolicy"))


RULE = Rule(
    id="GPU029",
    name="gpu-nodepool-balanced-consolidation",
    severity=Severity.WARNING,
    kinds=("NodePool",),
    family="nodes",
    summary="A GPU NodePool uses consolidationPolicy Balanced, which still moves busy GPU nodes.",
    message="consolidationPolicy is Balanced: Karpenter approves moving a busy GPU node once its "
    "savings reach half its share of the pool's disruption cost, and it prices a GPU "
    "replica's eviction like any other pod's",
    why="`Balanced` (new in Karpenter v1.14) approves a delete or replace when (savings / pool "
    "cost) / (disruption cost / pool disruption cost) >= 0.5, where a pod's eviction cost is "
    "1.0 plus small terms for `pod-deletion-cost` and priority. A vLLM replica that needs "
    "minutes to reload its weights costs the same 1.0 as a sidecar, so on a GPU pool it "
    "still evicts serving and training pods for modest savings. Karpenter releases before "
    "v1.14 reject the value outright.",
    fix="Use `consolidationPolicy: WhenEmpty` on GPU pools (with `consolidateAfter` longer than "
    "a replica restart). If you keep Balanced, raise the eviction cost of GPU pods "
    "(`controller.kubernetes.io/pod-deletion-cost`, a high PriorityClass) and protect long "
    "jobs with `karpenter.sh/do-not-disrupt`.",
    references=(
        "layer1-node-provisioning.md section 1.8 (consolidationPolicy Balanced, score >= 1/k with "
        "k = 2; per-pod eviction cost)",
        "kubernetes-sigs/karpenter designs/balanced-consolidation.md",
    ),
    check=check,
)
