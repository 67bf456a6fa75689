"""A run on a trace that records wall-clock time starts at the trace's first request unless the
scenario gives its own start_time; `resolved.start_time` says which (issue 27)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.scenario import load_scenario
from gpuscale.sim import simulate_scenario

QUEUE = {"query": {"metric": "vllm:num_requests_waiting", "aggregation": "sum"},
         "threshold": 1000}  # never reached: only the schedule moves the fleet


def _azure_trace(path: Path) -> Path:
    # one request every 10 s from 18:20:00 to 18:39:50 on 2023-11-16 (no zone: UTC)
    rows = [f"2023-11-16 18:{20 + k // 6:02d}:{10 * (k % 6):02d}.0000000,300,40"
            for k in range(120)]
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n")
    return path


def _scenario(tmp_path: Path, start: str, end: str, **extra) -> Path:
    trace = _azure_trace(tmp_path / "trace.csv")
    keda = {"kind": "keda", "min_replica_count": 1, "max_replica_count": 4,
            "polling_interval_s": 15,
            "triggers": [QUEUE, {"type": "cron", "timezone": "Etc/UTC", "start": start,
                                 "end": end, "desired_replicas": 3}]}
    data = {"name": "clock", "duration_s": 1200.0, "drain_s": 300.0,
            "model": {"name": "Llama-3.1-8B", "precision": "bf16", "tp": 1},
            "cluster": {"instance_type": "g6e.24xlarge", "ready_nodes": 1, "max_nodes": 2,
                        "node_launch": {"kind": "fixed", "value_s": 60.0}},
            "initial_replicas": 1,
            "workload": {"kind": "trace", "format": "azure", "path": trace.name},
            "strategies": [{"name": "cron", "autoscaler": keda}], **extra}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _run(path: Path) -> dict:
    result = CliRunner().invoke(cli, ["simulate", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["runs"][0]


def test_the_cron_window_follows_the_traces_own_clock(tmp_path):
    # 18:30-18:35 UTC is 600 s into the trace: the window acts there, not at midnight
    path = _scenario(tmp_path, "30 18 * * *", "35 18 * * *")
    run = _run(path)
    assert run["resolved"]["start_time"] == {"value": "2023-11-16T18:20:00+00:00",
                                             "source": "trace"}
    assert run["replicas"]["peak"] == 3
    result, _ = simulate_scenario(load_scenario(path), tmp_path)
    assert result.clock_source == "trace"
    assert result.runs[0].extra["markers"][0] == (600.0, "scale_up", "1->3")


def test_a_given_start_time_wins_and_resolved_says_so(tmp_path):
    path = _scenario(tmp_path, "2 0 * * *", "6 0 * * *", start_time="2026-01-01T00:00:00Z")
    run = _run(path)
    assert run["resolved"]["start_time"] == {"value": "2026-01-01T00:00:00+00:00",
                                             "source": "start_time"}
    assert run["replicas"]["peak"] == 3  # 00:02-00:06 on the given clock


def test_a_window_outside_the_traces_clock_is_one_line_naming_file_and_field(tmp_path):
    path = _scenario(tmp_path, "0 8 * * *", "0 9 * * *")
    result = CliRunner().invoke(cli, ["simulate", str(path)])
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line and str(path) in line and "never opens" in line
    assert "strategies[0].autoscaler.triggers[1]" in line
    assert "2023-11-16T18:20:00+00:00" in line  # the trace's clock, not the default's


def test_the_table_says_when_the_run_is_on_the_traces_clock(tmp_path):
    result = CliRunner().invoke(cli, ["simulate", str(_scenario(tmp_path, "30 18 * * *",
                                                                "35 18 * * *"))])
    assert result.exit_code == 0, result.output
    # the resolved line is wrapped at 100 columns, its continuations indented two spaces
    unwrapped = result.output.replace("\n  ", " ")
    line = next(ln for ln in unwrapped.splitlines() if ln.startswith("resolved "))
    assert "starts 2023-11-16T18:20:00+00:00 (trace)" in line


def test_a_start_time_from_the_command_line_wins_and_is_checked(tmp_path):
    path = _scenario(tmp_path, "30 18 * * *", "35 18 * * *")
    # the window opens on the trace's clock; --start-time moves t = 0 to midnight, where it
    # never opens: refused as the scenario's own start_time would be, not run silently
    result = CliRunner().invoke(cli, ["simulate", str(path), "--start-time",
                                      "2026-01-01T00:00:00Z"])
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line and str(path) in line and "never opens" in line
    moved = CliRunner().invoke(cli, ["simulate", str(path), "--start-time",
                                     "2026-01-01T18:20:00Z", "--format", "json"])
    assert moved.exit_code == 0, moved.output
    assert json.loads(moved.output)["runs"][0]["resolved"]["start_time"]["source"] == \
        "start_time"
