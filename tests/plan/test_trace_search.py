"""The trace search's narrowing (issue 27): configurations ranked by the hold-aware proxy,
the runner-up simulated beside the winner, and parallel workers that change no result."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.plan.schedule import Sizing
from gpuscale.plan.trace_candidates import ranked, runner_up
from gpuscale.plan.trace_configs import ColdStartOption, Release, TraceConfig

from .trace_history import history_input, write_trace

ONE = Sizing(1.0, 1.0, 2.0, 1.0)  # one replica per request/s


def _config(cold_s: float, hold: tuple[int, int], steps="tolerance", name="pulled"):
    cold = ColdStartOption(name, cold_s, 0.0, 0.0, "")
    return TraceConfig(cold, Release("rule" if hold[0] > 300 else "fast", *hold), steps, 300.0)


def test_a_shorter_hold_and_a_faster_start_rank_cheaper():
    profile = np.full(48, 4.0)
    profile[[10, 20, 30]] = 10.0  # three busy half hours
    slow = _config(600.0, (1200, 1800))
    fast_release = _config(600.0, (300, 600))
    fast_all = _config(120.0, (300, 600), name="prepulled")
    order = ranked(profile, ONE, [slow, fast_release, fast_all], ceiling=20)
    assert [c.config for c in order] == [fast_all, fast_release, slow]
    proxies = [c.proxy_replica_h for c in order]
    assert proxies == sorted(proxies) and proxies[0] < proxies[-1]
    # the runner-up differs in cold start or release, never only in how steps act
    assert runner_up(order[0], order).config == fast_release


def test_step_modes_that_ship_the_same_thing_are_one_candidate():
    profile = np.full(48, 4.0)
    profile[20] = 8.0  # +100 %: acts under the default tolerance either way
    modes = [_config(300.0, (300, 600), steps) for steps in ("tolerance", "rounded")]
    (only,) = ranked(profile, ONE, modes, ceiling=20)
    assert only.tolerance is None
    profile[:] = 10.0
    profile[20] = 11.0  # a 10 % step, 10 -> 11: inside the default tolerance
    both = ranked(profile, ONE, modes, ceiling=20)
    assert len(both) == 2 and both[0].config.steps == "tolerance"  # one replica cheaper
    assert both[0].tolerance is not None and both[1].wants.max() == 12


def test_two_workers_give_the_same_plan_as_one(tmp_path):
    trace = write_trace(tmp_path / "t.csv")
    source = tmp_path / "input.yaml"
    source.write_text(yaml.safe_dump(history_input(Path(trace.name))))
    plans = []
    for workers in ("1", "2"):
        result = CliRunner().invoke(cli, ["plan", str(source), "--workers", workers,
                                          "--format", "json"])
        assert result.exit_code == 0, result.output
        plans.append(json.loads(result.output))
    assert plans[0]["warm_pools"] == plans[1]["warm_pools"]
    assert plans[0]["roles"] == plans[1]["roles"]


def test_a_cluster_without_the_per_direction_tolerance_gets_rounded_steps(tmp_path):
    from gpuscale.plan import plan_input_from_dict
    from gpuscale.plan.hardware import hardware_options
    from gpuscale.plan.sizing import traffic_stats
    from gpuscale.plan.trace_configs import all_configs

    trace = write_trace(tmp_path / "t.csv")
    data = history_input(trace)
    modes = {}
    for honoured in (True, False):
        data["cluster"]["scale_up_tolerance"] = honoured
        plan = plan_input_from_dict(data)
        w = plan.workloads[0]
        opt = hardware_options(plan, w, traffic_stats(w, tmp_path, 1200), plan.slo)[0]
        modes[honoured] = {c.steps for c in all_configs(plan, w, opt)}
    assert modes == {True: {"tolerance", "rounded"}, False: {"rounded"}}


def test_a_scenario_simulated_before_is_not_run_again():
    """An always-on plan replayed is the fixed fleet of its size: the same scenario under
    another strategy name is one simulation (same scenario and seed, same bytes)."""
    from gpuscale.plan.inputs import SloInput
    from gpuscale.plan.model import EvidenceRow
    from gpuscale.plan.trace_search import TraceSearch

    class Counting:
        jobs = 0

        def run(self, scenarios, labels, *args):
            Counting.jobs += len(scenarios)
            return [EvidenceRow(sc["strategies"][0]["autoscaler"]["replicas"], 1.0, 0.1, 0.995,
                                0, 1.0, True) for sc in scenarios]

    s = TraceSearch(None, None, None, SloInput(), None, None, None, Path("."), None, Counting())
    fleet = {"name": "x", "seed": 0, "strategies": [
        {"name": "plan", "autoscaler": {"kind": "fixed", "replicas": 4}}]}
    renamed = dict(fleet, strategies=[dict(fleet["strategies"][0], name="fixed-best")])
    other = dict(fleet, seed=1)
    rows = s.run([fleet, renamed], ["plan", "replay: always on 4"])
    rows += s.run([renamed, other], ["again", "another seed"])
    assert Counting.jobs == 2  # fleet once (three asks), the other seed once
    assert [r.config for r in rows] == ["plan", "replay: always on 4", "again", "another seed"]


def test_one_replica_on_the_quietest_stretch_is_a_bound_not_a_ratio():
    busy = Sizing(7.0, 2 / 7.0, 7.0, 2 / 7.0)  # 2 replicas met the SLO at 7 req/s
    # one replica at 1.5 req/s: 1/1.5 per request/s would be interpolated into the middle
    # hours, asking 2 replicas at 3 req/s where the busy ratio asks 0.86
    bound = busy.with_quiet(1.5, 1)
    assert bound == busy
    assert np.ceil(bound.replicas(np.array([3.0]))[0]) == 1
    # a quiet fleet of several replicas is a measurement: more per request/s at low rates
    measured = busy.with_quiet(3.0, 2)
    assert measured.quiet_rps == 3.0 and measured.quiet_per_rps == 2 / 3.0
    assert measured.replicas(np.array([3.0]))[0] > busy.replicas(np.array([3.0]))[0]
    assert busy.with_quiet(1.5, None) == busy
