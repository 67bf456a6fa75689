"""GPU030: a GPU workload whose pods only work together is scheduled pod by pod."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.rules.scheduling.gangs import gang_marker, pods_needed_together, scheduler_name
from gpuscale.audit.workloads import gpu_templates, gpus_per_pod
from gpuscale.units import gpus_text


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    pods, why = pods_needed_together(obj)
    if pods <= 1 or gang_marker(obj):
        return
    gpus = sum(gpus_per_pod(t.template) * t.replicas for t in gpu_templates(obj))
    path = gpu_templates(obj)[0].spec_at()
    yield Hit(path, {"pods": pods, "why": why, "gpus": gpus_text(gpus),
                     "scheduler": scheduler_name(obj)})


RULE = Rule(
    id="GPU030",
    name="multi-pod-gpu-workload-without-gang-scheduling",
    severity=Severity.ERROR,
    kinds=("LeaderWorkerSet", "RayCluster", "Job", "CronJob", "Deployment", "StatefulSet",
           "LLMInferenceService"),
    family="scheduling",
    summary=(
        "A GPU workload that needs several pods at once is placed pod by pod, without a gang "
        "scheduler."
    ),
    message="needs {pods} pods together ({why}, {gpus}) but uses {scheduler} with no gang: "
    "a partial placement holds GPUs idle",
    why="kube-scheduler binds one pod at a time. When only some pods of a tensor/pipeline-parallel "
    "group or a training job fit, the bound ones hold their GPUs while waiting for the rest; "
    "two such workloads can deadlock, and Karpenter grows the cluster pod by pod (no atomic "
    "multi-node launch) or stops at a limit with the gang never complete.",
    fix="Schedule with a gang scheduler: KAI (`schedulerName: kai-scheduler`, PodGroup "
    "`minMember` = pods needed), Volcano, the coscheduling plugin, Kueue admission, or "
    "Kubernetes' own gang scheduling (alpha in 1.35).",
    references=(
        "layer2-scheduling.md section 1.4 (why multi-pod jobs partially allocate)",
        "layer2-scheduling.md section 2.10 (how KAI avoids it)",
        "layer1-node-provisioning.md section 1.9 (no atomic multi-node launch)",
    ),
    check=check,
)
