"""Layer 2 with the real layer 1 (Karpenter, Cluster Autoscaler) in `gpuscale schedule` runs.

Expectations come from the scenario YAML and the node ready times of the run itself: the
7 bound pods of the 7-of-8 trap wait from t=0 until the one new node is Ready; a gang of two
8-GPU pods waits from the first new node's Ready to the second's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuscale.catalog import get_instance_type
from gpuscale.cli import cli
from gpuscale.errors import UserInputError
from gpuscale.metrics.billing import all_nodes
from gpuscale.scenario.schedule import ScheduleScenario, load_schedule_scenario
from gpuscale.sim.schedule import build_run, run_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEVEN = EXAMPLES / "seven-of-eight"
PARTIAL = EXAMPLES / "gang-partial-launch"
P5_USD_PER_GPU_S = get_instance_type("p5.48xlarge").on_demand_usd_per_hour / 8 / 3600


def run(path: Path, kind: str, **changes):
    """One run of the scenario's scheduler of `kind`, simulated to the end, live objects kept."""
    scenario = load_schedule_scenario(path)
    if changes:
        scenario = ScheduleScenario.model_validate({**scenario.model_dump(), **changes})
    spec = next(s for s in scenario.schedulers if s.kind == kind)
    r = build_run(scenario, spec)
    reports: list[list[str]] = []
    notify = r.scheduler.on_unschedulable

    def record(pods, now_s):
        reports.append(sorted(p.name for p in pods))
        notify(pods, now_s)

    r.scheduler.on_unschedulable = record
    r.sim.run(until_s=scenario.duration_s)
    r.reports = reports
    return r


def launched(r):
    return sorted((n for n in all_nodes(r.cluster) if n.name not in r.initial_nodes),
                  key=lambda n: n.ready_s if n.ready_s is not None else float("inf"))


# -- the 7-of-8 trap with Karpenter --------------------------------------------------------------
def test_seven_of_eight_kube_scheduler_holds_seven_gpus_idle_until_karpenters_node():
    r = run(SEVEN / "karpenter.yaml", "kube-scheduler")
    (node,) = launched(r)
    assert node.created_s == pytest.approx(1.0)  # the batch window closes 1 s after the report
    s = r.scheduler.summary()
    # 7 pods bound at t=0, idle until the new node is Ready and the 8th binds
    assert s["gang_idle_gpu_minutes"] > 0
    assert s["gang_idle_gpu_minutes"] == pytest.approx(7 * node.ready_s / 60, abs=1e-3)
    per_gpu_s = get_instance_type("g6.24xlarge").on_demand_usd_per_hour / 4 / 3600
    assert s["gang_idle_usd"] == pytest.approx(7 * node.ready_s * per_gpu_s, abs=1e-3)
    assert len(r.reports[0]) == 1  # only the pod that found no GPU
    assert r.jobs.records["train-8"].started_s == pytest.approx(node.ready_s)


def test_seven_of_eight_kai_holds_nothing_and_reports_the_whole_gang():
    r = run(SEVEN / "karpenter.yaml", "kai")
    (node,) = launched(r)  # Karpenter's own packing puts 7 pods on the existing free GPUs
    s = r.scheduler.summary()
    assert s["gang_idle_gpu_minutes"] == 0 and s["gang_idle_usd"] == 0
    assert len(r.reports[0]) == 8  # the whole gang triggered provisioning
    # the 7 free GPUs stay free (usable by others) for the same wait
    assert s["free_gpu_minutes_while_gang_blocked"] == pytest.approx(7 * node.ready_s / 60,
                                                                     abs=1e-3)
    assert r.jobs.records["train-8"].started_s == pytest.approx(node.ready_s)


def test_initial_nodes_are_owned_by_the_nodepool():
    r = run(SEVEN / "karpenter.yaml", "kai")
    owned = r.provider.metrics.node_names
    assert r.initial_nodes <= owned and len(r.initial_nodes) == 3
    summary = r.provider.summary()
    assert summary["nodes_created"] == 4 and summary["events"]["nodeclaims_launched"] == 1


# -- a gang on two fresh nodes -------------------------------------------------------------------
def _gap_s(r) -> tuple[float, float]:
    first, second = launched(r)
    return first.ready_s, second.ready_s


@pytest.mark.parametrize("seed", [2, 5, 11])
def test_partial_launch_bills_the_first_node_while_the_gang_waits(seed):
    kai = run(PARTIAL / "karpenter.yaml", "kai", seed=seed)
    kube = run(PARTIAL / "karpenter.yaml", "kube-scheduler", seed=seed)
    t1, t2 = _gap_s(kai)
    assert t2 > t1  # independent draws: ties have probability 0
    first, second = launched(kai)
    assert first.created_s == second.created_s == pytest.approx(1.0)  # one batch, 2 claims
    s = kai.scheduler.summary()
    assert s["gang_idle_gpu_minutes"] == 0
    assert 0 < s["empty_node_gpu_minutes_while_gang_blocked"] <= 8 * (t2 - t1) / 60 + 1e-3
    assert s["empty_node_gpu_minutes_while_gang_blocked"] == pytest.approx(8 * (t2 - t1) / 60,
                                                                           abs=1e-3)
    assert s["empty_node_usd_while_gang_blocked"] == pytest.approx(
        8 * (t2 - t1) * P5_USD_PER_GPU_S, abs=1e-3)
    assert kai.jobs.records["train-16"].started_s == pytest.approx(t2)
    # kube-scheduler binds one pod on the first node instead: the same GPUs, held by the gang
    k = kube.scheduler.summary()
    assert _gap_s(kube) == (t1, t2)  # same seed, same draws: layer 2 does not change layer 1
    assert k["empty_node_gpu_minutes_while_gang_blocked"] == 0
    assert k["gang_idle_gpu_minutes"] == pytest.approx(8 * (t2 - t1) / 60, abs=1e-3)


def test_insufficient_capacity_on_the_second_node_stretches_the_wait():
    plain = run(PARTIAL / "karpenter.yaml", "kai")
    ice = run(PARTIAL / "karpenter-ice.yaml", "kai")
    first, second = launched(ice)
    outage = load_schedule_scenario(PARTIAL / "karpenter-ice.yaml").nodes.capacity_outages[0]
    assert first.created_s == pytest.approx(1.0)
    assert second.created_s >= outage.end_s  # no instance until the outage is over
    assert ice.provider.metrics.failures["insufficient_capacity"] >= 2
    t1, t2 = first.ready_s, second.ready_s
    billed = ice.scheduler.summary()["empty_node_gpu_minutes_while_gang_blocked"]
    assert 8 * (outage.end_s - t1) / 60 < billed <= 8 * (t2 - t1) / 60 + 1e-3
    assert billed > plain.scheduler.summary()["empty_node_gpu_minutes_while_gang_blocked"]


def test_cluster_autoscaler_adds_both_nodes_in_one_scale_up():
    r = run(PARTIAL / "cluster-autoscaler.yaml", "kai")
    first, second = launched(r)
    assert first.created_s == second.created_s  # the group grew by 2 in one scan
    assert r.provider.metrics.events["scale_ups"] == 1
    t1, t2 = first.ready_s, second.ready_s
    billed = r.scheduler.summary()["empty_node_gpu_minutes_while_gang_blocked"]
    assert 0 < billed == pytest.approx(8 * (t2 - t1) / 60, abs=1e-3)


# -- schema and CLI ------------------------------------------------------------------------------
def test_run_summary_lists_launched_nodes_and_the_provider_block():
    result = run_scenario(load_schedule_scenario(PARTIAL / "karpenter.yaml"))
    for r in result["runs"]:
        nodes = r["nodes"]
        assert nodes["launched_by_provider"] == len(nodes["launched"]) == 2
        assert nodes["provider"]["provider"] == "karpenter"


def test_nodes_and_stand_in_provider_together_are_refused(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ninitial_nodes: [{name_prefix: n, instance_type: g6.24xlarge}]\n"
                   "nodes: {kind: static}\n"
                   "provider: {kind: stand-in, instance_type: g6.24xlarge}\n")
    with pytest.raises(UserInputError, match="not both"):
        load_schedule_scenario(bad)
    result = CliRunner().invoke(cli, ["schedule", str(bad)])
    assert result.exit_code == 2


def test_legacy_node_list_and_initial_nodes_together_are_refused():
    with pytest.raises(ValueError, match="legacy"):
        ScheduleScenario.model_validate({
            "name": "x", "nodes": [{"name_prefix": "n", "instance_type": "g6.24xlarge"}],
            "initial_nodes": [{"name_prefix": "m", "instance_type": "g6.24xlarge"}]})


def test_cli_runs_a_karpenter_scenario():
    result = CliRunner().invoke(cli, ["schedule", str(PARTIAL / "karpenter-ice.yaml")])
    assert result.exit_code == 0, result.output
    assert "empty nodes billing while a gang was blocked" in result.output
    assert result.output.count("node h100-") == 4  # 2 launched nodes x 2 schedulers
