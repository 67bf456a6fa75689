"""GPU015: scale-down windows that add up to more than the gaps between traffic bursts."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.nodepools import is_gpu_nodepool
from gpuscale.audit.scalers import (
    HPA_DEFAULT_SCALE_DOWN_WINDOW_S,
    KEDA_DEFAULT_COOLDOWN_S,
    min_replicas,
)
from gpuscale.units import parse_duration_s

# The gap is the user's knowledge, not in any manifest: they state it on the scaler or its
# workload (the same convention as gpuscale.io/cold-start-seconds, docs/audit.md).
GAP_ANNOTATION = "gpuscale.io/traffic-gap-seconds"


def _gap_s(*objs: Manifest | None) -> float | None:
    for obj in objs:
        if obj is None:
            continue
        value = (obj.get("metadata", "annotations") or {}).get(GAP_ANNOTATION)
        if value is not None:
            try:
                return float(value)
            except (TypeError, ValueError):
                return None
    return None


def _scale_down_window_s(obj: Manifest) -> float:
    behavior = (obj.get("spec", "behavior") if obj.kind == "HorizontalPodAutoscaler" else
                obj.get("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior"))
    window = ((behavior or {}).get("scaleDown") or {}).get("stabilizationWindowSeconds")
    return float(window) if window is not None else float(HPA_DEFAULT_SCALE_DOWN_WINDOW_S)


def _consolidate_after_s(ctx: AuditContext) -> float:
    """The shortest consolidateAfter of the GPU NodePools (Karpenter's default is 0 s)."""
    values = []
    for pool in ctx.of_kind("NodePool"):
        if not is_gpu_nodepool(pool):
            continue
        after = pool.get("spec", "disruption", "consolidateAfter")
        if after in (None, "Never"):
            continue
        try:
            values.append(parse_duration_s(after))
        except (TypeError, ValueError):
            continue
    return min(values, default=0.0)


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    target = ctx.scale_target(obj)
    gap = _gap_s(obj, target)
    if gap is None:
        return
    window = _scale_down_window_s(obj)
    parts = [f"scale-down stabilization {window:g} s"]
    total = window
    if obj.kind == "ScaledObject" and min_replicas(obj)[0] == 0:
        cooldown = float(obj.get("spec", "cooldownPeriod") or KEDA_DEFAULT_COOLDOWN_S)
        total += cooldown
        parts.append(f"cooldownPeriod {cooldown:g} s")
    after = _consolidate_after_s(ctx)
    if after:
        total += after
        parts.append(f"consolidateAfter {after:g} s")
    if total > gap:
        yield Hit(("spec",), {"total": f"{total:g}", "parts": " + ".join(parts), "gap": f"{gap:g}"})


RULE = Rule(
    id="GPU015", name="scale-down-windows-longer-than-traffic-gaps", severity=Severity.INFO,
    kinds=("HorizontalPodAutoscaler", "ScaledObject"), family="replicas",
    summary="Scale-down windows add up to more than the stated gaps between traffic bursts.",
    message="releasing capacity takes {total} s ({parts}), longer than the {gap} s between "
            "bursts: replicas and GPU nodes are never given back between bursts",
    why="After traffic stops, a replica goes only after the HPA's scale-down stabilization (and, "
        "to zero, KEDA's cooldownPeriod), and its node only after Karpenter's consolidateAfter. "
        "When these add up to more than the quiet gap between bursts, nothing is ever released: "
        "the service pays for its peak all day while the configuration reads as autoscaled, and "
        "every sizing decision made for the quiet periods is moot.",
    fix="Either keep the peak as an explicit floor (`minReplicas`, priced and reviewed as such), "
        "or shorten the windows so their sum fits inside the gap while each stays above a cold "
        "start (GPU012, GPU013, GPU021). State the gap with the annotation "
        "`gpuscale.io/traffic-gap-seconds` on the scaler or its workload.",
    references=("layer3-replica-autoscaling.md section 1.8 (stabilization windows; default 300 s)",
                "layer3-replica-autoscaling.md section 2.1-2.2 (cooldownPeriod)",
                "layer1-node-provisioning.md section 1.8 (consolidateAfter)"),
    check=check,
)
