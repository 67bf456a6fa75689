"""GPU052: an SLO-critical GPU Deployment can land on spot capacity."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.nodepools import _allows, is_gpu_nodepool, requirements
from gpuscale.audit.workloads import gpu_templates, is_slo_critical

CAPACITY_TYPE = "karpenter.sh/capacity-type"
WELL_KNOWN = ("kubernetes.io/", "karpenter.sh/", "karpenter.k8s.aws/", "k8s.aws/")


def _pool_offers_spot(pool: Manifest) -> bool:
    """Karpenter launches on-demand only unless a requirement lets capacity-type be spot."""
    for req in requirements(pool):
        if req.get("key") != CAPACITY_TYPE:
            continue
        op, values = req.get("operator"), [str(v) for v in req.get("values") or []]
        return (op == "In" and "spot" in values) or op == "Exists" or \
            (op == "NotIn" and "spot" not in values)
    return False


def _template_pins_capacity(spec: dict) -> set[str] | None:
    """Capacity types the pod allows through nodeSelector or required node affinity."""
    selector = (spec.get("nodeSelector") or {}).get(CAPACITY_TYPE)
    if selector is not None:
        return {str(selector)}
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    allowed: set[str] = set()
    for term in terms or []:
        for expr in (term or {}).get("matchExpressions") or []:
            if expr.get("key") == CAPACITY_TYPE and expr.get("operator") == "In":
                allowed |= {str(v) for v in expr.get("values") or []}
    return allowed or None


def _tolerates(spec: dict, taints: list) -> bool:
    tolerations = spec.get("tolerations") or []
    for taint in taints:
        if not isinstance(taint, dict) or taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any((t.get("operator") == "Exists" and not t.get("key")) or
                   (t.get("key") == taint.get("key") and
                    (t.get("operator") == "Exists" or t.get("value") == taint.get("value")))
                   for t in tolerations if isinstance(t, dict)):
            return False
    return True


def _selector_admits(spec: dict, pool: Manifest) -> bool:
    """Whether the pod's nodeSelector can match the pool's nodes: a label the pool sets to
    another value, a requirement that excludes the value, or a custom label the pool never
    sets rules the pool out (well-known labels are set by Karpenter and the cloud)."""
    labels = pool.get("spec", "template", "metadata", "labels") or {}
    reqs = {r.get("key"): r for r in requirements(pool)}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if key == CAPACITY_TYPE:
            continue
        if key == "karpenter.sh/nodepool":  # Karpenter labels each node with its pool's name
            if str(value) != pool.name:
                return False
        elif key in labels:
            if str(labels[key]) != str(value):
                return False
        elif key in reqs:
            if not _allows(reqs[key], value):
                return False
        elif not any(part in key for part in WELL_KNOWN):
            return False
    return True


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    if obj.kind != "Deployment" or not is_slo_critical(obj):
        return
    pools = [p for p in ctx.of_kind("NodePool") if is_gpu_nodepool(p) and _pool_offers_spot(p)]
    for tpl in gpu_templates(obj):
        spec = tpl.template.get("spec") or {}
        pinned = _template_pins_capacity(spec)
        if pinned is not None and "spot" not in pinned:
            continue
        for pool in pools:
            taints = pool.get("spec", "template", "spec", "taints") or []
            if _tolerates(spec, taints) and _selector_admits(spec, pool):
                yield Hit(tpl.spec_at(), {"pool": pool.name})
                break


RULE = Rule(
    id="GPU052",
    name="slo-critical-inference-on-spot",
    severity=Severity.WARNING,
    kinds=("Deployment",),
    family="availability",
    summary="An SLO-critical GPU inference Deployment can be scheduled on spot capacity.",
    message="can run on spot nodes of NodePool {pool}: a spot interruption gives 2 minutes' "
    "notice, shorter than a GPU replica's cold start, so each one is an SLO breach",
    why="EC2 reclaims spot capacity with a two-minute notice. A vLLM replica of a large model "
    "needs several minutes to pull, load and warm up, so the replacement is never ready in "
    "time; interruptions cluster when a GPU type is scarce, taking several replicas at "
    "once. `gpuscale plan` keeps SLO-critical serving on on-demand (or reserved) capacity "
    "for this reason.",
    fix="Pin the serving pods to on-demand: `nodeSelector: {karpenter.sh/capacity-type: "
    "on-demand}` (or a dedicated on-demand NodePool with its own taint), and leave spot to "
    "batch and training work that checkpoints. Mark a Deployment that may tolerate it with "
    '`gpuscale.io/slo-critical: "false"`.',
    references=(
        "layer1-node-provisioning.md (capacity types: reserved, then spot, then on-demand; spot "
        "interruption notice)",
        "aws/karpenter-provider-aws website/content/en/docs/concepts/disruption.md",
    ),
    check=check,
)
