"""Decision rules: refusals, gangs, signals, quotas and windows, on the examples and variants."""

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.plan import make_plan, plan_input_from_dict
from gpuscale.plan.layers import consolidate_after_s

from .helpers import example_dict, example_plan


def _plan(data):
    return make_plan(plan_input_from_dict(data), Path("."), simulate=False)


def test_one_node_one_gpu_type_is_refused_with_managed_endpoint_advice():
    plan = example_plan("single-node-refusal")
    assert not plan.has_manifests and not plan.roles and not plan.nodepools
    assert [r.hard for r in plan.refusals] == [True]
    assert "serverless" in plan.managed_endpoint_advice


def test_single_instance_type_capped_at_one_node_is_refused_too():
    data = example_dict("llama70b-fp8-h100-chat")
    data["cluster"]["max_gpus"] = 8
    assert _plan(data).managed_endpoint_advice is not None
    data["cluster"]["max_gpus"] = 16  # two nodes: a real plan
    assert _plan(data).managed_endpoint_advice is None


def test_requested_traps_are_refused_with_reasons():
    plan = example_plan("shared-cluster-prod-and-training")
    requested = " ".join(r.requested for r in plan.refusals)
    assert "WhenEmptyOrUnderutilized" in requested
    assert "DCGM_FI_DEV_GPU_UTIL" in requested
    assert "no gang scheduling" in requested
    assert all(r.reason and not r.hard for r in plan.refusals)
    # ... and the plan does the safe thing instead
    assert {r.name: r.signal for r in plan.roles}["assistant"] != "gpu_util"
    frontier = next(r for r in plan.roles if r.workload == "frontier")
    assert frontier.gang and frontier.pods_per_replica == 2 and frontier.gpus_per_pod == 8


def test_gpu_memory_signal_is_refused():
    data = example_dict("llama70b-fp8-h100-chat")
    data["workloads"][0]["scale_on"] = "gpu_memory"
    plan = _plan(data)
    assert any("DCGM_FI_DEV_FB_USED" in r.requested for r in plan.refusals)
    assert plan.roles[0].signal in ("queue_depth", "kv_cache", "composite")


def test_inference_quota_covers_peak_and_training_is_below_inference():
    plan = example_plan("shared-cluster-prod-and-training")
    queues = {q.name: q for q in plan.queues}
    peak = sum(r.max_replicas * r.gpus_per_replica for r in plan.roles if r.tenant == "prod")
    assert queues["prod"].gpu_quota >= peak
    assert queues["prod"].priority > queues["research"].priority
    assert queues["prod"].parent == queues["research"].parent == "shared-h100-root"


def test_disaggregated_roles_scale_separately_on_their_own_signals():
    plan = example_plan("disaggregated-prefill-decode")
    signals = {r.role: r.signal for r in plan.roles}
    assert signals == {"prefill": "queue_depth", "decode": "kv_cache"}


def test_long_outputs_make_a_decode_bound_signal_and_long_prompts_a_prefill_bound_one():
    data = example_dict("llama70b-fp8-h100-chat")
    traffic = data["workloads"][0]["traffic"]
    traffic["prompt_tokens"] = {"kind": "fixed", "value": 100}
    traffic["output_tokens"] = {"kind": "fixed", "value": 2000}
    assert _plan(data).roles[0].signal == "kv_cache"
    traffic["prompt_tokens"] = {"kind": "fixed", "value": 16000}
    traffic["output_tokens"] = {"kind": "fixed", "value": 20}
    assert _plan(data).roles[0].signal == "queue_depth"


def test_every_scale_down_window_outlasts_the_cold_start():
    for name in ("llama70b-fp8-h100-chat", "disaggregated-prefill-decode",
                 "shared-cluster-prod-and-training"):
        for role in example_plan(name).roles:
            assert role.scale_down_window_s > role.cold_start_s
            assert role.min_replicas >= 1


@settings(max_examples=30, deadline=None)
@given(node_ready=st.floats(30, 1200), cold=st.floats(10, 1800))
def test_consolidate_after_is_bounded_and_grows_with_restart_time(node_ready, cold):
    data = example_dict("llama70b-fp8-h100-chat")
    data["workloads"][0]["traffic"]["burst_factor"] = 1.0  # no dips: the restart rule alone
    data["cluster"]["node_ready_s"] = node_ready
    plan_in = plan_input_from_dict(data)
    roles = list(example_plan("llama70b-fp8-h100-chat").roles)
    from dataclasses import replace
    short, _ = consolidate_after_s(plan_in, [replace(r, cold_start_s=cold) for r in roles])
    long, _ = consolidate_after_s(plan_in, [replace(r, cold_start_s=cold + 600) for r in roles])
    assert 600 <= short <= long <= 3600


def _one_workload(instance_types, **workload):
    return {"name": "x", "cluster": {"instance_types": instance_types},
            "workloads": [{"name": "w", "model": "Llama-3.1-8B", "precision": "fp8",
                           "traffic": {"kind": "shape", "mean_rate_per_s": 2.0}, **workload}]}


def test_a_given_tp_wider_than_every_node_is_a_clear_input_error():
    """Found by fuzzing the plan: TP2 on 1-GPU nodes rendered pods that could never schedule."""
    import pytest

    from gpuscale.errors import UserInputError
    with pytest.raises(UserInputError, match=r"tp 2 needs 2 GPUs in one node.*g6e\.2xlarge \(1\)"):
        _plan(_one_workload(["g6e.2xlarge"], tp=2))


def test_a_given_tp_goes_to_a_type_where_it_stays_inside_one_nvlink_domain():
    # g6e.24xlarge has 4 PCIe L40S (NVLink domain 1), p5.48xlarge 8 NVLink H100s.
    mixed = _plan(_one_workload(["g6e.24xlarge", "p5.48xlarge"], tp=4))
    assert mixed.roles[0].instance_type == "p5.48xlarge"
    # With PCIe only, the input is honoured and the hardware decision says what it costs.
    pcie = _plan(_one_workload(["g6e.24xlarge"], tp=4))
    assert pcie.roles[0].instance_type == "g6e.24xlarge" and pcie.roles[0].tp == 4
    hardware = next(d for d in pcie.decisions if d.subject == "w: hardware")
    assert "NVLink domain" in hardware.reason and "GPU033" in hardware.reason


def test_serving_in_a_training_tenant_gets_a_quota_for_its_replicas():
    """Found by fuzzing the plan: a serving workload in a training tenant got the training
    quota (0), and its non-preemptible replicas beyond it could never start."""
    data = _one_workload(["p5.48xlarge"], tenant="lab")
    data["tenants"] = [{"name": "lab", "kind": "training", "gpu_quota": 0}]
    plan = _plan(data)
    lab = next(q for q in plan.queues if q.name == "lab")
    peak = sum(r.max_replicas * r.gpus_per_replica for r in plan.roles if r.tenant == "lab")
    assert lab.gpu_quota == peak > 0
    assert any("lab (kind training)" in r.requested for r in plan.refusals)


def test_a_cache_larger_than_the_sequence_limit_needs_scales_on_the_queue_too():
    # DeepSeek-R1 on H200 (MLA: ~11 M KV tokens a node): max_num_seqs of these requests fill
    # a fraction of the cache, so KV use never reaches the target while requests queue; a
    # KV trigger alone never scaled up on a busier day (30 s P99 TTFT)
    data = example_dict("llama70b-fp8-h100-chat")
    w = data["workloads"][0]
    w.update(model="DeepSeek-R1", precision="fp8")
    data["cluster"]["instance_types"] = ["p5en.48xlarge"]
    w["traffic"]["prompt_tokens"] = {"kind": "fixed", "value": 600}
    w["traffic"]["output_tokens"] = {"kind": "fixed", "value": 1800}
    plan = _plan(data)
    assert plan.roles[0].signal == "composite"
    why = next(d.reason for d in plan.decisions if "max_num_seqs" in d.reason)
    assert "decode-bound" in why and "below the 70% target" in why
