"""GPU024: a GPU NodePool's disruption budget lets every node go at the same time."""

from __future__ import annotations

import math
from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.nodepools import is_gpu_nodepool, max_nodes
from gpuscale.audit.values import number


def _allowed(value, total: int | None) -> float | None:
    """Nodes a budget entry lets go at once (percentages round up); None if unknowable."""
    text = str(value).strip()
    if text.endswith("%"):
        pct = number(text[:-1], "spec.disruption.budgets[].nodes")
        if pct >= 100:
            return math.inf
        return math.ceil(total * pct / 100) if total else None
    return number(text, "spec.disruption.budgets[].nodes")


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    if not is_gpu_nodepool(obj):
        return
    budgets = obj.get("spec", "disruption", "budgets")
    if not isinstance(budgets, list):
        return  # default [{nodes: "10%"}] (layer1 1.8)
    total = max_nodes(obj)
    # The minimum across budgets wins; only always-on budgets that cover every reason bound it.
    bounds = []
    for i, budget in enumerate(budgets):
        if not isinstance(budget, dict) or budget.get("schedule") or budget.get("reasons"):
            continue
        allowed = _allowed(budget.get("nodes", "10%"), total)
        if allowed is not None:
            bounds.append((allowed, i, budget.get("nodes")))
    if not bounds:
        return
    allowed, index, raw = min(bounds)
    if allowed == math.inf or (total is not None and total > 1 and allowed >= total):
        of = f"all {total}" if total else "all"
        yield Hit(("spec", "disruption", "budgets", index, "nodes"), {"raw": raw, "of": of})


RULE = Rule(
    id="GPU024",
    name="gpu-nodepool-budget-allows-all-nodes",
    severity=Severity.ERROR,
    kinds=("NodePool",),
    family="nodes",
    summary="A GPU NodePool's disruption budget allows all of its nodes to be disrupted at once.",
    message="disruption budget nodes: {raw} lets Karpenter disrupt {of} GPU nodes at the same time",
    why="Budgets are what stops consolidation and drift from taking a whole pool down together. "
    "With `nodes: 100%` (or a count at the pool's size) every GPU replica can be evicted in one "
    "pass, and all of them pay a model reload before serving again.",
    fix='Keep the default (`10%`, rounded up) or a small absolute number such as `nodes: "1"`, '
    "and use scheduled budgets (`schedule` + `duration`) to allow more in a maintenance window.",
    references=(
        "layer1-node-provisioning.md section 1.8 (disruption budgets, default 10%, rounding up)",
    ),
    check=check,
)
