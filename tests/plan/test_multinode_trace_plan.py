"""`plan` of a trace whose replica spans nodes (issue 27): a LeaderWorkerSet group of two
nodes is planned on the whole history like a replica inside one node (scheduled capacity as
KEDA cron triggers on the LeaderWorkerSet, its cold start as simulated), and its replay is
what ships. Llama-3.1-70B in FP8 on 1 x L40S nodes (g6e.2xlarge): TP1 x PP2 over two nodes,
a small and fast case of the same path DeepSeek-V3 on H100 takes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from gpuscale.catalog import get_model
from gpuscale.catalog.specs import Precision
from gpuscale.cli import cli
from gpuscale.plan import plan_input_from_dict
from gpuscale.plan.hardware import hardware_options
from gpuscale.plan.scaler import scaler_choice
from gpuscale.plan.sizing import traffic_stats
from gpuscale.plan.sizing_search import _max_replicas, _setup
from gpuscale.plan.trace_configs import cold_start_options
from gpuscale.plan.warm_pool import candidate_scenario_dict
from gpuscale.scenario import scenario_from_dict
from gpuscale.serving.cold_start import cold_start_components
from gpuscale.sim.replica_setup import replica_hardware
from gpuscale.units import GIB

from .replay_checks import (
    REPLAY_STRATEGIES,
    compare_reproduces_plan_md,
    cron_windows,
    plan_out,
    unreachable_plan,
)
from .trace_history import history_input, write_trace

# a compressed day: quiet, a busy stretch two replicas serve, quiet again (~10k requests)
PHASES = ((2400.0, 0.6), (1800.0, 4.0), (2400.0, 0.6))


def multinode_input(trace: Path) -> dict:
    data = history_input(trace)
    data["workloads"][0].update(model="Llama-3.1-70B", precision="fp8")
    data["cluster"].update(instance_types=["g6e.2xlarge"], max_gpus=16)
    data["simulation"]["trace_window_s"] = 600
    return data


def test_the_cold_starts_searched_are_the_ones_the_group_is_simulated_with(tmp_path):
    """Each configuration's cold start (the image pulled, or read from a pre-pulled snapshot)
    is the median the simulator draws for the whole group: every node of it starts at once
    and streams the checkpoint from its own volume; engine init is all the group's GPUs'
    (it was TP1's, the stage's, so the lead time and the scale-down window were off)."""
    trace = write_trace(tmp_path / "t.csv", phases=((600.0, 0.5),))
    plan = plan_input_from_dict(multinode_input(trace))
    w = plan.workloads[0]
    stats = traffic_stats(w, tmp_path, plan.simulation.trace_window_s)
    opt = hardware_options(plan, w, stats, plan.slo)[0]
    assert (opt.one_node, opt.nodes_per_replica, opt.par.tp, opt.par.pp) == (False, 2, 1, 2)
    scaler = scaler_choice(plan, w, opt, plan.slo, [])
    setup = _setup(plan, opt, scaler, _max_replicas(plan, w, stats, opt), w, plan.slo)
    options = {c.name: c for c in cold_start_options(plan, w, opt)}
    assert set(options) == {"pulled", "prepulled"}
    for option in options.values():
        shipped = dict(setup.__dict__, image_pull_s=option.image_pull_s)
        data = candidate_scenario_dict(plan, w, stats, type(setup)(**shipped), 1)
        scenario = scenario_from_dict(data, source="<test>")
        hw = replica_hardware(scenario)
        assert hw.layout.nodes == 2
        medians = cold_start_components(hw, scenario.cold_start, None, pull_image=True)
        assert np.isclose(sum(medians.values()), option.cold_start_s), (option, medians)
    assert np.isclose(scaler.cold_start_s, options["pulled"].cold_start_s, atol=0.05)


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> tuple[dict, Path, Path]:
    tmp = tmp_path_factory.mktemp("mn")
    trace = write_trace(tmp / "t.csv", phases=PHASES)
    plan, out = plan_out(tmp, multinode_input(Path(trace.name)))
    return plan, out, trace


def test_a_trace_of_replicas_spanning_nodes_is_planned_on_its_whole_history(planned):
    """Was: sized on the trace's first `trace_window_s` (10 min of quiet traffic here) as an
    always-on fleet, the busy hour never simulated, nothing replayed."""
    plan, out, _ = planned
    role = plan["roles"][0]
    assert (role["pods_per_replica"], role["gang"]) == (2, True)
    pool = plan["warm_pools"]["chat"]
    assert pool["method"].startswith("the whole history simulated: fit on"), pool["method"]
    assert pool["replay_window"].startswith("the whole history")
    assert plan["costs"]["chat"]["simulated_per_day"]
    # the quiet hours run on one group, the busy one on two: a schedule, as cron triggers on
    # the LeaderWorkerSet beside the reactive trigger
    assert role["schedule"] and role["min_replicas"] == 1 < role["max_replicas"]
    scaled = yaml.safe_load((out / "manifests" / "chat-scaler.yaml").read_text())
    assert scaled["spec"]["scaleTargetRef"]["kind"] == "LeaderWorkerSet"
    assert scaled["spec"]["triggers"][0]["type"] == "prometheus"
    assert any(t["type"] == "cron" for t in scaled["spec"]["triggers"])
    lws = yaml.safe_load_all((out / "manifests" / "chat.yaml").read_text())
    assert next(o for o in lws if o["kind"] == "LeaderWorkerSet")["spec"][
        "leaderWorkerTemplate"]["size"] == 2
    # every node of the group streams the whole checkpoint from its own volume: the volume
    # (restored from the pre-pulled image's snapshot when the search chose it) holds it
    node_class = yaml.safe_load((out / "manifests" / "ec2nodeclass.yaml").read_text())
    volume = next(d["ebs"] for d in node_class["spec"]["blockDeviceMappings"]
                  if d.get("rootVolume"))
    weights = get_model("Llama-3.1-70B").weight_bytes(Precision.BF16)
    assert int(volume["volumeSize"].removesuffix("Gi")) * GIB > weights
    assert ("snapshotID" in volume) == role["prepulled_image"]


def test_the_replay_of_a_multinode_plan_is_what_ships(planned):
    """Each strategy starts with whole groups of nodes (the baseline's 1 replica is 2 nodes,
    the fixed fleet's n are 2n), the scenario holds the manifests' cron windows, compare
    prints plan.md's numbers, and the plan meets its SLO there as it did in the search."""
    plan, out, _ = planned
    scenario = yaml.safe_load((out / "scenarios" / "chat.yaml").read_text())
    strategies = {s["name"]: s for s in scenario["strategies"]}
    assert tuple(strategies) == REPLAY_STRATEGIES
    for name in ("baseline-queue-depth", "fixed-best"):
        own = strategies[name]
        assert own["ready_nodes"] == 2 * own["initial_replicas"], name
    assert scenario["cluster"]["ready_nodes"] == 2 * scenario["initial_replicas"]
    scaled = yaml.safe_load((out / "manifests" / "chat-scaler.yaml").read_text())
    keda = strategies["plan"]["autoscaler"]
    assert (keda["min_replica_count"], keda["max_replica_count"]) == (
        scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"])
    crons, shipped = cron_windows(keda, scaled)
    assert crons and crons == shipped
    rows = compare_reproduces_plan_md(plan, out)
    searched = next(r for r in plan["warm_pools"]["chat"]["evidence"] if r["config"] == "plan")
    assert searched["slo_attainment"] >= 0.99 and rows[0]["slo_attainment"] >= 0.99
    # the schedule pays: less than the always-on fleet that meets the SLO on the same traffic
    assert rows[0]["gpu_hours"] < rows[2]["gpu_hours"]


def test_simulate_manifests_on_the_trace_is_the_replays_plan_run(planned):
    _, out, trace = planned
    replay = CliRunner().invoke(cli, ["simulate", str(out / "scenarios" / "chat.yaml"),
                                      "--strategy", "plan", "--format", "json"])
    assert replay.exit_code == 0, replay.output
    ours = json.loads(replay.output)["runs"][0]
    shipped = CliRunner().invoke(cli, ["simulate", "--manifests", str(out / "manifests"),
                                       "--trace", str(trace), "--format", "json"])
    assert shipped.exit_code == 0, shipped.output
    theirs = json.loads(shipped.output)["runs"][0]
    # the same run; only the SLO differs (simulate --manifests uses the default SLO)
    for key in ("gpu_hours", "drain_gpu_hours", "cost_usd", "ttft_s", "tpot_s", "requests",
                "replicas", "scale_events", "nodes"):
        assert theirs[key] == ours[key], key


def test_an_unreachable_slo_never_simulates_fleets_past_the_gpu_limit(tmp_path):
    """At a 20 ms ITL (beyond what two L40S stages decode) the analytic start was 17
    replicas: the busiest stretch's search began there, past the 8-GPU limit (4 two-GPU
    replicas), and the exit line said "up to 17 replicas"."""
    trace = write_trace(tmp_path / "t.csv", phases=((1200.0, 0.5), (1200.0, 1.0)))
    data = multinode_input(trace)
    data["cluster"]["max_gpus"] = 8
    data["slo"]["itl_p99_s"] = 0.02
    line, _, out = unreachable_plan(data, tmp_path)
    assert "up to 4 replicas" in line
    rows = [r for r in (out / "plan.md").read_text().splitlines()
            if r.startswith("| busiest stretch: always on ")]
    assert rows and all(int(r.split("|")[2]) <= 4 for r in rows)
