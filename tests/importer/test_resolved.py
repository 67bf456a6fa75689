"""`resolved` on scenario-file runs too: exact keys, values from the scenario, one table line."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.importer.resolved import resolved_for
from gpuscale.scenario.load import scenario_from_dict

from ..cli.test_simulate_cli import _scenario_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_scenario_runs_carry_resolved_in_json_and_table(tmp_path):
    path = _scenario_file(tmp_path)
    data = json.loads(CliRunner().invoke(cli, ["compare", str(path), "--format", "json"]).output)
    for run in data["runs"]:
        r = run["resolved"]
        assert set(r["model"]) >= {"name", "tp", "precision"}
        assert set(r["autoscaler"]) >= {"kind", "min_replicas", "max_replicas"}
        assert set(r["nodes"]) >= {"kind", "consolidation_policy"}
    table = CliRunner().invoke(cli, ["compare", str(path)]).output
    assert sum(ln.startswith("resolved ") for ln in table.splitlines()) == len(data["runs"])


def test_values_come_from_each_strategy():
    data = yaml.safe_load((EXAMPLES / "consolidation-trap" / "scenario.yaml").read_text())
    scenario = scenario_from_dict(data)
    first, second = (resolved_for(scenario, s) for s in scenario.strategies)
    assert first["nodes"]["consolidation_policy"] == "WhenEmptyOrUnderutilized"
    assert second["nodes"]["consolidation_policy"] == "WhenEmpty"
    assert first["autoscaler"] == {"kind": "keda", "min_replicas": 2, "max_replicas": 16}
    assert first["model"] == {"name": "Llama-3.1-8B", "tp": 1, "precision": "bf16",
                              "kv_precision": "bf16", "ep": 1, "attention_dp": 1,
                              "nodes_per_replica": 1}
    assert first["gpu"]["calibrated"] is False  # L40S factors are assumed (gpus.yaml)


def test_h100_has_calibration_points_and_simple_pool_has_no_policy():
    data = yaml.safe_load((EXAMPLES / "pd-split" / "scenario.yaml").read_text())
    scenario = scenario_from_dict(data)
    r = resolved_for(scenario, scenario.strategies[0])
    assert r["gpu"]["calibrated"] is True
    assert r["nodes"] == {"kind": "pool", "consolidation_policy": None,
                          "max_nodes": scenario.cluster.max_nodes}
