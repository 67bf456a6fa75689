"""The wall clock of a run's t = 0, and where it came from.

The scenario's `start_time` when given; else the first request of a trace that records its
own wall clock (Azure's TIMESTAMP, BurstGPT's seconds from midnight: `Requests.start_time`);
else `units.DEFAULT_START_TIME`, 00:00 UTC. A trace's clock is known only once the trace is
read, so the scenario's check that every KEDA cron window opens while the traffic runs is
made here for such a run (the schema makes it for every other).
"""

from __future__ import annotations

from datetime import datetime

from gpuscale.errors import UserInputError
from gpuscale.scenario.models import Scenario

# `resolved.start_time.source` of a run: the scenario's own start_time, the trace's first
# request, or the default (a generated workload, or a trace with relative times only)
GIVEN, TRACE, DEFAULT = "start_time", "trace", "default"


def on_trace_clock(scenario: Scenario, trace_start: datetime | None, *,
                   source: str = "<scenario>") -> tuple[Scenario, str]:
    """(the scenario as it runs, which clock it runs on). A given start_time wins. Its cron
    windows are checked on that clock (again, for one checked at load: a command line's
    --start-time is set past the schema)."""
    timed, clock = _clocked(scenario, trace_start)
    error = timed.closed_cron_window()
    if error is not None:
        if clock == TRACE:
            error = error.replace("start_time + duration_s",
                                  "the trace's first request + duration_s")
        raise UserInputError(error, source=source)
    return timed, clock


def _clocked(scenario: Scenario, trace_start: datetime | None) -> tuple[Scenario, str]:
    if trace_start is not None and scenario.start_time == trace_start:
        return scenario, TRACE  # given as the trace's own (as the importer does)
    if not scenario.takes_trace_clock or trace_start is None:
        return scenario, GIVEN if "start_time" in scenario.model_fields_set else DEFAULT
    return scenario.model_copy(update={"start_time": trace_start}), TRACE
