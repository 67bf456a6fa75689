"""`plan` of a trace whose replica spans nodes (issue 27): a LeaderWorkerSet group of two
nodes is planned on the whole history like a replica inside one node (scheduled capacity as
KEDA cron triggers on the LeaderWorkerSet, its cold start as simulated), and its replay is
what ships. Llama-3.1-70B in FP8 on 1 x L40S nodes (g6e.2xlarge): TP1 x PP2 over two nodes,
a small and fast case of the same path DeepSeek-V3 on H100 takes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

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
