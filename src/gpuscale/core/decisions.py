"""The opt-in decision log: every controller decision with its time, inputs and reason.

Users ask "why did it scale at 10:42?"; the controllers already compute the answer, so each
one that decides (the HPA and KEDA loops, Karpenter's disruption, KAI's allocation) records it
here when a log is attached to the run's `Simulation` (`sim.decisions`). Off by default: the
one cost when off is `if sim.decisions is not None` where a decision is made (never per
event). Records are plain dicts, written one JSON object per line by the CLI
(`--decisions FILE`); docs/decision-log.md lists the fields per controller.
"""

from __future__ import annotations

import json
import math
from typing import Any


def _plain(value: Any) -> Any:
    """JSON-safe copy: tuples to lists, non-finite floats to strings ("inf")."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


class DecisionLog:
    """Decisions of one run, in the order they were made (which is time order)."""

    def __init__(self, run: str = "") -> None:
        self.run = run  # the strategy name, so one file can hold several runs
        self.records: list[dict[str, Any]] = []

    def record(self, time_s: float, layer: str, controller: str, decision: str, reason: str,
               **inputs: Any) -> None:
        """`layer`: "replicas", "nodes" or "scheduling"; `decision`: what it did (e.g.
        "scale 2->4", "defer"); `reason`: why, in the controller's own terms; `inputs`: the
        numbers it decided on."""
        self.records.append({"run": self.run, "time_s": time_s, "layer": layer,
                             "controller": controller, "decision": decision,
                             "reason": reason, "inputs": _plain(inputs)})

    def lines(self) -> list[str]:
        return [json.dumps(r, sort_keys=False) for r in self.records]
