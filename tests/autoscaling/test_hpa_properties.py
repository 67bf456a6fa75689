"""Invariants of the HPA controller, checked with hypothesis."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.autoscaling.base import PodMetrics
from gpuscale.autoscaling.behavior import Behavior, ScalingPolicy, ScalingRules
from gpuscale.autoscaling.hpa import HpaController, HpaParams, MetricSpec

from .hpa_views import view

GPU = "DCGM_FI_DEV_GPU_UTIL"
Q = "vllm:num_requests_waiting"

policies = st.lists(
    st.builds(ScalingPolicy, type=st.sampled_from(["Pods", "Percent"]), value=st.integers(1, 200),
              period_s=st.integers(1, 120)),
    min_size=1, max_size=3,
).map(tuple)
rules = st.builds(ScalingRules, stabilization_window_s=st.none() | st.integers(0, 120),
                  select_policy=st.none() | st.sampled_from(["Max", "Min", "Disabled"]),
                  policies=st.none() | policies, tolerance_frac=st.none() | st.floats(0, 0.5))
behaviors = st.none() | st.builds(
    Behavior, scale_up=st.none() | rules, scale_down=st.none() | rules
)


@settings(max_examples=150, deadline=None)
@given(
    min_replicas=st.integers(1, 5),
    span=st.integers(0, 20),
    start=st.integers(0, 30),
    behavior=behaviors,
    loads=st.lists(st.floats(0, 500, allow_nan=False), min_size=1, max_size=12),
    missing=st.integers(0, 3),
)
def test_desired_replicas_stay_within_min_and_max(
    min_replicas, span, start, behavior, loads, missing
):
    max_replicas = min_replicas + span
    metrics = (
        MetricSpec(type="Pods", metric=Q, target={"type": "AverageValue", "value": 3}),
        MetricSpec(
            type="External", query={"metric": Q}, target={"type": "AverageValue", "value": 5}
        ),
    )
    hpa = HpaController(
        HpaParams(
            min_replicas=min_replicas, max_replicas=max_replicas, metrics=metrics, behavior=behavior
        )
    )
    state, current = hpa.initial_state(), start
    for k, load in enumerate(loads):
        pod_list = [
            PodMetrics(f"p{i}", "Running", True, {} if i < missing else {Q: load / max(current, 1)})
            for i in range(current)
        ]
        desired, state = hpa.decide(view(15.0 * k, current, pod_list), state)
        if current == 0:  # ScalingDisabled: the HPA never moves a target parked at 0
            assert desired is None
            continue
        if desired is not None:
            assert min_replicas <= desired <= max_replicas
            current = desired
        assert min_replicas <= current <= max_replicas or current == start


@settings(max_examples=200, deadline=None)
@given(util=st.lists(st.floats(95, 100), min_size=1, max_size=32), queue_per_pod=st.floats(20, 200))
def test_gpu_duty_cycle_never_scales_up_while_queue_metric_does(util, queue_per_pod):
    """The DCGM duty-cycle trap (reference section 8): GPU_UTIL pins at 95-100 % under any load.

    With target AverageValue 95 the ratio stays in [1, 100/95 = 1.053], inside the 0.1
    tolerance, so the HPA holds however long the queue is; an HPA on the queue scales up.
    """
    n = len(util)
    pod_list = [
        PodMetrics(f"p{i}", "Running", True, {GPU: u, Q: queue_per_pod}) for i, u in enumerate(util)
    ]
    gpu_hpa = HpaController(HpaParams(max_replicas=1000, metrics=(
        MetricSpec(type="Pods", metric=GPU, target={"type": "AverageValue", "value": 95}),)))
    queue_hpa = HpaController(HpaParams(max_replicas=1000, metrics=(
        MetricSpec(type="Pods", metric=Q, target={"type": "AverageValue", "value": 5}),)))
    gpu_desired, gpu_state = gpu_hpa.decide(view(0, n, pod_list), gpu_hpa.initial_state())
    assert gpu_desired is None and gpu_state.last_proposal == n
    queue_desired, _ = queue_hpa.decide(view(0, n, pod_list), queue_hpa.initial_state())
    assert queue_desired is not None and queue_desired > n
