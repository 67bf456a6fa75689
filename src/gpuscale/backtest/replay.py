"""An imported bundle set to replay the history: the rebuilt traffic as its trace, the
history's span and wall-clock start, and the replica count the history starts with.

The trace is written in the generic CSV (`arrival_s,prompt_tokens,output_tokens`), which
`simulate --manifests --trace` reads too (`--emit-trace` keeps it). Trace readers start a
trace at its first request, so the run starts there (`offset_s` after the history's first
step): its start time is moved by as much, and the comparison lines the steps up again.
The run covers the history to its end: the traffic's window (its first to its last rebuilt
request, as `simulate --manifests --trace` counts a trace's), then the rest of the history as
the drain, so GPU-hours read as a run's do (over the traffic's window, the drain apart).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from gpuscale.backtest.history import History
from gpuscale.backtest.traffic import Traffic
from gpuscale.catalog import get_instance_type
from gpuscale.importer.build import replica_bounds
from gpuscale.importer.nodes import nodes_for
from gpuscale.scenario.load import scenario_from_dict


def write_trace(traffic: Traffic, path: Path) -> None:
    """The requests as a generic CSV trace (microsecond arrivals)."""
    rows = np.column_stack([traffic.arrival_s, traffic.prompt_tokens, traffic.output_tokens])
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write("arrival_s,prompt_tokens,output_tokens\n")
        handle.writelines(f"{a:.6f},{int(p)},{int(o)}\n" for a, p, o in rows.tolist())


@dataclass(frozen=True)
class Timing:
    """Where the replay sits in the history."""

    offset_s: float  # the run's t=0, seconds after the history's first step
    duration_s: float  # the traffic's window
    drain_s: float  # the rest of the history
    start: datetime
    step_s: float

    @property
    def lag_steps(self) -> int:
        """Whole steps between the history's first step and the run's."""
        return round(self.offset_s / self.step_s)


def timing(history: History, traffic: Traffic) -> Timing:
    offset_s = float(traffic.arrival_s[0]) if len(traffic) else 0.0
    step_s = history.step_ms / 1000.0
    start = datetime.fromtimestamp(history.start_ms / 1000.0 + offset_s, timezone.utc)
    span_s = float(traffic.arrival_s[-1]) - offset_s if len(traffic) else 0.0
    # As importer.build reads a trace: its span, rounded up, and a second.
    duration_s = max(1.0, math.ceil(span_s) + 1.0)
    covered_s = max(step_s, history.span_s + step_s - offset_s)
    return Timing(offset_s, duration_s, max(0.0, covered_s - duration_s), start, step_s)


def initial_replicas(data: dict, recorded: float) -> int:
    """The history's first replica count, inside the bundle's own bounds."""
    low, high = replica_bounds(data["strategies"][0]["autoscaler"])
    count = round(recorded) if np.isfinite(recorded) else low
    return min(max(count, low), high)


def history_scenario(imported, history: History, traffic: Traffic, at: Timing,
                     recorded_replicas: float) -> None:
    """Set `imported` (importer.build.Imported) to replay `history` (in place)."""
    data = dict(imported.data)
    initial = initial_replicas(data, recorded_replicas)
    cluster = dict(data["cluster"])
    tp = data["model"]["tp"] * data["model"].get("pp", 1)
    cluster["ready_nodes"] = nodes_for(initial, tp, get_instance_type(cluster["instance_type"]))
    cluster["max_nodes"] = max(cluster["max_nodes"], cluster["ready_nodes"])
    data.update(duration_s=at.duration_s, drain_s=at.drain_s, start_time=at.start.isoformat(),
                initial_replicas=initial, cluster=cluster,
                description=f"{data['description'].split(' with trace ')[0]} on the history "
                            f"{history.source}")
    imported.data = data
    imported.scenario = scenario_from_dict(data, source=f"<backtest of {history.source}>")
    imported.defaults = [d for d in imported.defaults if not d.startswith(("workload:",
                                                                           "cluster:"))]
    imported.defaults += [
        f"workload: rebuilt from {history.source} ({len(traffic)} requests over "
        f"{history.span_s:g} s, from {at.start.isoformat()}); the traffic's window "
        f"{at.duration_s:g} s, then the rest of the history ({at.drain_s:g} s) as the drain",
        f"cluster: {initial} replica(s) at the start, as the history's first step "
        f"({cluster['ready_nodes']} {cluster['instance_type']} node(s) ready)"]
