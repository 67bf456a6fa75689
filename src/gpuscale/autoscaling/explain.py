"""Layer 3's entries in the decision log (core/decisions.py): one per controller sync.

Every sync is a decision, holding included ("why did it not scale at 10:42?"): the record
has the replicas the controller saw, what it did, and its own `explain` (HPA: condition,
per-metric usage ratio and the tolerance band; KEDA: each trigger against its activation
threshold).
"""

from __future__ import annotations

from gpuscale.autoscaling.base import AutoscalerView, ReplicaAutoscaler
from gpuscale.core.decisions import DecisionLog


def log_replica_decision(log: DecisionLog, controller: ReplicaAutoscaler, view: AutoscalerView,
                         state: object, desired: int | None, role: str | None) -> None:
    """One layer-3 decision: what the controller saw and why it moved (or held)."""
    current = view.current_replicas
    explained = dict(controller.explain(view, state))
    reason = str(explained.pop("reason", ""))
    moved = desired is not None and desired != current
    log.record(view.now_s, "replicas", controller.name,
               f"scale {current}->{desired}" if moved else "hold", reason,
               role=role or "all", current_replicas=current, **explained)
