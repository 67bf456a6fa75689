"""The plan's time of day follows a trace's own wall clock (issue 27: "arrival 0 of a trace is
00:00 UTC unless the trace has wall-clock times or the input gives start_time")."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.plan import plan_input_from_dict
from gpuscale.plan.clock import trace_clock

from .replay_checks import plan_out
from .trace_history import PHASES, history_input, write_azure_trace, write_trace

FIRST = datetime(2023, 11, 16, 18, 0, 2, 364330, tzinfo=timezone.utc)  # seed 7's first request


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> tuple[dict, Path]:
    tmp = tmp_path_factory.mktemp("clock")
    # quiet 18:00-19:00, busy 19:00-20:00, quiet 20:00-21:00 UTC, as Azure writes its times
    trace = write_azure_trace(tmp / "evening.csv", "2023-11-16T18:00:00")
    return plan_out(tmp, history_input(Path(trace.name), fmt="azure"))


def _hours(cron: str) -> int:
    return int(cron.split()[1])


@pytest.mark.slow
def test_the_cron_windows_are_at_the_traces_hours_not_midnights(planned):
    plan, out = planned
    windows = plan["roles"][0]["schedule"]
    assert windows, plan["warm_pools"]["chat"]["method"]
    # the busy hour is 19:00-20:00 UTC; its windows open a reaction time ahead of it, never
    # in the small hours where the default clock would put them (01:00-02:00)
    assert all(17 <= _hours(w["start"]) <= 20 for w in windows), windows
    scaled = yaml.safe_load((out / "manifests" / "chat-scaler.yaml").read_text())
    shipped = [t["metadata"]["start"] for t in scaled["spec"]["triggers"] if t["type"] == "cron"]
    assert shipped == [w["start"] for w in windows]


@pytest.mark.slow
def test_plan_md_and_the_replay_say_which_clock(planned):
    plan, out = planned
    decision = next(d for d in plan["decisions"] if d["subject"] == "chat: time of day")
    assert decision["choice"] == "second 0 of the traffic is 2023-11-16 18:00:02 UTC"
    assert "the trace's first request" in decision["reason"]
    assert "time of day" in (out / "plan.md").read_text()
    replay = yaml.safe_load((out / "scenarios" / "chat.yaml").read_text())
    assert datetime.fromisoformat(replay["start_time"]) == FIRST
    result = CliRunner().invoke(cli, ["compare", str(out / "scenarios" / "chat.yaml"),
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.output)["runs"][0]
    assert run["resolved"]["start_time"]["source"] == "trace"


def test_a_given_start_time_wins_over_the_traces(tmp_path):
    trace = write_azure_trace(tmp_path / "t.csv", "2023-11-16T18:00:00", phases=PHASES[:1])
    data = history_input(trace, fmt="azure")
    given = plan_input_from_dict(dict(data, start_time="2026-03-01T06:00:00Z"))
    clock = trace_clock(given, given.workloads[0], FIRST, tmp_path)
    assert clock.plan.start_time == datetime(2026, 3, 1, 6, tzinfo=timezone.utc)
    assert "given in the input" in clock.decision.reason
    taken = plan_input_from_dict(data)
    clock = trace_clock(taken, taken.workloads[0], FIRST, tmp_path)
    assert clock.plan.start_time == FIRST and clock.plan.day_offset_s == pytest.approx(
        18 * 3600 + 2.36433)


def test_a_trace_without_wall_clock_keeps_midnight_and_says_why(tmp_path):
    trace = write_trace(tmp_path / "t.csv", phases=PHASES[:1])
    plan = plan_input_from_dict(history_input(trace))
    clock = trace_clock(plan, plan.workloads[0], None, tmp_path)
    assert clock.plan.day_offset_s == 0.0
    assert "00:00 UTC, the default" in clock.decision.reason


def test_check_traffic_runs_on_its_own_clock(tmp_path):
    fit = write_azure_trace(tmp_path / "a.csv", "2023-11-16T18:00:00", phases=PHASES[:1])
    check = write_azure_trace(tmp_path / "b.csv", "2023-11-17T09:30:00", phases=PHASES[:1])
    plan = plan_input_from_dict(history_input(fit, check, fmt="azure"))
    clock = trace_clock(plan, plan.workloads[0], FIRST, tmp_path)
    assert clock.check_start is not None
    assert (clock.check_start.hour, clock.check_start.minute) == (9, 30)
    assert "check_traffic on its own first request" in clock.decision.reason
