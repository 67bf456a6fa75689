"""GPU041: inference in a KAI queue where training can preempt or reclaim it."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.rules.scheduling.gangs import scheduler_name
from gpuscale.audit.values import integer, quantity
from gpuscale.audit.workloads import gpu_templates, gpus_per_pod, is_gpu_inference

QUEUE_LABEL = "kai.scheduler/queue"
# layer2-scheduling.md 2.3: built-in PriorityClasses; >= 100 is non-preemptible.
BUILTIN_PRIORITY = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
NON_PREEMPTIBLE_FROM = 100
DEPLOYMENT_DEFAULT_CLASS = "inference"  # pod-grouper default for Deployments


def _priority_class(obj: Manifest) -> tuple[str, tuple]:
    for key in ("priorityClassName",):
        if key in obj.labels:
            return str(obj.labels[key]), ("metadata", "labels", key)
    for tmpl in gpu_templates(obj):
        spec = tmpl.template.get("spec") or {}
        if spec.get("priorityClassName"):
            return str(spec["priorityClassName"]), tmpl.spec_at("priorityClassName")
        labels = (tmpl.template.get("metadata") or {}).get("labels") or {}
        if "priorityClassName" in labels:
            return str(labels["priorityClassName"]), tmpl.metadata_at("labels", "priorityClassName")
    default = DEPLOYMENT_DEFAULT_CLASS if obj.kind == "Deployment" else "train"
    return default, ("metadata",)


def _value(name: str, ctx: AuditContext) -> int | None:
    for pc in ctx.of_kind("PriorityClass"):
        if pc.name == name and pc.get("value") is not None:
            return integer(pc.get("value"), f"PriorityClass/{name}: value")
    return BUILTIN_PRIORITY.get(name)


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    if scheduler_name(obj) != "kai-scheduler" or not is_gpu_inference(obj):
        return
    name, path = _priority_class(obj)
    value = _value(name, ctx)
    if value is not None and value < NON_PREEMPTIBLE_FROM:
        yield Hit(
            path,
            {
                "what": f"priority class {name} ({value}) is below {NON_PREEMPTIBLE_FROM}, "
                "so KAI treats the pods as preemptible"
            },
        )
        return
    queue_name = obj.labels.get(QUEUE_LABEL) or next(
        (((t.template.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL)
         for t in gpu_templates(obj)), None)
    queue = next((q for q in ctx.of_kind("Queue") if q.name == queue_name), None)
    if queue is None:
        return
    quota = float(quantity(queue.get("spec", "resources", "gpu", "quota", default=0) or 0,
                           "Queue spec.resources.gpu.quota"))
    demand = sum(gpus_per_pod(t.template) * t.replicas for t in gpu_templates(obj))
    if 0 <= quota < demand and value is not None and value < NON_PREEMPTIBLE_FROM:
        yield Hit(
            path, {"what": f"queue {queue.name} guarantees {quota:g} GPUs for {demand} requested"}
        )
    elif 0 <= quota < demand:
        # non-preemptible pods may use only in-quota resources: the rest stays Pending
        yield Hit(
            ("metadata",),
            {
                "what": f"queue {queue.name} guarantees {quota:g} of the {demand} GPUs "
                "it needs; the rest runs over quota where other queues reclaim it, "
                "or (non-preemptible) never starts"
            },
        )


RULE = Rule(
    id="GPU041",
    name="inference-preemptible-by-training",
    severity=Severity.WARNING,
    kinds=("Deployment", "StatefulSet", "LeaderWorkerSet", "LLMInferenceService"),
    family="queues",
    summary="A GPU inference workload on KAI can be preempted or reclaimed by training.",
    message="inference can lose its GPUs to training: {what}",
    why="KAI preempts preemptible pods (priority below 100, e.g. class `train`) within a queue and "
    "reclaims over-quota usage across queues for queues below their fair share. An inference "
    "service there loses replicas whenever a training job arrives, and each comes back only "
    "after a cold start.",
    fix="Run inference with priority class `inference` (125, non-preemptible) in a queue whose GPU "
    "`quota` covers its peak replicas; give training its own queue.",
    references=(
        "layer2-scheduling.md section 2.3 "
        "(priority classes; >= 100 non-preemptible, in-quota only)",
        "layer2-scheduling.md sections 2.5-2.6 (reclaim and preempt)",
    ),
    check=check,
)
