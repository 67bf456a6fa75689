"""GPU023: a GPU NodePool without a taint that keeps non-GPU pods off its nodes."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.nodepools import is_gpu_nodepool


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    if not is_gpu_nodepool(obj):
        return
    taints = obj.get("spec", "template", "spec", "taints") or []
    hard = [
        t for t in taints if isinstance(t, dict) and t.get("effect") in ("NoSchedule", "NoExecute")
    ]
    if not hard:
        yield Hit(("spec", "template", "spec"), {"count": len(taints)})


RULE = Rule(
    id="GPU023",
    name="gpu-nodepool-without-taint",
    severity=Severity.WARNING,
    kinds=("NodePool",),
    family="nodes",
    summary="A GPU NodePool has no NoSchedule taint, so CPU-only pods can land on GPU nodes.",
    message="GPU nodes carry no NoSchedule/NoExecute taint ({count} taints in total): any pod "
    "can be placed on them",
    why="Without a taint the scheduler (and Karpenter's simulation) happily places ordinary pods "
    "on GPU nodes. They take the CPU and memory GPU pods need, keep otherwise empty GPU nodes "
    "from being consolidated, and can make Karpenter launch a GPU instance for a CPU pod.",
    fix='Add `taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]` to the NodePool '
    "template and a matching toleration to GPU workloads (the GPU operator and device "
    "plugin tolerate it already).",
    references=(
        "layer1-node-provisioning.md section 1.3 (scheduling simulation)",
        "layer2-scheduling.md section 1.5 (extended resource nvidia.com/gpu)",
    ),
    check=check,
)
