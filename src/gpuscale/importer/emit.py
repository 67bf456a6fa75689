"""The scenario `--emit-scenario` writes: the imported mapping, made to stay true when edited.

- `initial_replicas_at_floor: true`: the bundle's replicas are its autoscaler's floor (the
  importer starts at max(spec.replicas, floor)); a sweep or an edit that raises the floor
  starts there too, with the nodes it needs ready (scenario/start.py), instead of keeping the
  emitted `initial_replicas` and `ready_nodes` and scaling up at t=0.
- Every Karpenter NodePool shows its consolidation policy and `consolidateAfter`, the
  defaults included (WhenEmptyOrUnderutilized, 0s: karpenter.sh NodePool CRD): the setting
  decides when GPU nodes go away, so the file says it even when the manifest did not.
"""

from __future__ import annotations

import copy

from gpuscale.provisioning.karpenter.nodepool import Disruption


def _show_consolidation(pool: dict) -> None:
    given = pool.get("disruption") or {}
    effective = Disruption.model_validate(given)
    shown = {"consolidation_policy": effective.consolidation_policy,
             "consolidate_after": effective.consolidate_after}
    pool["disruption"] = {**shown, **{k: v for k, v in given.items() if k not in shown}}


def emitted_data(data: dict) -> dict:
    """A copy of the imported scenario mapping as `--emit-scenario` writes it."""
    out = copy.deepcopy(data)
    out["initial_replicas_at_floor"] = True
    providers = [s.get("nodes") for s in out.get("strategies", [])] + [out.get("nodes")]
    for provider in providers:
        if isinstance(provider, dict) and provider.get("kind") == "karpenter":
            for pool in provider.get("node_pools") or []:
                if isinstance(pool, dict):
                    _show_consolidation(pool)
    return out
