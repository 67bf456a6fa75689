"""Issue 27's bad inputs, through the command line: one line naming the file and the field,
exit 2, no traceback. (An unreachable SLO: tests/plan/test_unreachable_shapes.py and
test_history_plan.py; a cron schedule outside the traffic: tests/sim/test_cron_schedule.py,
tests/sim/test_trace_clock_run.py and tests/importer/test_trace_clock_import.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli

from .trace_history import history_input, write_trace


def _refused(tmp_path: Path, data: dict, *expected: str) -> str:
    source = tmp_path / "input.yaml"
    source.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(cli, ["plan", str(source)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    line = result.output.strip()
    assert "\n" not in line and "Traceback" not in line, line
    assert line.startswith(f"gpuscale: error: {source}: "), line
    for text in expected:
        assert text in line, line
    return line


def test_a_history_shorter_than_the_held_out_part(tmp_path):
    trace = write_trace(tmp_path / "t.csv", phases=((1200.0, 1.0),))
    data = history_input(trace)
    data["simulation"]["check_s"] = 5000
    _refused(tmp_path, data, "simulation.check_s:", "the history spans 1200 s",
             "not longer than the held-out part")


@pytest.mark.parametrize("value", ["yesterday", "2026-13-01T00:00:00Z", "2026-01-01T00:00:00"])
def test_a_start_time_that_does_not_parse(tmp_path, value):
    trace = write_trace(tmp_path / "t.csv", phases=((1200.0, 1.0),))
    data = dict(history_input(trace), start_time=value)
    _refused(tmp_path, data, "start_time:", "expected an RFC 3339 date and time with its zone "
             "offset, e.g. 2026-01-01T00:00:00Z", repr(value))


def test_a_scenarios_start_time_that_does_not_parse(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({
        "name": "s", "start_time": "noon", "duration_s": 60,
        "model": {"name": "Llama-3.1-8B"}, "cluster": {"instance_type": "g6.2xlarge"},
        "workload": {"kind": "poisson", "rate_per_s": 1, "duration_s": 60,
                     "prompt_tokens": {"kind": "fixed", "value": 100},
                     "output_tokens": {"kind": "fixed", "value": 10}},
        "strategies": [{"name": "fixed", "autoscaler": {"kind": "fixed", "replicas": 1}}]}))
    result = CliRunner().invoke(cli, ["simulate", str(path)])
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line and f"{path}: start_time: expected an RFC 3339" in line


def test_a_check_trace_with_no_arrivals(tmp_path):
    trace = write_trace(tmp_path / "t.csv", phases=((1200.0, 1.0),))
    empty = tmp_path / "empty.csv"
    empty.write_text("arrival_s,prompt_tokens,output_tokens\n")
    _refused(tmp_path, history_input(trace, empty), "check_traffic:", str(empty),
             "the trace holds no request")


def test_a_fit_window_with_no_arrivals(tmp_path):
    # one request at 0 s, the rest at 50-60 min: from start_s = 1 the fit window (the first
    # 80 %) is silent, all traffic in the held-out part
    trace = tmp_path / "late.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,100,10\n"
                     + "".join(f"{3000 + 6 * k},100,10\n" for k in range(100)))
    data = history_input(trace)
    data["workloads"][0]["traffic"]["start_s"] = 1.0
    _refused(tmp_path, data, "traffic:", "the fit window", "holds no request")
