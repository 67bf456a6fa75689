"""`plan` of a trace history (issue 27): the whole history simulated, scheduled capacity as
KEDA cron triggers, and a replay that is what ships."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.plan.history import trace_end_s

from .replay_checks import (
    compare_reproduces_plan_md,
    cron_windows,
    plan_out,
    unreachable_plan,
)
from .trace_history import history_input, write_trace


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> tuple[dict, Path]:
    tmp = tmp_path_factory.mktemp("hist")
    trace = write_trace(tmp / "day_a.csv")
    check = write_trace(tmp / "day_b.csv", seed=8)
    # relative trace paths, read from the input's folder (the replay resolves them too)
    return plan_out(tmp, history_input(Path(trace.name), Path(check.name)))


@pytest.mark.slow
def test_the_plan_ships_a_schedule_as_cron_triggers_beside_the_reactive_one(planned):
    plan, out = planned
    role = plan["roles"][0]
    assert role["schedule"], plan["warm_pools"]["chat"]["method"]
    scaled = yaml.safe_load((out / "manifests" / "chat-scaler.yaml").read_text())
    types = [t["type"] for t in scaled["spec"]["triggers"]]
    assert types[0] == "prometheus" and "cron" in types
    cron = next(t for t in scaled["spec"]["triggers"] if t["type"] == "cron")
    assert set(cron["metadata"]) == {"timezone", "start", "end", "desiredReplicas"}
    assert int(cron["metadata"]["desiredReplicas"]) > scaled["spec"]["minReplicaCount"]


@pytest.mark.slow
def test_compare_on_the_replay_reproduces_the_plans_numbers(planned):
    plan, out = planned
    scenario_file = out / "scenarios" / "chat.yaml"
    scenario = yaml.safe_load(scenario_file.read_text())
    strategies = {s["name"]: s for s in scenario["strategies"]}
    assert list(strategies) == ["plan", "baseline-queue-depth", "fixed-best"]
    # each strategy starts from its own minimum, not from the plan's floor and nodes
    assert strategies["baseline-queue-depth"]["initial_replicas"] == 1
    assert strategies["baseline-queue-depth"]["ready_nodes"] == 1
    fixed = strategies["fixed-best"]
    assert fixed["initial_replicas"] == fixed["autoscaler"]["replicas"]
    # the scenario holds the manifests' max replicas and the same cron windows
    scaled = yaml.safe_load((out / "manifests" / "chat-scaler.yaml").read_text())
    keda = strategies["plan"]["autoscaler"]
    assert keda["max_replica_count"] == scaled["spec"]["maxReplicaCount"]
    assert keda["min_replica_count"] == scaled["spec"]["minReplicaCount"]
    behavior = scaled["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert keda["advanced"]["horizontal_pod_autoscaler_config"]["behavior"]["scale_down"][
        "stabilization_window_s"] == behavior["scaleDown"]["stabilizationWindowSeconds"]
    crons, shipped = cron_windows(keda, scaled)
    assert crons == shipped
    compare_reproduces_plan_md(plan, out)


@pytest.mark.slow
def test_per_day_cost_is_simulated_not_an_hour_times_24(planned):
    plan, out = planned
    cost = plan["costs"]["chat"]
    assert cost["simulated_per_day"]
    evidence = plan["warm_pools"]["chat"]["evidence"]
    replay = next(r for r in evidence if r["config"] == "plan")  # the replay's plan run
    # the replay (day b, as recorded) GPU-hours over its length, times 24; not the fit runs
    seconds = trace_end_s(np.loadtxt(out.parent / "day_b.csv", delimiter=",", skiprows=1)[:, 0])
    expected = replay["gpu_hours"] * 86400 / seconds
    assert cost["gpu_hours_per_day"] == round(expected, 2)


def test_an_unreachable_slo_is_one_line_exit_2_with_what_would_reach_it(tmp_path):
    phases = ((1200.0, 0.5), (1200.0, 1.0), (1200.0, 0.5))
    trace = write_trace(tmp_path / "t.csv", phases=phases)
    data = history_input(trace)
    data["cluster"].update(instance_types=["g6.2xlarge", "g6e.2xlarge"], max_gpus=4)
    data["slo"]["itl_p99_s"] = 0.012  # 12 ms a token: faster than an L4 decodes an 8B model
    data["simulation"]["trace_window_s"] = 600
    line, _, out = unreachable_plan(data, tmp_path)
    assert "at most" in line
    text = (out / "plan.md").read_text()
    assert "FP8 weights and KV cache" in text and "the SLO TTFT <=" in text
    assert "cheapest within 0.1 point of the reachable" in text


@pytest.mark.slow
def test_simulate_manifests_on_the_check_trace_is_the_replays_plan_run(planned):
    _, out = planned
    scenario_file = out / "scenarios" / "chat.yaml"
    replay = CliRunner().invoke(cli, ["compare", str(scenario_file), "--format", "json"])
    ours = next(r for r in json.loads(replay.output)["runs"] if r["name"] == "plan")
    shipped = CliRunner().invoke(cli, ["simulate", "--manifests", str(out / "manifests"),
                                       "--trace", str(out.parent / "day_b.csv"),
                                       "--format", "json"])
    assert shipped.exit_code == 0, shipped.output
    theirs = json.loads(shipped.output)["runs"][0]
    # the same run; only the SLO differs (simulate --manifests uses the default SLO)
    for key in ("gpu_hours", "cost_usd", "ttft_s", "tpot_s", "requests", "replicas",
                "scale_events", "nodes"):
        assert theirs[key] == ours[key], key


def test_a_spent_time_budget_skips_the_screening_and_still_plans(tmp_path):
    from gpuscale.plan import make_plan, plan_input_from_dict
    from gpuscale.plan.search import SearchBudget

    trace = write_trace(tmp_path / "t.csv")
    clock = iter(range(0, 10**6, 1000))  # each reading 1,000 s later: spent at once
    budget = SearchBudget(time_budget_s=1.0, clock=lambda: float(next(clock)))
    plan = make_plan(plan_input_from_dict(history_input(trace)), tmp_path, budget=budget)
    evidence = plan.warm_pools["chat"].evidence
    assert not any(r.config.startswith("screen on") for r in evidence)
    assert budget.exhausted and "time budget ended the search" in plan.warm_pools["chat"].method


@pytest.mark.slow
def test_without_check_traffic_the_replay_is_the_whole_history(tmp_path):
    trace = write_trace(tmp_path / "t.csv")
    plan, out = plan_out(tmp_path, history_input(Path(trace.name)))
    pool = plan["warm_pools"]["chat"]
    assert pool["replay_window"].startswith("the whole history")
    assert [r["config"] for r in pool["recheck"]] == ["plan on the held-out window",
                                                      "plan on the held-out busiest stretch"]
    scenario = yaml.safe_load((out / "scenarios" / "chat.yaml").read_text())
    # the trace as given, read as `simulate --manifests DIR/manifests --trace T` reads it
    assert not scenario["workload"].get("start_s") and scenario["workload"].get("end_s") is None
    arrival = np.loadtxt(trace, delimiter=",", skiprows=1)[:, 0]
    last_s = float(arrival[-1] - arrival[0])  # a trace's second 0 is its first request
    assert last_s < scenario["duration_s"] <= trace_end_s(np.array([last_s]))
    replay = CliRunner().invoke(cli, ["compare", str(out / "scenarios" / "chat.yaml"),
                                      "--format", "json"])
    runs = {r["name"]: r for r in json.loads(replay.output)["runs"]}
    for name, row in zip(["plan", "baseline-queue-depth", "fixed-best"], pool["replay"],
                         strict=True):
        assert (runs[name]["gpu_hours"], runs[name]["slo_attainment"]) == (
            row["gpu_hours"], row["slo_attainment"])
