"""GPU040: a KAI queue whose resource `limit` is 0 or unset, which forbids that resource."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.values import number

RESOURCES = ("gpu", "cpu", "memory")


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    if not obj.api_version.startswith("scheduling.run.ai/"):
        return  # Volcano also has a Queue kind, with other semantics
    resources = obj.get("spec", "resources")
    if not isinstance(resources, dict):
        yield Hit(
            ("spec",), {"resource": "gpu, cpu and memory", "how": "unset (no spec.resources)"}
        )
        return
    for name in RESOURCES:
        block = resources.get(name)
        limit = block.get("limit") if isinstance(block, dict) else None
        if limit is None:
            path = ("spec", "resources", name) if isinstance(block, dict) else ("spec", "resources")
            yield Hit(path, {"resource": name, "how": "unset"})
        elif number(limit, f"spec.resources.{name}.limit") == 0:
            yield Hit(("spec", "resources", name, "limit"), {"resource": name, "how": "0"})


RULE = Rule(
    id="GPU040",
    name="kai-queue-limit-forbids-resource",
    severity=Severity.ERROR,
    kinds=("Queue",),
    family="queues",
    summary="A KAI Queue's resource limit is 0 or unset, which KAI reads as 'none allowed'.",
    message="{resource} limit is {how}: KAI caps this queue at 0 {resource}, so its jobs never "
    "start (use -1 for no cap)",
    why="In KAI a queue's `limit` is a hard cap checked as allocated + requested <= limit unless "
    "it is -1. An omitted limit counts as 0, not as unlimited, so a queue written with only a "
    "`quota` silently admits nothing of that resource and its pods stay Pending.",
    fix="Set `limit: -1` for no cap, or the real cap, for gpu, cpu and memory.",
    references=(
        "layer2-scheduling.md section 2.2 (quota/limit special values; limit 0/unset = hard cap 0)",
        "kai-scheduler/KAI-Scheduler "
        "pkg/scheduler/plugins/proportion/capacity_policy/max_allowed_check.go",
    ),
    check=check,
)
