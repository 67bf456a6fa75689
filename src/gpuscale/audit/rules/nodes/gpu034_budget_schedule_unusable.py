"""GPU034: a NodePool budget schedule Karpenter cannot use (refused, or accepted and then
blocking all disruption of the pool)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.cron import schedule_problem


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    budgets = obj.get("spec", "disruption", "budgets")
    if not isinstance(budgets, list):
        return
    for i, budget in enumerate(budgets):
        if not isinstance(budget, dict) or budget.get("schedule") is None:
            continue
        problem = schedule_problem(str(budget["schedule"]))
        if problem:
            yield Hit(("spec", "disruption", "budgets", i, "schedule"), {"problem": problem})


RULE = Rule(
    id="GPU034",
    name="nodepool-budget-schedule-unusable",
    severity=Severity.ERROR,
    kinds=("NodePool",),
    family="nodes",
    summary="A NodePool disruption budget's schedule is one Karpenter cannot parse.",
    message="{problem}",
    why="Karpenter reads `schedule` with robfig/cron (`cron.ParseStandard`, in `Budget.IsActive`). "
    "The API server only checks a loose pattern, so `*/0 * * * *`, a day of week 7 or a field "
    "of 99 are accepted; Karpenter then fails to parse them on every disruption pass and allows "
    "no disruption for the pool at all: no consolidation, no drift replacement, no expiry. A "
    "schedule the pattern refuses (`@fortnightly`, three fields) fails the apply instead.",
    fix="Write a five-field cron in UTC with in-range values (minute 0-59, hour 0-23, day 1-31, "
    "month 1-12, weekday 0-6 or SUN-SAT; `?` is allowed) or one of @yearly, @monthly, "
    "@weekly, @daily, @hourly.",
    references=(
        "layer1-node-provisioning.md section 1.8 (disruption budgets: schedule, UTC cron)",
        "kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go (Budget.IsActive, the schedule pattern)",
        "robfig/cron v3 parser.go (ParseStandard, field bounds)",
    ),
    check=check,
)
