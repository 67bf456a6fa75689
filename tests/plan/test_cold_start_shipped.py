"""The cold start a plan ships is the one its search simulated (issue 27): the replay imports
the manifests, so whatever the Deployment and the EC2NodeClass say about loading weights and
pulling the image is what `compare DIR/scenarios/W.yaml` runs."""

from __future__ import annotations

import numpy as np

from gpuscale.importer.build import import_manifests
from gpuscale.manifests.plan import render_plan_manifests, to_yaml
from gpuscale.plan import make_plan, plan_input_from_dict
from gpuscale.plan.scaler import triggers
from gpuscale.plan.sizing import TrafficStats
from gpuscale.plan.warm_pool import CandidateSetup, candidate_scenario_dict
from gpuscale.scenario import scenario_from_dict
from gpuscale.serving.cold_start import cold_start_components
from gpuscale.sim.replica_setup import replica_hardware

from .trace_history import history_input, write_trace


def _medians(scenario) -> dict[str, float]:
    hw = replica_hardware(scenario)
    return cold_start_components(hw, scenario.cold_start, None, pull_image=True)


def _imported(plan, tmp_path, trace):
    files = render_plan_manifests(plan)
    wanted = [f for f in files if f in ("chat.yaml", "chat-scaler.yaml", "ec2nodeclass.yaml")
              or f.startswith("nodepool-")]
    for name in wanted:
        (tmp_path / name).write_text(to_yaml(files[name]))
    return import_manifests([str(tmp_path / f) for f in wanted], trace).scenario


def test_the_shipped_deployment_loads_weights_as_the_search_simulated(tmp_path):
    """The search simulates the scenario's default weight load (gp3 read by the Run:ai
    streamer, ~1.05 GB/s); a Deployment without `--load-format runai_streamer` is imported
    (and runs in a cluster) with vLLM's default safetensors loader, 3.3x slower."""
    trace = write_trace(tmp_path / "t.csv")
    plan = make_plan(plan_input_from_dict(history_input(trace)), tmp_path, simulate=False)
    shipped = _imported(plan, tmp_path, trace)
    role = plan.roles[0]
    setup = CandidateSetup(role.instance_type, role.tp, 1, 4, triggers("queue_depth", 4), 300,
                           None, 3.0, 0.2)
    stats = TrafficStats(1.0, 1.0, 1.0, 60.0, 3600.0, 500.0, 100.0, max_output_tokens=200)
    data = plan_input_from_dict(history_input(trace))
    searched = scenario_from_dict(candidate_scenario_dict(data, data.workloads[0], stats,
                                                          setup, 1), source="<test>")
    ours, theirs = _medians(searched), _medians(shipped)
    assert np.isclose(theirs["weight_load_s"], ours["weight_load_s"]), (theirs, ours)
    deployment = next(o for o in render_plan_manifests(plan)["chat.yaml"]
                      if o["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][container["args"].index("--load-format") + 1] == "runai_streamer"
