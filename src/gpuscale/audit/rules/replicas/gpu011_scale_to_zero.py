"""GPU011: an SLO-critical inference service can be scaled to zero replicas."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import SIGNAL_KINDS, AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.scalers import min_replicas
from gpuscale.audit.workloads import cold_start_s, is_slo_critical


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    target = ctx.scale_target(obj)
    if target is None or not is_slo_critical(target):
        return
    floor, path, explicit = min_replicas(obj)
    if floor == 0:
        cold, source = cold_start_s(target)
        how = "is set to 0" if explicit else "defaults to 0 (minReplicaCount unset)"
        yield Hit(path, {"target": target.ref, "how": how, "cold": f"{cold:.0f}", "source": source})


RULE = Rule(
    id="GPU011",
    name="slo-critical-service-scales-to-zero",
    severity=Severity.WARNING,
    kinds=SIGNAL_KINDS,
    family="replicas",
    summary="An autoscaler can take an SLO-critical GPU inference service to zero replicas.",
    message="the replica floor of {target} {how}; the first request after idle waits a cold start "
    "of about {cold} s ({source}) plus a GPU node if none is free",
    why="Coming back from zero means scheduling a pod, often provisioning a GPU node (3-10 min), "
    "pulling a multi-GB image and loading weights and compiling (minutes for large models). "
    "KEDA's `minReplicaCount` defaults to 0, so a ScaledObject without it scales to zero "
    "after `cooldownPeriod` (300 s) of inactivity.",
    fix="Set `minReplicaCount: 1` (KEDA) or `minReplicas >= 1`; keep scale-to-zero for "
    'development models and mark them `gpuscale.io/slo-critical: "false"`.',
    references=(
        "layer3-replica-autoscaling.md section 2.1 (minReplicaCount default 0, cooldownPeriod 300 "
        "s)",
        "calibration.md A15-A18 (cold-start components)",
        "hardware-and-models.md section 4 (cold-start components)",
    ),
    check=check,
)
