"""GPU031: a gang whose minMember is smaller than the pods the workload needs together."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext, namespace_of
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.rules.scheduling.gangs import (
    KAI_BATCH_MIN_MEMBER,
    pod_group_name,
    pods_needed_together,
    scheduler_name,
)
from gpuscale.audit.values import integer

WORKLOADS = ("Job", "LeaderWorkerSet", "RayCluster", "StatefulSet", "Deployment", "CronJob")


def _pod_group_check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    min_member = obj.get("spec", "minMember")
    if min_member is None:
        return
    for workload in ctx.of_kind(*WORKLOADS):
        if namespace_of(workload) != namespace_of(obj) or pod_group_name(workload) != obj.name:
            continue
        pods, why = pods_needed_together(workload)
        if integer(min_member, "spec.minMember") < pods:
            yield Hit(
                ("spec", "minMember"),
                {
                    "min": integer(min_member, "spec.minMember"),
                    "pods": pods,
                    "who": f"{workload.ref} ({why})",
                },
            )


def _kai_job_check(obj: Manifest) -> Iterator[Hit]:
    # layer2-scheduling.md 2.3: KAI's pod-grouper gives a plain Job minMember 1 unless
    # `kai.scheduler/batch-min-member` says otherwise.
    if scheduler_name(obj) != "kai-scheduler" or pod_group_name(obj):
        return
    pods, why = pods_needed_together(obj)
    if pods <= 1:
        return
    value = obj.annotations.get(KAI_BATCH_MIN_MEMBER)
    min_member = int(value) if value is not None and str(value).isdigit() else 1
    if min_member < pods:
        path = (
            ("metadata", "annotations", KAI_BATCH_MIN_MEMBER)
            if value is not None
            else ("metadata",)
        )
        yield Hit(
            path,
            {
                "min": min_member,
                "pods": pods,
                "who": f"this Job ({why}; KAI's default for a Job is 1)",
            },
        )


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    if obj.kind == "PodGroup":
        yield from _pod_group_check(obj, ctx)
    elif obj.kind == "Job":
        yield from _kai_job_check(obj)


RULE = Rule(
    id="GPU031",
    name="gang-min-member-below-pods-needed",
    severity=Severity.ERROR,
    kinds=("PodGroup", "Job"),
    family="scheduling",
    summary=(
        "A PodGroup's minMember (or KAI's Job default of 1) is smaller than the pods the workload "
        "needs at once."
    ),
    message="minMember is {min} but {who} needs {pods} pods at once: the gang can start partially "
    "and hold GPUs idle",
    why="A gang scheduler only guarantees `minMember` pods together. Below the real group size it "
    "behaves like the default scheduler: some pods bind, the rest stay pending, and the bound "
    "ones hold GPUs while the job cannot run. KAI's pod-grouper gives a plain Job "
    "`minMember: 1` unless `kai.scheduler/batch-min-member` is set.",
    fix="Set `minMember` to the number of pods that must run together (the LWS group size, the "
    "Job's parallelism, head + workers), or annotate the Job with "
    "`kai.scheduler/batch-min-member`.",
    references=(
        "layer2-scheduling.md section 2.3 (PodGroup minMember; pod-grouper defaults)",
        "layer2-scheduling.md section 1.7 (coscheduling minMember)",
    ),
    check=check,
)
