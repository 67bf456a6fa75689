"""GPU025: a long-running GPU Job that Karpenter may disrupt mid-run."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.values import integer
from gpuscale.audit.workloads import gpu_templates, gpus_per_pod
from gpuscale.units import gpus_text

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
# Jobs with a deadline under this are short enough to rerun; the threshold is ours, stated in docs.
LONG_RUNNING_S = 3600


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    deadline = obj.get("spec", "activeDeadlineSeconds") if obj.kind == "Job" else \
        obj.get("spec", "jobTemplate", "spec", "activeDeadlineSeconds")
    if deadline is not None and integer(deadline, "activeDeadlineSeconds") < LONG_RUNNING_S:
        return
    for tmpl in gpu_templates(obj):
        annotations = (tmpl.template.get("metadata") or {}).get("annotations") or {}
        if str(annotations.get(DO_NOT_DISRUPT, "")).lower() in ("", "false"):
            yield Hit(
                tmpl.metadata_at(), {"gpus": gpus_text(gpus_per_pod(tmpl.template) * tmpl.replicas)}
            )


RULE = Rule(
    id="GPU025",
    name="gpu-job-can-be-disrupted",
    severity=Severity.WARNING,
    kinds=("Job", "CronJob"),
    family="nodes",
    summary="A long-running GPU Job's pods lack the `karpenter.sh/do-not-disrupt` annotation.",
    message="GPU job pods ({gpus}) have no `karpenter.sh/do-not-disrupt` annotation; "
    "consolidation or drift can evict them mid-run",
    why="Karpenter's consolidation and drift evict pods to replace nodes. For a training or batch "
    "job that is hours of GPU work lost since the last checkpoint, and for a gang it kills "
    "every member. Pods annotated `karpenter.sh/do-not-disrupt` block voluntary disruption of "
    "their node.",
    fix='Annotate the pod template with `karpenter.sh/do-not-disrupt: "true"` (or a duration such '
    'as `"4h"` on Karpenter 1.12+) and set the NodePool\'s `terminationGracePeriod` so '
    "expiry still completes eventually.",
    references=("layer1-node-provisioning.md section 1.8 (do-not-disrupt annotation)",),
    check=check,
)
