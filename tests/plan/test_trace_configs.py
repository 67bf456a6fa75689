"""The deployable settings a trace plan searches with its schedule (issue 27): steps that act
under the HPA tolerance, capacity let go after a window, and a pre-pulled image, each
simulated as it ships."""

from __future__ import annotations

import dataclasses

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.importer.build import import_manifests
from gpuscale.manifests.plan import render_plan_manifests, to_yaml
from gpuscale.plan.history import Window, steepest_ramp_window
from gpuscale.plan.scaler import hpa_behavior
from gpuscale.plan.schedule import (
    held_replicas,
    rounded_to_act,
    step_acts,
    step_tolerance,
)
from gpuscale.serving.cold_start import snapshot_image_read_s
from gpuscale.sim import simulate_scenario

from ..sim.scenarios import small_scenario
from .helpers import example_plan
from .test_manifests_schema import CRD_FILES, crd_schema

QUEUE = {"query": {"metric": "vllm:num_requests_waiting", "aggregation": "sum"},
         "threshold": 1000}  # never reached: only the schedule moves the fleet


def test_a_ten_percent_step_does_not_act_under_the_default_tolerance():
    assert not step_acts(10, 11) and not step_acts(20, 22) and step_acts(10, 12)
    assert step_acts(10, 11, 0.05) and not step_acts(30, 33)


def _ten_to_eleven() -> np.ndarray:
    wants = np.full(1440, 10)
    wants[2:30] = 11
    return wants


def _cron_run(tmp_path, behavior):
    """Ten replicas, a cron window asking 11 from 00:02 (as KEDA feeds it to the HPA)."""
    keda = {"kind": "keda", "min_replica_count": 10, "max_replica_count": 12,
            "polling_interval_s": 15,
            "triggers": [QUEUE, {"type": "cron", "timezone": "Etc/UTC", "start": "2 0 * * *",
                                 "end": "30 0 * * *", "desired_replicas": 11}]}
    if behavior is not None:
        keda["advanced"] = {"horizontal_pod_autoscaler_config": {"behavior": behavior}}
    scenario = small_scenario(duration_s=600.0, initial_replicas=10, rate_per_s=1.0,
                              cluster={"instance_type": "g6.2xlarge", "ready_nodes": 10,
                                       "max_nodes": 12,
                                       "node_launch": {"kind": "fixed", "value_s": 60.0}},
                              strategies=[{"name": "cron", "autoscaler": keda}])
    result, _ = simulate_scenario(scenario, tmp_path)
    return result.runs[0].series["replicas_desired"].max()


def test_the_shipped_behavior_makes_a_small_scheduled_step_act(tmp_path):
    """Issue 27: a cron step of 10 % or less of the current replicas is inside the HPA's
    tolerance and does nothing. The plan's behavior sets the scale-up tolerance its steps
    need (per direction), and the simulation shows the step act."""
    wants = _ten_to_eleven()
    tolerance = step_tolerance(wants)
    assert tolerance is not None and 0 < tolerance < 0.1
    assert _cron_run(tmp_path, hpa_behavior(300)) == 10  # the old behavior: nothing happens
    assert _cron_run(tmp_path, hpa_behavior(300, tolerance)) == 11


def test_steps_that_act_anyway_need_no_tolerance_field():
    wants = np.full(1440, 4)
    wants[600:700] = 6  # +50 %
    assert step_tolerance(wants) is None
    assert np.array_equal(rounded_to_act(wants, 20), wants)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=2, max_size=12))
def test_rounded_steps_act_and_never_ask_less(levels):
    """Each run of the rounded schedule is at least what was wanted, and every rise acts under
    the default tolerance unless the ceiling caps it."""
    wants = np.repeat(np.array(levels), 1440 // len(levels) + 1)[:1440]
    ceiling = 60
    out = rounded_to_act(wants, ceiling)
    assert (out >= wants).all()
    before = np.roll(out, 1)
    for i in np.flatnonzero(out > before):
        assert step_acts(int(before[i]), int(out[i])) or out[i] == ceiling


def test_capacity_is_billed_for_the_hold_after_each_drop():
    wants = np.full(1440, 2)
    wants[600:630] = 5
    held = held_replicas(wants, 900.0)
    assert held[629] == 5 and held[644] == 5 and held[645] == 2
    assert held.sum() - wants.sum() == 15 * 3  # 15 minutes of 3 replicas more


def test_the_steepest_ramp_is_found_with_a_lead_before_it():
    # 1 req/s until 10:00, 4 req/s from 10:00 (arrivals every 1/rate s)
    quiet = np.arange(0.0, 36000.0, 1.0)
    busy = 36000.0 + np.arange(0.0, 7200.0, 0.25)
    arrival = np.concatenate([quiet, busy])
    ramp = steepest_ramp_window(arrival, Window(0.0, 43200.0, "fit"), 600.0, 300.0, 900.0)
    assert ramp.start_s <= 36000.0 - 600.0 + 300.0 and ramp.end_s >= 36000.0 + 900.0
    assert ramp.duration_s <= 3600.0


def _prepulled_role_plan():
    plan = example_plan("llama70b-fp8-h100-chat")
    roles = tuple(dataclasses.replace(r, prepulled_image=True, scale_up_tolerance=0.045,
                                      consolidate_after_s=600) for r in plan.roles)
    return dataclasses.replace(plan, roles=roles)


def test_a_prepulled_image_and_a_scale_up_tolerance_render_valid_manifests():
    files = render_plan_manifests(_prepulled_role_plan())
    (node_class,) = files["ec2nodeclass.yaml"]
    jsonschema.Draft7Validator(crd_schema(CRD_FILES[("karpenter.k8s.aws/v1",
                                                     "EC2NodeClass")])).validate(node_class)
    spec = node_class["spec"]
    assert spec["amiSelectorTerms"] == [{"alias": "bottlerocket@latest"}]
    data = next(d for d in spec["blockDeviceMappings"] if d.get("rootVolume"))
    # the CRD's CEL rule: a rate only with a snapshot
    assert data["ebs"]["snapshotID"] and 100 <= data["ebs"]["volumeInitializationRate"] <= 300
    scaled = next(o for o in files["chat-scaler.yaml"] if o["kind"] == "ScaledObject")
    jsonschema.Draft7Validator(crd_schema(CRD_FILES[("keda.sh/v1alpha1",
                                                     "ScaledObject")])).validate(scaled)
    behavior = scaled["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleUp"]["tolerance"] == "0.045"
    assert "tolerance" not in behavior["scaleDown"]


def test_the_replay_imports_the_prepulled_image_and_the_tolerance(tmp_path):
    from .trace_history import write_trace

    plan = _prepulled_role_plan()
    files = render_plan_manifests(plan)
    wanted = [f for f in files if f in ("chat.yaml", "chat-scaler.yaml", "ec2nodeclass.yaml")
              or f.startswith("nodepool-")]
    for name in wanted:
        (tmp_path / name).write_text(to_yaml(files[name]))
    trace = write_trace(tmp_path / "t.csv", phases=((600.0, 0.5),))
    imported = import_manifests([str(tmp_path / f) for f in wanted], trace).data
    assert imported["cold_start"]["image_pull"] == {
        "kind": "fixed", "value_s": pytest.approx(snapshot_image_read_s(12.0, 300))}
    behavior = imported["strategies"][0]["autoscaler"]["advanced"][
        "horizontal_pod_autoscaler_config"]["behavior"]
    assert behavior["scale_up"]["tolerance_frac"] == pytest.approx(0.045)


def test_the_nodepool_lets_nodes_go_as_the_search_simulated():
    from gpuscale.plan import plan_input_from_dict
    from gpuscale.plan.layers import consolidate_after_s

    from .helpers import example_dict

    plan = example_plan("llama70b-fp8-h100-chat")
    data = plan_input_from_dict(example_dict("llama70b-fp8-h100-chat"))
    rule, _ = consolidate_after_s(data, list(plan.roles))
    chosen = [dataclasses.replace(r, consolidate_after_s=600) for r in plan.roles]
    assert rule > 600 and consolidate_after_s(data, chosen)[0] == 600


def test_a_snapshot_volume_without_a_rate_is_simulated_as_pulled(tmp_path):
    from .trace_history import write_trace

    files = render_plan_manifests(_prepulled_role_plan())
    node_class = files["ec2nodeclass.yaml"][0]
    for mapping in node_class["spec"]["blockDeviceMappings"]:
        mapping["ebs"].pop("volumeInitializationRate", None)
    wanted = ["chat.yaml", "chat-scaler.yaml", "ec2nodeclass.yaml"] + [
        f for f in files if f.startswith("nodepool-")]
    for name in wanted:
        (tmp_path / name).write_text(to_yaml(files[name]))
    trace = write_trace(tmp_path / "t.csv", phases=((600.0, 0.5),))
    imported = import_manifests([str(tmp_path / f) for f in wanted], trace)
    assert "image_pull" not in imported.data["cold_start"]
    assert any("without volumeInitializationRate" in n for n in imported.notes)


def test_plan_md_names_the_snapshot_to_fill_in():
    from gpuscale.plan.report import render_plan_md

    plan = _prepulled_role_plan()
    text = render_plan_md(plan, sorted(render_plan_manifests(plan)), {})
    assert "`snapshotID`" in text and "runai_streamer" in text
    pulled = render_plan_md(example_plan("llama70b-fp8-h100-chat"), [], {})
    assert "`snapshotID`" not in pulled
