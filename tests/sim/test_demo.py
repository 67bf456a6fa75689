"""The embedded demo shows the lesson's replica-layer traps with numbers."""

from __future__ import annotations

import functools
from pathlib import Path

import yaml

from gpuscale.cli.demo import demo_scenario_text
from gpuscale.scenario import scenario_from_dict
from gpuscale.sim import simulate_scenario


@functools.lru_cache(maxsize=1)
def _demo():
    """Run once per test session: the demo's five strategies take a few seconds."""
    scenario = scenario_from_dict(yaml.safe_load(demo_scenario_text()), source="demo.yaml")
    result, walls = simulate_scenario(scenario, Path("."))
    return {run.name: run for run in result.runs}, result.to_json(walls)


def test_demo_compares_the_required_strategies_and_shows_the_duty_cycle_trap():
    runs, _data = _demo()
    assert set(runs) >= {"fixed-2", "hpa-gpu-util-70", "hpa-gpu-util-95", "keda-queue-depth",
                         "hpa-kv-cache"}
    util95 = runs["hpa-gpu-util-95"]
    # Target 95: the duty cycle never exceeds 100, so the ratio 100/95 stays inside the 10 %
    # tolerance and the HPA never scales up, whatever the queue does.
    assert util95.summary.replicas.peak <= util95.summary.replicas.initial
    assert util95.series["queue_waiting"].max() > 50  # ...while requests pile up
    # Target 70: any traffic reads ~100 % busy, so it scales out to the maximum and stays there
    # until the traffic stops.
    util70 = runs["hpa-gpu-util-70"]
    assert util70.summary.replicas.peak == 12
    series = util70.series
    busy = series["time_s"] < 2400
    assert series["replicas_desired"][busy][-1] == 12
    # Queue-depth scaling reacts to the queue (it scales up during the burst).
    keda = runs["keda-queue-depth"]
    assert keda.summary.replicas.peak > 2


def test_duty_cycle_reads_saturated_at_low_and_high_load_while_queue_tells_them_apart():
    runs, _ = _demo()
    series = runs["fixed-2"].series
    t = series["time_s"]
    quiet = (t > 120) & (t < 600)  # 1 req/s on 2 replicas
    burst = (t > 700) & (t < 1200)  # 12 req/s on 2 replicas
    assert series["gpu_util_mean"][quiet].mean() > 90
    assert series["gpu_util_mean"][burst].mean() > 95
    assert series["queue_waiting"][quiet].max() < 10 < series["queue_waiting"][burst].max()


def test_oracle_bound_is_below_every_demo_policy_that_completes_the_workload():
    _, data = _demo()
    for run in data["runs"]:
        counts = run["requests"]
        assert counts["completed"] == counts["total"]
        assert 0 < run["oracle_gpu_hours"] <= run["gpu_hours"], run["name"]
        assert 0 < run["efficiency"] <= 1


def test_the_demos_plan_is_called_what_it_is():
    """Issue 27: the demo's winning `plan` row was KEDA 8..8, presented as "scales on queue
    depth and KV cache". A floor equal to the maximum is an always-on fleet, and says so."""
    data = yaml.safe_load(demo_scenario_text())
    plan = next(s for s in data["strategies"] if s["name"] == "plan")["autoscaler"]
    notes = [n for n in data["notes"] if n.startswith("plan ")]
    assert notes
    if plan["min_replica_count"] == plan["max_replica_count"]:
        assert all("always-on fleet" in n and "scales on" not in n for n in notes)
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    row = next(ln for ln in readme.splitlines() if ln.startswith("| `plan`"))
    assert ("always-on fleet" in row) == (plan["min_replica_count"] == plan["max_replica_count"])
