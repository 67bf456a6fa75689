"""GPU014: two autoscalers write the replica count of the same workload."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    scalers = ctx.scalers_of(obj)
    if obj.kind == "LLMInferenceService" and isinstance(obj.get("spec", "scaling"), dict):
        scalers = [obj, *scalers]  # its own `scaling` section is one autoscaler
    if len(scalers) > 1:
        yield Hit(("metadata", "name"), {"count": len(scalers),
                                         "scalers": ", ".join(s.ref for s in scalers)})


RULE = Rule(
    id="GPU014",
    name="workload-has-competing-autoscalers",
    severity=Severity.ERROR,
    kinds=("Deployment", "StatefulSet", "LeaderWorkerSet", "RayCluster", "LLMInferenceService"),
    family="replicas",
    summary="More than one autoscaler (HPA, ScaledObject, PodAutoscaler, an LLMInferenceService's "
    "`scaling`) sets the replicas of the same workload.",
    message=(
        "{count} autoscalers target this workload ({scalers}); they overwrite each other's "
        "replica count"
    ),
    why="Each HPA (and the HPA KEDA generates) writes `/scale` on its own 15 s loop from its own "
    "metrics. With two of them the replica count oscillates between their answers, and every "
    "swing on a GPU service starts or kills a replica that takes minutes to warm up.",
    fix="Keep one scaler per workload and put every signal in it: an HPA takes the maximum over "
    "its metrics, KEDA over its triggers.",
    references=(
        "layer3-replica-autoscaling.md section 1.5 (multiple metrics: the maximum wins)",
        "layer3-replica-autoscaling.md section 2.2 (KEDA creates its own HPA)",
    ),
    check=check,
)
