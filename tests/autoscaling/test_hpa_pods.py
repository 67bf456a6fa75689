"""Which pods count, invalid metrics, clamps and the legacy path (reference section 1.4-1.6, 1.8).

Expected values are hand arithmetic on the rules of replica_calculator.go / horizontal.go as the
reference file paraphrases them; each assertion shows the sum.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuscale.autoscaling.base import PodMetrics
from gpuscale.autoscaling.hpa import HpaController, HpaParams, MetricSpec

from .hpa_views import drive, pod, pods, view

Q = "vllm:num_requests_waiting"


def queue_hpa(target: float = 1.0, max_replicas: int = 100, **kw) -> HpaController:
    metric = MetricSpec(type="Pods", metric=Q, target={"type": "AverageValue", "value": target})
    return HpaController(HpaParams(max_replicas=max_replicas, metrics=(metric,), **kw))


def proposal(hpa: HpaController, current: int, pod_list) -> int | None:
    return hpa.decide(view(0, current, pod_list), hpa.initial_state())[1].last_proposal


def test_missing_pods_dampen_scale_up():
    hpa = queue_hpa()
    # All four pods at 1.5x target would propose ceil(1.5 x 4) = 6.
    assert proposal(hpa, 4, pods(Q, [1.5] * 4)) == 6
    # Two still loading (no /metrics yet): counted as 0 on scale-up -> ratio 3/4 = 0.75 < 1 flips
    # the direction, so the HPA keeps 4.
    assert proposal(hpa, 4, pods(Q, [1.5, 1.5, None, None])) == 4
    # Two at 3x, two missing: ratio 6/4 = 1.5 -> ceil(1.5 x 4) = 6, not ceil(3 x 4) = 12.
    assert proposal(hpa, 4, pods(Q, [3.0, 3.0, None, None])) == 6


def test_missing_pods_block_scale_down():
    hpa = queue_hpa()
    assert proposal(hpa, 4, pods(Q, [0.2] * 4)) == 1  # ceil(0.2 x 4)
    # Missing pods count at target on scale-down: (0.2 + 0.2 + 1 + 1) / 4 = 0.6 -> ceil(2.4) = 3.
    assert proposal(hpa, 4, pods(Q, [0.2, 0.2, None, None])) == 3
    # (0.8 + 1 + 1 + 1) / 4 = 0.95: within tolerance, keep 4.
    assert proposal(hpa, 4, pods(Q, [0.8, None, None, None])) == 4


def test_pending_pods_count_zero_only_when_scaling_up():
    hpa = queue_hpa()
    running = pods(Q, [1.5, 1.5])
    pending = (pod("new0", phase="Pending"), pod("new1", phase="Pending"))
    # Without the pending pods the two running ones alone would propose ceil(1.5 x 2) = 3 < 4.
    assert proposal(hpa, 4, running) == 3
    # With them: scale-up with unready pods -> (1.5 + 1.5 + 0 + 0) / 4 = 0.75 flips: keep 4.
    assert proposal(hpa, 4, running + pending) == 4
    # On a scale-down pending pods are simply ignored: ceil(0.2 x 2) = 1.
    assert proposal(hpa, 4, pods(Q, [0.2, 0.2]) + pending) == 1


def test_unready_running_pod_counts_for_custom_metric_but_not_for_cpu():
    both = [PodMetrics("a", "Running", True, {Q: 2.0, "cpu": 2.0}, {"cpu": 1.0}),
            PodMetrics("b", "Running", False, {Q: 2.0, "cpu": 2.0}, {"cpu": 1.0})]
    assert proposal(queue_hpa(), 2, both) == 4  # ceil(2 x 2): b counted like a ready pod
    cpu = MetricSpec(type="Resource", metric="cpu", target={"type": "AverageValue", "value": 1.0})
    cpu_hpa = HpaController(HpaParams(max_replicas=10, metrics=(cpu,)))
    # CPU: b is set aside, then counted as 0 on scale-up: (2 + 0) / 2 = 1.0 -> keep 2.
    assert proposal(cpu_hpa, 2, both) == 2


def test_cpu_initialization_period_sets_aside_freshly_ready_pod():
    cpu = MetricSpec(type="Resource", metric="cpu", target={"type": "AverageValue", "value": 1.0})
    hpa = HpaController(HpaParams(max_replicas=10, metrics=(cpu,)))
    old = PodMetrics("old", "Running", True, {"cpu": 2.0}, started_s=0.0, ready_changed_s=20.0)
    fresh = PodMetrics(
        "fresh", "Running", True, {"cpu": 2.0}, started_s=990.0, ready_changed_s=995.0
    )
    # At t=1000 the fresh pod became ready 5 s ago (< one 15 s metric window): set aside -> (2+0)/2.
    assert hpa.decide(view(1000, 2, [old, fresh]), hpa.initial_state())[1].last_proposal == 2
    # At t=1020 its sample is a full window after readiness: both count -> ceil(2 x 2) = 4.
    assert hpa.decide(view(1020, 2, [old, fresh]), hpa.initial_state())[1].last_proposal == 4


def test_invalid_metric_blocks_scale_down_but_not_scale_up():
    broken = MetricSpec(
        type="External", query={"metric": "absent"}, target={"type": "Value", "value": 1}
    )
    good = MetricSpec(type="Pods", metric=Q, target={"type": "AverageValue", "value": 1})
    hpa = HpaController(HpaParams(max_replicas=20, metrics=(broken, good)))
    up, _ = hpa.decide(view(0, 4, pods(Q, [2.0] * 4)), hpa.initial_state())
    assert up == 8  # the valid metric scales up: ceil(2 x 4)
    down, state = hpa.decide(view(0, 4, pods(Q, [0.2] * 4)), hpa.initial_state())
    assert down is None and state.condition.startswith("FailedGetMetrics")
    only_broken = HpaController(HpaParams(max_replicas=20, metrics=(broken,)))
    assert (
        only_broken.decide(view(0, 4, pods(Q, [9.0] * 4)), only_broken.initial_state())[0] is None
    )


def test_zero_replicas_with_nonzero_min_disables_scaling():
    hpa = queue_hpa()
    desired, state = hpa.decide(view(0, 0, (), ), hpa.initial_state())
    assert desired is None and state.condition == "ScalingDisabled"


def zero_hpa() -> HpaController:
    ext = MetricSpec(
        type="External",
        query={"metric": "queue", "source": "signal"},
        target={"type": "Value", "value": 5},
    )
    return HpaController(HpaParams(min_replicas=0, max_replicas=10, metrics=(ext,)))


def test_scale_to_zero_hpa_proposes_ceil_ratio_at_zero():
    # HPAScaleToZero (KEP-2021, beta in 1.37): once the HPA took its target to 0 (the
    # ScaledToZero condition), at 0 replicas an External Value metric proposes ceil(value /
    # target) without tolerance.
    hpa = zero_hpa()
    state = replace(hpa.initial_state(), scaled_to_zero=True)
    assert hpa.decide(view(0, 0, (), queue=12.0), state)[0] == 3  # ceil(2.4)


def test_scale_to_zero_hpa_leaves_a_target_it_did_not_zero_alone():
    # KEP-2021: without ScaledToZero=True a target at 0 is in implicit maintenance mode, e.g.
    # a Deployment applied with replicas 0: the queue builds and nothing scales.
    hpa = zero_hpa()
    desired, state = hpa.decide(view(0, 0, (), queue=12.0), hpa.initial_state())
    assert desired is None and state.condition == "ScalingDisabled"


def test_scale_to_zero_hpa_goes_to_zero_and_back():
    hpa = zero_hpa()
    one = pods("x", [0.0])
    log = drive(hpa, lambda t, n: view(t, n, one if n else (), queue=0.0 if t < 600 else 12.0),
                start=1, until_s=700)
    # Idle: scale-down after the 300 s legacy window (a proposal 300 s old still counts), to 0;
    # then ScaledToZero lets the queue at t=600 bring it back at ceil(12 / 5) = 3.
    assert log == [(315.0, 0), (600.0, 3)]


def test_out_of_range_current_is_clamped_without_metrics():
    hpa = queue_hpa(max_replicas=5, min_replicas=2)
    assert hpa.decide(view(0, 9, ()), hpa.initial_state())[0] == 5
    assert hpa.decide(view(0, 1, ()), hpa.initial_state())[0] == 2


@pytest.mark.parametrize("current, expected", [(1, 4), (2, 4), (3, 6), (10, 20)])
def test_legacy_scale_up_cap_is_max_of_double_and_four(current, expected):
    hpa = queue_hpa()
    assert (
        hpa.decide(view(0, current, pods(Q, [50.0] * current)), hpa.initial_state())[0] == expected
    )


def test_legacy_path_keeps_the_5_minute_maximum():
    hpa = queue_hpa()
    def load(t: float) -> float:  # total queue; per pod = load / n
        return 8.0 if t < 60 else 2.0

    log = drive(hpa, lambda t, n: view(t, n, pods(Q, [load(t) / n] * n)), start=2, until_s=600)
    # t=0: ceil(4 x 2) = 8, capped at 4; t=15: 4 pods at 2 -> 8; from t=60 proposals are 2, but
    # the 8 recommended at t=45 is the window maximum until 345 (inclusive), so 2 lands at 360.
    assert log == [(0.0, 4), (15.0, 8), (360.0, 2)]


def test_external_average_value_is_total_over_target_and_value_multiplies_ready_pods():
    avg = MetricSpec(
        type="External",
        query={"metric": Q, "aggregation": "sum"},
        target={"type": "AverageValue", "value": 5},
    )
    hpa = HpaController(HpaParams(max_replicas=50, metrics=(avg,)))
    pod_list = pods(Q, [10.0, 8.0, 5.0])  # sum 23
    assert proposal(hpa, 3, pod_list) == 5  # ceil(23 / 5), whatever the pod count
    val = MetricSpec(
        type="External",
        query={"metric": Q, "aggregation": "avg"},
        target={"type": "Value", "value": 5},
    )
    hpa_v = HpaController(HpaParams(max_replicas=50, metrics=(val,)))
    unready = PodMetrics("x", "Running", False, {})
    assert proposal(hpa_v, 4, pod_list + (unready,)) == 5  # avg 23/3 / 5 = 1.533 x 3 ready = 4.6


def test_object_average_value_tolerance_uses_existing_pods():
    obj = MetricSpec(
        type="Object",
        query={"metric": "rps", "source": "signal"},
        target={"type": "AverageValue", "value": 10},
    )
    hpa = HpaController(HpaParams(max_replicas=50, metrics=(obj,)))
    three = pods(Q, [0, 0, 0])
    assert (
        hpa.decide(view(0, 3, three, rps=32.0), hpa.initial_state())[1].last_proposal == 3
    )  # 32/30 within 0.1
    assert (
        hpa.decide(view(0, 3, three, rps=34.0), hpa.initial_state())[1].last_proposal == 4
    )  # ceil(3.4)
