"""Which gpuscale input a parsed YAML document is, by its keys alone.

Its own module with no imports, so `gpuscale audit` and `diagnose` can point a file given to
the wrong command at the right one without importing the scenario schema (pydantic and every
layer's params) or the simulator.
"""

from __future__ import annotations

from typing import Any

# Keys only a scheduling-only scenario (scenario/schedule.py) has.
_SCHEDULE_ONLY_KEYS = frozenset({"jobs", "replicas", "schedulers", "initial_nodes"})


def input_kind(data: Any) -> str | None:
    """Which gpuscale input a parsed YAML document is, by its top-level keys: "plan" (a plan
    input), "schedule" (a scheduling-only scenario), "scenario" (a serving scenario) or None.
    Each command uses it to point a file given to the wrong command at the right one."""
    if not isinstance(data, dict):
        return None
    keys = set(data)
    if "workloads" in keys and "strategies" not in keys:
        return "plan"
    if "model" not in keys and _SCHEDULE_ONLY_KEYS & keys:
        return "schedule"
    if "workloads" not in keys and keys & {"strategies", "model"}:
        return "scenario"
    return None
