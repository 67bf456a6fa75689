"""GPU021: a GPU NodePool consolidates sooner than a GPU node takes to come back."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.nodepools import is_gpu_nodepool
from gpuscale.units import format_duration, parse_duration_s

# calibration.md A18: a new GPU node is schedulable after 3-10 min; Cluster Autoscaler waits
# 10 min (`--scale-down-unneeded-time`) before removing a node. Below that, a node removed in a
# lull is re-bought (and re-booted) on the next burst.
MIN_CONSOLIDATE_AFTER_S = 600.0


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    if not is_gpu_nodepool(obj) or obj.get("spec", "replicas") is not None:
        return
    value = obj.get("spec", "disruption", "consolidateAfter")
    try:
        seconds = parse_duration_s(value) if value is not None else 0.0
    except ValueError:
        return
    if seconds < MIN_CONSOLIDATE_AFTER_S:
        shown = f"is {format_duration(seconds)}" if value is not None else "is unset (default 0s)"
        path = (
            ("spec", "disruption", "consolidateAfter")
            if value is not None
            else ("spec", "disruption")
        )
        yield Hit(path, {"shown": shown, "min": format_duration(MIN_CONSOLIDATE_AFTER_S)})


RULE = Rule(
    id="GPU021", name="gpu-nodepool-consolidates-too-soon", severity=Severity.WARNING,
    kinds=("NodePool",), family="nodes",
    summary="A GPU NodePool's consolidateAfter is missing or shorter than a GPU node's start-up.",
    message="consolidateAfter {shown}, shorter than the {min} a GPU node takes to be bought back "
            "and become schedulable",
    why="Karpenter may remove a node as soon as `consolidateAfter` has passed since its last pod "
        "event (default 0s). A GPU node takes 3-10 min to launch, install drivers and advertise "
        "`nvidia.com/gpu`; removing it in a short lull means the next burst waits that long and "
        "pays for the boot again.",
    fix="Set `consolidateAfter` to at least 10m on GPU pools (longer for bursty traffic), or "
        "`Never` with an explicit scale-down process.",
    references=("layer1-node-provisioning.md section 1.8 (consolidateAfter default 0s)",
                "calibration.md A18 (new GPU node to schedulable: 3-10 min)",
                "layer1-node-provisioning.md section 2.3 (CA scale-down-unneeded-time 10m)"),
    check=check,
)
