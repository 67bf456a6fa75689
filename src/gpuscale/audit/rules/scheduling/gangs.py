"""How a workload asks for gang (all-or-nothing) scheduling, and how many pods it needs at once."""

from __future__ import annotations

import re

from gpuscale.audit.loader import Manifest
from gpuscale.audit.workloads import (
    containers,
    gpu_templates,
    gpus_per_pod,
    parallel_size,
    pod_templates,
)

# layer2-scheduling.md sections 1.6, 1.7, 2.1, 3, 4: schedulers and markers that gang-schedule.
GANG_SCHEDULERS = {"kai-scheduler", "volcano", "scheduler-plugins-scheduler", "coscheduler"}
GANG_LABELS = ("scheduling.x-k8s.io/pod-group", "kueue.x-k8s.io/queue-name", "volcano.sh/job-name")
GANG_ANNOTATIONS = (
    "pod-group-name",
    "scheduling.k8s.io/group-name",
    "scheduling.volcano.sh/group-name",
)
KAI_BATCH_MIN_MEMBER = "kai.scheduler/batch-min-member"


def scheduler_name(obj: Manifest) -> str:
    for tmpl in pod_templates(obj):
        name = (tmpl.template.get("spec") or {}).get("schedulerName")
        if name:
            return str(name)
    return "default-scheduler"


def gang_marker(obj: Manifest) -> str | None:
    """What makes the workload's pods schedule as a group, or None."""
    name = scheduler_name(obj)
    if name in GANG_SCHEDULERS:
        return f"schedulerName {name}"
    sources = [obj.labels, obj.annotations]
    for tmpl in pod_templates(obj):
        meta = tmpl.template.get("metadata") or {}
        sources += [meta.get("labels") or {}, meta.get("annotations") or {}]
        spec = tmpl.template.get("spec") or {}
        if spec.get("schedulingGroup") or spec.get("workloadRef"):
            return "spec.schedulingGroup (Kubernetes gang scheduling)"
    for source in sources:
        for key in GANG_LABELS + GANG_ANNOTATIONS:
            if key in source:
                return key
    return None


def pod_group_name(obj: Manifest) -> str | None:
    for tmpl in pod_templates(obj):
        meta = tmpl.template.get("metadata") or {}
        for source in (meta.get("annotations") or {}, meta.get("labels") or {}):
            for key in (
                "pod-group-name",
                "scheduling.x-k8s.io/pod-group",
                "scheduling.k8s.io/group-name",
            ):
                if key in source:
                    return str(source[key])
    return None


def _nnodes(obj: Manifest) -> int:
    best = 1
    for tmpl in pod_templates(obj):
        for container in containers(tmpl.template):
            args = [
                str(a) for a in (container.get("command") or []) + (container.get("args") or [])
            ]
            for i, arg in enumerate(args):
                if arg.startswith("--nnodes"):
                    value = (
                        arg.split("=", 1)[1]
                        if "=" in arg
                        else (args[i + 1] if i + 1 < len(args) else "1")
                    )
                    if value.isdigit():
                        best = max(best, int(value))
    return best


def pods_needed_together(obj: Manifest) -> tuple[int, str]:
    """Pods that must all run for one instance to work, and why (1 when independent)."""
    if not gpu_templates(obj):
        return 1, ""
    if obj.kind == "LeaderWorkerSet":
        size = sum(t.replicas for t in pod_templates(obj))
        return size, f"LeaderWorkerSet group size {size}"
    if obj.kind == "RayCluster":
        pods = sum(t.replicas for t in pod_templates(obj))
        return pods, f"RayCluster head + workers = {pods} pods"
    if obj.kind in ("Job", "CronJob"):
        pods = pod_templates(obj)[0].replicas
        return pods, f"parallelism {pods}"
    per_pod = max(gpus_per_pod(t.template) for t in gpu_templates(obj))
    model_gpus = parallel_size(obj, "tensor") * parallel_size(obj, "pipeline")
    nnodes = _nnodes(obj)
    if nnodes > 1:
        return nnodes, f"--nnodes {nnodes}"
    if per_pod and model_gpus > per_pod and engine_spans_pods(obj):
        pods = -(-model_gpus // per_pod)
        return pods, f"tensor x pipeline parallel = {model_gpus} GPUs over {per_pod}-GPU pods"
    # Otherwise one engine lives in one pod: a parallel size beyond the pod's GPUs is an engine
    # that cannot start (GPU035), not pods that must be placed together.
    return 1, ""


def engine_spans_pods(obj: Manifest) -> bool:
    """Whether one engine of this workload can use GPUs of several pods: a multi-node
    launcher (`--nnodes`, a Ray backend or `ray start`); a Deployment's or StatefulSet's
    replicas are otherwise independent engines, each with only its own pod's GPUs (vLLM
    needs tensor x pipeline GPUs visible to its one process group, vllm/config/parallel.py)."""
    if _nnodes(obj) > 1:
        return True
    for tmpl in pod_templates(obj):
        for container in containers(tmpl.template):
            words = " ".join(str(w) for w in (container.get("command") or [])
                             + (container.get("args") or [])).replace("_", "-")
            if re.search(r"--distributed-executor-backend[ =]+ray\b|\bray (start|job)\b|"
                         r"multi-node-serving|--ray-", words):
                return True
    return False
