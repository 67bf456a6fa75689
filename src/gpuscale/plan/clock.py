"""The wall clock of a trace workload's second 0, which the plan's time of day follows.

The input's `start_time` when it gives one; else the trace's own first request where the
trace records wall-clock time (Azure's TIMESTAMP, BurstGPT's seconds from midnight:
`Requests.start_time`); else 00:00 UTC (`units.DEFAULT_START_TIME`). The daily profile, the
learned KEDA cron windows and every simulated cron trigger read it, so a trace recorded from
18:15 gets its evening windows at 18:15, not at midnight. `check_traffic` runs on its own
clock the same way (another day of the service has its own first request).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from gpuscale.plan.history import read_history
from gpuscale.plan.inputs import PlanInput, WorkloadInput
from gpuscale.plan.model import Decision
from gpuscale.workloads.replay import TraceWorkload


@dataclass(frozen=True)
class TraceClock:
    plan: PlanInput  # start_time: the traffic's second 0 on the wall clock
    check_start: datetime | None  # check_traffic's own second 0, when it records one
    decision: Decision  # which clock, and why: plan.md's "time of day"


def _check_start(plan: PlanInput, w: WorkloadInput, base_dir: Path, source: str
                 ) -> datetime | None:
    check = w.check_traffic
    if "start_time" in plan.model_fields_set or not isinstance(check, TraceWorkload) \
            or not check.records_wall_clock:
        return None
    return read_history(check, base_dir, "check_traffic", source).start_time


def trace_clock(plan: PlanInput, w: WorkloadInput, trace_start: datetime | None,
                base_dir: Path, source: str = "<plan input>") -> TraceClock:
    """`trace_start`: the wall-clock instant of the traffic's first request, when its trace
    records one (`TrafficStats.start_time`)."""
    fmt = getattr(w.traffic, "format", "trace")
    if "start_time" in plan.model_fields_set:
        start, why = plan.start_time, "start_time given in the input (it wins over the trace's)"
    elif trace_start is not None:
        start = trace_start
        why = (f"the trace's first request: its {fmt} timestamps are wall-clock time (no zone "
               "in the file: read as UTC)" + ("; BurstGPT records the time of day, not the "
                                             "date" if fmt == "burstgpt" else ""))
    else:
        start = plan.start_time
        why = (f"00:00 UTC, the default: a {fmt} trace's times count from its first request "
               "and carry no wall clock; give start_time to set it")
    check_start = _check_start(plan, w, base_dir, source)
    if check_start is not None:
        why += f"; check_traffic on its own first request, {_utc(check_start)}"
    decision = Decision("warm-pool", f"{w.name}: time of day",
                        f"second 0 of the traffic is {_utc(start)}", why + ". The daily "
                        "profile, the cron windows and their simulation follow this clock")
    return TraceClock(plan.model_copy(update={"start_time": start}), check_start, decision)


def _utc(t: datetime) -> str:
    return f"{t.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"
