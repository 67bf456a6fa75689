"""`plan --out DIR` writes DIR/scenarios/WORKLOAD.yaml, and `compare` on it reproduces the
plan's evidence: the winner and fixed-best rows are the same simulations."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli

from .helpers import example_dict


def test_plan_writes_a_replayable_scenario_and_compare_reproduces_the_evidence(tmp_path):
    data = example_dict("llama70b-fp8-h100-chat")
    data["simulation"] = {"quiet_before_burst_s": 120, "after_burst_s": 120, "max_candidates": 6}
    source = tmp_path / "input.yaml"
    source.write_text(yaml.safe_dump(data))
    out = tmp_path / "plan"
    runner = CliRunner()
    result = runner.invoke(cli, ["plan", str(source), "--out", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    scenario_file = out / "scenarios" / "chat.yaml"
    scenario = yaml.safe_load(scenario_file.read_text())
    names = [s["name"] for s in scenario["strategies"]]
    assert names == ["plan", "baseline-queue-depth", "fixed-best"]
    baseline = scenario["strategies"][1]["autoscaler"]
    assert baseline["min_replica_count"] == 1
    # issue 27: the baseline and the fixed fleet start from their own minimum, and the
    # baseline has KEDA's own defaults, not the plan's window
    assert scenario["strategies"][1]["initial_replicas"] == 1
    assert "advanced" not in baseline
    fixed_st = scenario["strategies"][2]
    assert fixed_st["initial_replicas"] == fixed_st["autoscaler"]["replicas"]
    assert [t["query"]["metric"] for t in baseline["triggers"]] == ["vllm:num_requests_waiting"]
    replay = runner.invoke(cli, ["compare", str(scenario_file), "--format", "json"])
    assert replay.exit_code == 0, replay.output
    runs = {r["name"]: r for r in json.loads(replay.output)["runs"]}
    evidence = plan["warm_pools"]["chat"]["evidence"]
    fixed = next(r for r in evidence if r["why"].startswith("fixed-best"))
    # an always-on fleet that costs no more than the scaler is the plan (min = max)
    winner = next((r for r in evidence if r["why"].startswith("winner")), fixed)
    assert runs["plan"]["gpu_hours"] == winner["gpu_hours"]
    assert runs["plan"]["slo_attainment"] == winner["slo_attainment"]
    assert runs["fixed-best"]["gpu_hours"] == fixed["gpu_hours"]
    assert runs["fixed-best"]["slo_attainment"] == fixed["slo_attainment"]
    # the plan meets its SLO at no more GPU-hours than the cheapest fixed fleet that does
    assert runs["plan"]["slo_attainment"] >= data["slo"]["goodput_frac"]
    assert runs["plan"]["gpu_hours"] <= runs["fixed-best"]["gpu_hours"]
    # and the one oracle is a bound on every strategy that meets the SLO, the plan included
    for run in runs.values():
        if run["slo_attainment"] >= data["slo"]["goodput_frac"]:
            assert run["oracle_gpu_hours"] <= run["gpu_hours"]


def test_a_trace_winner_is_rechecked_on_held_out_windows_not_on_seeds():
    """Issue 27: re-runs "on other seeds" are bit-identical for a fixed fleet on a trace and
    prove nothing; the winner is re-checked on held-out traffic, worst case reported."""
    from pathlib import Path

    from gpuscale.plan import make_plan, plan_input_from_dict

    from .helpers import SHARED
    trace = SHARED / "traces" / "azure_llm_2023" / "AzureLLMInferenceTrace_conv.csv"
    if not trace.is_file():  # a fresh clone has no ../shared beside it
        pytest.skip(f"{trace} not present (needs ../shared next to the repository)")
    data = yaml.safe_load((Path(__file__).resolve().parents[2] / "examples" / "plans"
                           / "acceptance" / "azure-conv.yaml").read_text())
    w = data["workloads"][0]
    w["traffic"]["path"] = str(trace)
    w["traffic"]["end_s"] = 1800.0
    data["simulation"] = {"trace_window_s": 600, "max_candidates": 4}
    plan = make_plan(plan_input_from_dict(data), Path("."))
    recheck = plan.warm_pools["conv"].recheck
    assert [r.config for r in recheck] == ["plan on the held-out window",
                                           "plan on the held-out busiest stretch"]
    assert not any("seed" in r.config for r in recheck)
    worst = plan.costs["conv"].worst_slo_attainment
    assert worst == min(r.slo_attainment for r in recheck)


@pytest.mark.slow
def test_the_plan_never_costs_more_than_the_fixed_fleet_it_lists(tmp_path):
    """Issue 27: with a 3-hour window the plan chose a setup costing 115.6 GPU-h over the
    111.4 fixed fleet it listed as beaten. A fleet that costs no more is the plan, min = max."""
    from pathlib import Path

    from gpuscale.plan import make_plan, plan_input_from_dict

    data = yaml.safe_load((Path(__file__).resolve().parents[2] / "examples" / "plans"
                           / "acceptance" / "reasoning.yaml").read_text())
    plan = make_plan(plan_input_from_dict(data), tmp_path)
    evidence = plan.warm_pools["reason"].evidence
    fixed = next(r for r in evidence if r.why.startswith("fixed-best"))
    winner = next((r for r in evidence if r.why.startswith("winner")), fixed)
    assert winner.gpu_hours <= fixed.gpu_hours
    role = plan.roles[0]
    if "always-on" in winner.why:
        assert role.min_replicas == role.max_replicas >= fixed.min_replicas
        assert "always-on fleet" in plan.warm_pools["reason"].method
