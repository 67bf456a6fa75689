"""GPU032: a pod asks for more GPUs than any instance type it can land on offers."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.rules.scheduling.instances import candidate_instances
from gpuscale.audit.workloads import gpu_templates, gpus_per_pod
from gpuscale.units import gpus_text


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    templates = gpu_templates(obj)
    if not templates:
        return
    instances, source = candidate_instances(obj, ctx)
    largest = max(instances, key=lambda it: it.num_gpus, default=None)
    for tmpl in templates:
        want = gpus_per_pod(tmpl.template)
        if largest is None or want > largest.num_gpus:
            most = (
                f"{largest.num_gpus} ({largest.name})"
                if largest
                else "0 (no GPU instance type matches)"
            )
            yield Hit(
                tmpl.spec_at("containers"),
                {"want": gpus_text(want), "most": most, "source": source}
            )


RULE = Rule(
    id="GPU032",
    name="pod-requests-more-gpus-than-any-node",
    severity=Severity.ERROR,
    kinds=("Deployment", "StatefulSet", "LeaderWorkerSet", "Job", "CronJob", "RayCluster", "Pod",
           "LLMInferenceService"),
    family="scheduling",
    summary="A pod requests more GPUs than the largest instance type it may run on.",
    message=(
        "a pod requests {want} but the largest instance from {source} has {most}: it can "
        "never be scheduled"
    ),
    why="A pod's `nvidia.com/gpu` request must fit on one node; extended resources are never split "
    "or overcommitted. Karpenter finds no instance type, Cluster Autoscaler no node group, and "
    "the pod stays Pending without an obvious error on the workload.",
    fix="Split the model over several pods (pipeline parallel, LeaderWorkerSet) or allow an "
    "instance type with enough GPUs in the NodePool requirements.",
    references=(
        "layer2-scheduling.md section 1.5 (extended resources are whole, not overcommitted)",
        "layer1-node-provisioning.md section 1.3 (instance-type choice)",
    ),
    check=check,
)
