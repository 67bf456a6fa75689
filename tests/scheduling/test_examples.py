"""The two shipped examples, with expectations derived by hand from their YAML."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gpuscale.catalog import get_instance_type
from gpuscale.cli import cli
from gpuscale.core import RandomStreams, Simulation
from gpuscale.scenario.schedule import load_schedule_scenario as load_scenario
from gpuscale.scheduling import build_scheduler
from gpuscale.scheduling.jobs import JobController
from gpuscale.sim.schedule import build_cluster, run_scenario
from gpuscale.workloads.gpu_jobs import expand_jobs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def by_kind(result: dict) -> dict:
    return {run["scheduler"].split("/")[0]: run for run in result["runs"]}


def test_seven_of_eight_idle_gpu_minutes_and_dollars():
    runs = by_kind(run_scenario(load_scenario(EXAMPLES / "seven-of-eight" / "scenario.yaml")))
    # default scheduler: 7 one-GPU pods bound at t=0 wait for the node Ready at 300 s
    per_gpu_hour = get_instance_type("g6.24xlarge").on_demand_usd_per_hour / 4
    kube = runs["kube-scheduler"]["scheduling"]
    assert abs(kube["gang_idle_gpu_minutes"] - 7 * 5) < 1e-6
    assert abs(kube["gang_idle_usd"] - 7 * per_gpu_hour * 300 / 3600) < 1e-3
    kai = runs["kai"]["scheduling"]
    assert kai["gang_idle_gpu_minutes"] == 0 and kai["gang_idle_usd"] == 0
    # under KAI the 7 GPUs stay free (usable by others) while the gang waits for the node
    assert abs(kai["free_gpu_minutes_while_gang_blocked"] - 7 * 5) < 1e-6
    for run in runs.values():  # one node launched, job starts when it is Ready
        assert run["nodes"]["launched_by_provider"] == 1
        assert run["jobs"]["jobs"]["train-8"]["started_s"] == 300.0


def test_gang_on_fresh_nodes_bills_nodes_that_cannot_start_it():
    """Karpenter launches one node per claim: with claims arriving 120 s apart, the first node
    is up and billing while the gang waits for the second."""
    scenario = load_scenario(EXAMPLES / "seven-of-eight" / "scenario.yaml").model_copy(deep=True)
    data = scenario.model_dump()
    data["initial_nodes"][0]["busy_gpus"] = [4, 4, 4]
    data["jobs"][0].update(num_pods=2, gpus_per_pod=4)
    data["provider"]["stagger_s"] = 120.0
    runs = by_kind(run_scenario(type(scenario).model_validate(data)))
    kai = runs["kai"]["scheduling"]
    assert runs["kai"]["nodes"]["launched_by_provider"] == 2
    assert abs(kai["free_gpu_minutes_while_gang_blocked"] - 4 * 2) < 1e-6  # 4 GPUs x 120 s
    assert abs(runs["kube-scheduler"]["scheduling"]["gang_idle_gpu_minutes"] - 4 * 2) < 1e-6


def test_two_teams_fair_shares_and_reclaim_only_under_quota():
    scenario = load_scenario(EXAMPLES / "two-teams" / "scenario.yaml")
    spec = scenario.schedulers[1]
    sim, cluster = Simulation(), build_cluster(scenario)
    sched = build_scheduler(spec)
    jobs = JobController(sim, cluster, expand_jobs([*scenario.jobs, *scenario.replicas]))
    sched.attach(sim, cluster, RandomStreams(0), lambda pods, now: None)
    expected = {300: (0, 32, 0), 1200: (16, 16, 4), 2400: (20, 12, 4)}  # a, b, reclaimed pods
    for t, (fair_a, fair_b, reclaimed) in expected.items():
        sim.run(until_s=t)
        shares = sched.metrics.fair_rate
        assert (shares["team-a"], shares["team-b"]) == (fair_a, fair_b)
        assert sched.metrics.counters["reclaims"] == reclaimed
    # the third replica (over quota, non-preemptible) never started; the first two did
    started = {n: r.started_s for n, r in jobs.records.items() if n.startswith("team-a")}
    assert started == {"team-a-llama70b-r0": 600.0, "team-a-llama70b-r1": 600.0,
                       "team-a-llama70b-extra": None}


def test_cli_schedule_json(tmp_path):
    out = tmp_path / "s.json"
    result = CliRunner().invoke(
        cli,
        [
            "schedule",
            str(EXAMPLES / "seven-of-eight" / "scenario.yaml"),
            "--format",
            "json",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert [r["scheduler"] for r in data["runs"]] == [
        "kube-scheduler/LeastAllocated",
        "kai/binpack",
    ]
    again = CliRunner().invoke(cli, ["schedule", str(EXAMPLES / "seven-of-eight" / "scenario.yaml"),
                                     "--format", "json", "--out", str(out)])
    assert again.exit_code == 2  # refuses to overwrite


def test_cli_bad_scheduler_kind_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nnodes: [{name_prefix: n, instance_type: g6.24xlarge}]\n"
                   "schedulers: [{kind: volcano}]\n")
    result = CliRunner().invoke(cli, ["schedule", str(bad)])
    assert result.exit_code == 2 and "schedulers" in result.output


def test_busy_gpus_beyond_the_node_is_bad_input_not_a_traceback(tmp_path):
    """Found by fuzzing: busy_gpus of 8 on a 4-GPU node raised ValueError from the cluster."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ninitial_nodes:\n  - {name_prefix: l4, instance_type: g6.24xlarge, "
                   "count: 2, busy_gpus: [1, 8]}\njobs: [{name: j, num_pods: 1, gpus_per_pod: 1, "
                   "duration_s: 60}]\nschedulers: [{kind: kai}]\n")
    result = CliRunner().invoke(cli, ["schedule", str(bad)])
    assert result.exit_code == 2, result.output
    assert "initial_nodes[0]: busy_gpus entries must be 0-4 (g6.24xlarge has 4 GPUs), got 8" \
        in result.output


def test_same_seed_same_bytes():
    path = EXAMPLES / "two-teams" / "scenario.yaml"
    first = json.dumps(run_scenario(load_scenario(path)), sort_keys=True)
    assert first == json.dumps(run_scenario(load_scenario(path)), sort_keys=True)
