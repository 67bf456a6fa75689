"""KAI Scheduler objects: the queue hierarchy (`scheduling.run.ai/v2` Queue) and the Topology
(`kai.scheduler/v1alpha1`) that gang placements are constrained by.

Units (layer2-scheduling.md 2.2): GPU in devices, -1 = unlimited; a limit left unset means
0 (nothing allowed), so every resource gets an explicit limit. CPU and memory are not
rationed by the plan (quota and limit -1).
"""

from __future__ import annotations

from typing import Any

from gpuscale.plan.model import QueuePlan

UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}


def render_queue(queue: QueuePlan) -> dict[str, Any]:
    spec: dict[str, Any] = {"displayName": queue.name}
    if queue.parent:
        spec["parentQueue"] = queue.parent
    spec["priority"] = queue.priority
    spec["resources"] = {
        "gpu": {"quota": queue.gpu_quota, "limit": queue.gpu_limit,
                "overQuotaWeight": queue.over_quota_weight},
        "cpu": dict(UNLIMITED),
        "memory": dict(UNLIMITED),
    }
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": queue.name},
            "spec": spec}


def render_topology(name: str, levels: tuple[str, ...]) -> dict[str, Any]:
    """Levels coarse to fine; hostname last (the CRD requires it there when present)."""
    return {"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology", "metadata": {"name": name},
            "spec": {"levels": [{"nodeLabel": label} for label in levels]}}
