from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from gpuscale.cli import cli

from ..sim.scenarios import small_scenario


def _scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(small_scenario(duration_s=120.0).model_dump(mode="json")))
    return path


def test_simulate_json_has_the_public_keys(tmp_path):
    result = CliRunner().invoke(cli, ["simulate", str(_scenario_file(tmp_path)), "--format",
                                      "json", "--strategy", "fixed-1"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) >= {"scenario", "seed", "runs"}
    run = data["runs"][0]
    assert run["name"] == "fixed-1" and len(data["runs"]) == 1
    for key in ("requests", "ttft_s", "tpot_s", "slo_attainment", "goodput_rps", "replicas",
                "scale_events", "gpu_hours", "cost_usd", "idle_gpu_minutes", "wall_s"):
        assert key in run
    assert set(run["requests"]) == {"total", "completed", "dropped", "in_flight"}
    assert set(run["ttft_s"]) == {"p50", "p90", "p99"}
    assert set(run["replicas"]) == {"initial", "peak", "mean"}


def test_out_file_is_never_overwritten_without_force(tmp_path):
    scenario = _scenario_file(tmp_path)
    out = tmp_path / "result.json"
    out.write_text("precious")
    result = CliRunner().invoke(cli, ["compare", str(scenario), "--out", str(out)])
    assert result.exit_code == 2 and "--force" in result.output
    assert out.read_text() == "precious"
    result = CliRunner().invoke(cli, ["compare", str(scenario), "--out", str(out), "--force"])
    assert result.exit_code == 0 and json.loads(out.read_text())["scenario"] == "small"


def test_seed_override_changes_the_result(tmp_path):
    scenario = _scenario_file(tmp_path)
    runs = []
    for seed in ("1", "2"):
        result = CliRunner().invoke(cli, ["simulate", str(scenario), "--format", "json",
                                          "--seed", seed, "--strategy", "fixed-1"])
        runs.append(json.loads(result.output))
    assert runs[0]["seed"] == 1 and runs[1]["seed"] == 2
    assert runs[0]["runs"][0]["requests"] != runs[1]["runs"][0]["requests"]


def test_unknown_strategy_lists_known_ones(tmp_path):
    result = CliRunner().invoke(cli, ["simulate", str(_scenario_file(tmp_path)), "--strategy",
                                      "nope"])
    assert result.exit_code == 2 and "known: fixed-1, keda-queue" in result.output
