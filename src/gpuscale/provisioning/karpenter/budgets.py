"""Disruption budgets: Karpenter's allowance arithmetic (schedules: gpuscale/cron.py).

Rules (reference layer1-node-provisioning.md 1.8, pkg/apis/v1/nodepool.go):
- `nodes` is an integer or a percentage of the pool's nodes; percentages round **up**.
- allowance = roundup(total x pct) - deleting - notReady, clamped at 0; the minimum over all
  active budgets that apply to the reason wins; no active budget means no limit.
- A scheduled budget is active when the cron fired within the last `duration`
  (a hit at minute m makes it active on [m, m + duration)).
Simulation time 0 is `start_utc`; cron fields are matched on UTC minutes.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from gpuscale.cron import last_hit
from gpuscale.provisioning.karpenter.nodepool import Budget

UNLIMITED = 10**9



def budget_active(budget: Budget, now_s: float, start_utc: datetime) -> bool:
    if budget.schedule is None:
        return True
    now = start_utc + timedelta(seconds=now_s)
    duration = timedelta(seconds=budget.duration_s)
    hit = last_hit(budget.schedule, now, duration)
    return hit is not None and now < hit + duration


def budget_nodes(budget: Budget, total: int) -> int:
    """Nodes a budget allows for a pool of `total` nodes; percentages round up."""
    if budget.nodes.endswith("%"):
        return -(-total * int(budget.nodes[:-1]) // 100)  # integer ceiling, no float error
    return int(budget.nodes)


def allowed_disruptions(budgets: list[Budget], reason: str, *, total: int, deleting: int,
                        not_ready: int, now_s: float, start_utc: datetime) -> int:
    """How many more nodes of one pool may be disrupted for `reason` right now."""
    allowed = UNLIMITED
    for budget in budgets:
        if budget.reasons is not None and reason not in budget.reasons:
            continue
        if not budget_active(budget, now_s, start_utc):
            continue
        allowed = min(allowed, budget_nodes(budget, total) - deleting - not_ready)
    return max(0, allowed)
