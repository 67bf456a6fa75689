"""GPU022: a GPU NodePool without a limit on `nvidia.com/gpu`."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.nodepools import GPU_RESOURCE, is_gpu_nodepool


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    if not is_gpu_nodepool(obj) or obj.get("spec", "replicas") is not None:
        return
    limits = obj.get("spec", "limits") or {}
    if GPU_RESOURCE not in limits:
        others = ", ".join(f"{k}={v}" for k, v in limits.items()) or "none"
        yield Hit(("spec", "limits") if limits else ("spec",), {"others": others})


RULE = Rule(
    id="GPU022", name="gpu-nodepool-without-gpu-limit", severity=Severity.WARNING,
    kinds=("NodePool",), family="nodes",
    summary="A GPU NodePool sets no `nvidia.com/gpu` limit.",
    message="no `limits.nvidia.com/gpu` (limits: {others}); only the cloud quota bounds how many "
            "GPUs a runaway autoscaler or a stuck gang can buy",
    why="Without a limit Karpenter keeps launching nodes while pods are pending. A scaler on a "
        "saturating metric, or a gang that can never complete, then buys GPUs up to the account "
        "quota at tens of dollars per node-hour.",
    fix="Set `spec.limits.nvidia.com/gpu` to the GPUs you intend to pay for (and `nodes` if you "
        "mix sizes).",
    references=("layer1-node-provisioning.md section 1.4 (limits; no limits = only cloud quotas)",),
    check=check,
)
