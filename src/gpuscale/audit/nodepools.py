"""Reading Karpenter NodePools: is it a GPU pool, which catalogue instance types can it launch."""

from __future__ import annotations

import math

from gpuscale.audit.loader import Manifest
from gpuscale.audit.values import quantity
from gpuscale.catalog import InstanceType, instance_types

GPU_RESOURCE = "nvidia.com/gpu"
GPU_REQUIREMENT_KEYS = (
    "karpenter.k8s.aws/instance-gpu-count",
    "karpenter.k8s.aws/instance-gpu-name",
    "karpenter.k8s.aws/instance-gpu-manufacturer",
    "karpenter.k8s.aws/instance-gpu-memory",
    "cloud.google.com/gke-accelerator",
    "nvidia.com/gpu.product",
)
GPU_FAMILY_PREFIXES = ("p", "g")  # AWS accelerated families p3/p4/p5/g5/g6...


def requirements(pool: Manifest) -> list[dict]:
    reqs = pool.get("spec", "template", "spec", "requirements") or []
    return [r for r in reqs if isinstance(r, dict)]


def is_gpu_nodepool(pool: Manifest) -> bool:
    if GPU_RESOURCE in (pool.get("spec", "limits") or {}):
        return True
    for taint in pool.get("spec", "template", "spec", "taints") or []:
        if isinstance(taint, dict) and "gpu" in str(taint.get("key", "")).lower():
            return True
    for req in requirements(pool):
        key, values = req.get("key", ""), [str(v) for v in req.get("values") or []]
        if key in GPU_REQUIREMENT_KEYS and req.get("operator") != "DoesNotExist":
            return True
        if key == "node.kubernetes.io/instance-type" and req.get("operator") == "In" and \
                any(v in instance_types() for v in values):
            return True
        if key == "karpenter.k8s.aws/instance-family" and req.get("operator") == "In" and \
                values and all(v[:1] in GPU_FAMILY_PREFIXES and v[1:2].isdigit() for v in values):
            return True
    return False


def _allows(req: dict, value) -> bool:
    op, values = req.get("operator"), [str(v) for v in req.get("values") or []]
    if op == "In":
        return str(value) in values
    if op == "NotIn":
        return str(value) not in values
    if op in ("Gt", "Gte", "Lt", "Lte"):
        try:
            number, bound = float(value), float(values[0])
        except (TypeError, ValueError, IndexError):
            return True
        return {"Gt": number > bound, "Gte": number >= bound,
                "Lt": number < bound, "Lte": number <= bound}[op]
    return True


def _attributes(it: InstanceType) -> dict:
    return {"node.kubernetes.io/instance-type": it.name,
            "karpenter.k8s.aws/instance-gpu-count": it.num_gpus,
            "karpenter.k8s.aws/instance-family": it.name.split(".")[0],
            "karpenter.k8s.aws/instance-cpu": it.vcpus,
            **it.labels}


def allowed_instance_types(pool: Manifest) -> list[InstanceType]:
    """Catalogue instance types the pool's requirements admit (unknown keys are ignored)."""
    out = []
    for it in instance_types().values():
        attrs = _attributes(it)
        if all(_allows(r, attrs[r["key"]]) for r in requirements(pool) if r.get("key") in attrs):
            out.append(it)
    return out


def max_nodes(pool: Manifest) -> int | None:
    """Most nodes the pool can have, from `limits.nodes` or the GPU limit; None if unbounded."""
    limits = pool.get("spec", "limits") or {}
    if "nodes" in limits:
        return int(quantity(limits["nodes"], "spec.limits.nodes"))
    if GPU_RESOURCE in limits:
        sizes = [it.num_gpus for it in allowed_instance_types(pool) if it.num_gpus > 0]
        if sizes:
            return math.ceil(quantity(limits[GPU_RESOURCE], f"spec.limits.{GPU_RESOURCE}")
                             / min(sizes))
    return None
