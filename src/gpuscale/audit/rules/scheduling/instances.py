"""Which instance types a workload's pods can land on: the input's GPU NodePools, else the
catalogue."""

from __future__ import annotations

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.nodepools import allowed_instance_types, is_gpu_nodepool
from gpuscale.audit.workloads import pod_templates
from gpuscale.catalog import InstanceType, instance_types

NODEPOOL_LABEL = "karpenter.sh/nodepool"


def candidate_instances(obj: Manifest, ctx: AuditContext) -> tuple[list[InstanceType], str]:
    """GPU instance types the pods could get, and where that list came from."""
    pinned = None
    for tmpl in pod_templates(obj):
        pinned = ((tmpl.template.get("spec") or {}).get("nodeSelector") or {}).get(
            NODEPOOL_LABEL
        ) or pinned
    pools = [
        p
        for p in ctx.of_kind("NodePool")
        if is_gpu_nodepool(p) and (pinned is None or p.name == pinned)
    ]
    if pools:
        found = {it.name: it for p in pools for it in allowed_instance_types(p) if it.num_gpus > 0}
        names = ", ".join(p.name for p in pools)
        return sorted(found.values(), key=lambda it: it.name), f"NodePool {names}"
    gpu_types = [it for it in instance_types().values() if it.num_gpus > 0]
    return gpu_types, "the gpuscale instance catalogue (no GPU NodePool in the input)"
