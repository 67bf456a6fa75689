"""GPU051: an inference workload with no PodDisruptionBudget."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext, namespace_of
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.scalers import replica_ceiling
from gpuscale.audit.workloads import gpu_templates, is_gpu_inference


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    if not is_gpu_inference(obj) or replica_ceiling(obj, ctx) <= 1:
        # One replica is evicted by any drain, PDB or not: a PDB of maxUnavailable 1 does not
        # hold it back and minAvailable 1 blocks the drain forever. Nothing to fix there.
        return
    for tmpl in gpu_templates(obj):
        labels = (tmpl.template.get("metadata") or {}).get("labels") or {}
        if not ctx.pdbs_selecting(namespace_of(obj), labels):
            shown = ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "no labels"
            yield Hit(tmpl.metadata_at(), {"labels": shown, "ns": namespace_of(obj)})
            return


RULE = Rule(
    id="GPU051",
    name="inference-without-pod-disruption-budget",
    severity=Severity.WARNING,
    kinds=("Deployment", "StatefulSet", "LeaderWorkerSet", "LLMInferenceService"),
    family="availability",
    summary="No PodDisruptionBudget selects the pods of a GPU inference workload that can run "
    "more than one replica.",
    message="no PodDisruptionBudget in namespace {ns} selects these pods ({labels}); a node drain "
    "or consolidation may evict every replica at once",
    why="Karpenter consolidation, drift and Cluster Autoscaler scale-down drain nodes through the "
    "Eviction API, which only holds back when a PDB says so. Without one, all replicas of a "
    "model can be evicted together and the service is down for a full cold start. (A single "
    "replica, with no autoscaler that can add one, is not flagged: no PDB keeps it up through "
    "a drain.)",
    fix="Add a PodDisruptionBudget with `maxUnavailable: 1` (or a `minAvailable` below the replica "
    "floor, so drains can still proceed) selecting the serving pods.",
    references=(
        "layer1-node-provisioning.md section 1.8 (drain through the Eviction API, PDBs honoured)",
        "layer1-node-provisioning.md section 2.3 (restrictive PDBs block CA scale-down)",
    ),
    check=check,
)
