"""Render a simulated NodePool as a `karpenter.sh/v1` NodePool object.

The scenario's NodePool fields mirror the CRD, so rendering is a renaming to camelCase with
empty and default-valued optional fields left out where the CRD default is the same. The
result validates against `spec.versions[v1].schema.openAPIV3Schema` of the upstream CRD
(tests/provisioning/test_render_nodepool.py).
"""

from __future__ import annotations

from typing import Any

from gpuscale.provisioning.karpenter.nodepool import Budget, NodePoolParams, Requirement
from gpuscale.provisioning.nodes import TaintSpec


def _requirement(req: Requirement) -> dict[str, Any]:
    out: dict[str, Any] = {"key": req.key, "operator": req.operator}
    if req.values:
        out["values"] = list(req.values)
    if req.min_values is not None:
        out["minValues"] = req.min_values
    return out


def _taint(taint: TaintSpec) -> dict[str, str]:
    out = {"key": taint.key, "effect": taint.effect}
    if taint.value:
        out["value"] = taint.value
    return out


def _budget(budget: Budget) -> dict[str, Any]:
    out: dict[str, Any] = {"nodes": budget.nodes}
    if budget.reasons is not None:
        out["reasons"] = list(budget.reasons)
    if budget.schedule is not None:
        out["schedule"] = budget.schedule
        out["duration"] = budget.duration
    return out


def render_nodepool(params: NodePoolParams) -> dict[str, Any]:
    """NodePool params -> the NodePool manifest as a dict (apiVersion, kind, metadata, spec)."""
    template_spec: dict[str, Any] = {
        "nodeClassRef": params.node_class_ref.model_dump(),
        "requirements": [_requirement(r) for r in params.requirements],
        "expireAfter": params.expire_after,
    }
    if params.taints:
        template_spec["taints"] = [_taint(t) for t in params.taints]
    if params.startup_taints:
        template_spec["startupTaints"] = [_taint(t) for t in params.startup_taints]
    if params.termination_grace_period is not None:
        template_spec["terminationGracePeriod"] = params.termination_grace_period
    template: dict[str, Any] = {}
    if params.labels:
        template["metadata"] = {"labels": dict(params.labels)}
    template["spec"] = template_spec
    disruption = params.disruption
    spec: dict[str, Any] = {
        "template": template,
        "disruption": {
            "consolidationPolicy": disruption.consolidation_policy,
            "consolidateAfter": disruption.consolidate_after,
            "budgets": [_budget(b) for b in disruption.budgets],
        },
    }
    if params.limits:
        spec["limits"] = dict(params.limits)
    if params.weight is not None:
        spec["weight"] = params.weight
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": params.name}, "spec": spec}
