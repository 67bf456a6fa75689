"""`--metrics-out FILE` and `--start-time`: the run's series as OpenMetrics, stamped from the
wall-clock start; bad input is one line with exit code 2, and nothing is overwritten without
--force."""

from __future__ import annotations

import re

import yaml
from click.testing import CliRunner

from gpuscale.cli import cli

from ..sim.scenarios import small_scenario

_STAMP = re.compile(r" (\d+(?:\.\d+)?)$")


def _scenario(tmp_path, strategies=None):
    scenario = small_scenario(duration_s=120.0, strategies=strategies)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario.model_dump(mode="json", exclude_none=True)))
    return path


def _times(text: str) -> list[float]:
    return [float(m.group(1)) for line in text.splitlines()
            if not line.startswith("#") and (m := _STAMP.search(line))]


def test_series_are_stamped_from_the_start_time(tmp_path):
    scenario, out = _scenario(tmp_path), tmp_path / "run.om"
    args = ["simulate", str(scenario), "--strategy", "fixed-1", "--metrics-out", str(out)]
    result = CliRunner().invoke(cli, args + ["--start-time", "2026-06-01T12:00:00+02:00"])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert text.startswith("# TYPE ") and text.endswith("# EOF\n")
    assert "vllm:num_requests_waiting{" in text
    assert "vllm:time_to_first_token_seconds_bucket{" in text
    times = _times(text)
    assert min(times) == 1780308000.0  # 10:00 UTC
    assert max(times) == 1780308000.0 + 120 + 300  # duration + drain


def test_two_strategies_are_told_apart_by_a_run_label(tmp_path):
    out = tmp_path / "run.om"
    result = CliRunner().invoke(cli, ["simulate", str(_scenario(tmp_path)), "--metrics-out",
                                      str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert 'run="fixed-1"' in text and 'run="keda-queue"' in text
    assert text.count("# TYPE vllm:num_requests_waiting gauge") == 1


def test_bad_start_time_is_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["simulate", str(_scenario(tmp_path)), "--start-time",
                                      "2026-06-01 12:00", "--metrics-out", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert "no UTC offset" in result.output and "Traceback" not in result.output


def test_an_existing_file_is_kept_without_force(tmp_path):
    out = tmp_path / "run.om"
    out.write_text("mine")
    args = ["simulate", str(_scenario(tmp_path)), "--strategy", "fixed-1", "--metrics-out",
            str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and out.read_text() == "mine"
    assert CliRunner().invoke(cli, args + ["--force"]).exit_code == 0
    assert out.read_text().endswith("# EOF\n")
