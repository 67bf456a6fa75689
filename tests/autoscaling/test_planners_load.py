"""Dynamo load planner: presets, thresholds, +-1 per interval, the two 3-interval rules,
blocking."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from gpuscale.autoscaling import AutoscalerSpec, build_autoscalers
from gpuscale.autoscaling.planner_load import LoadPlanner, LoadPlannerParams

from .planner_views import context, fleet_view, vllm_pods


def load_planner(role: str = "decode", **params) -> LoadPlanner:
    return LoadPlanner(LoadPlannerParams(**params), context(role=role))


def run(
    p: LoadPlanner, signal, until_s: float, start: int = 1, ready=None
) -> list[tuple[float, int]]:
    """Tick p on its period; `signal(t, n)` gives (kv, waiting per pod); changes apply at once."""
    state, current, log = p.initial_state(), start, []
    for k in range(1, int(until_s / p.period_s) + 1):
        t = k * p.period_s
        kv, waiting = signal(t, current)
        n_ready = current if ready is None else ready(t, current)
        pods = vllm_pods(n_ready, kv=kv, waiting=waiting) + vllm_pods(
            current - n_ready, ready=False
        )
        desired, state = p.decide(fleet_view(t, current, pods), state)
        if desired is not None:
            current = desired
            log.append((t, current))
    return log


def test_presets_fill_unset_fields_and_explicit_values_win():
    docs = TypeAdapter(AutoscalerSpec).validate_python({"kind": "load_planner"})
    late = TypeAdapter(AutoscalerSpec).validate_python(
        {"kind": "load_planner", "defaults": "late-2025"}
    )
    assert (
        docs.adjustment_interval_s,
        docs.metric_pulling_interval_s,
        docs.prefill_queue_scale_up_threshold,
    ) == (30, 1, 0.5)
    assert (
        late.adjustment_interval_s,
        late.metric_pulling_interval_s,
        late.prefill_queue_scale_up_threshold,
    ) == (180, 10, 5.0)
    assert (late.kv_scale_up_threshold_frac, late.kv_scale_down_threshold_frac) == (0.9, 0.5)
    mixed = LoadPlannerParams(defaults="late-2025", adjustment_interval_s=60)
    assert mixed.adjustment_interval_s == 60 and mixed.metric_pulling_interval_s == 10
    with pytest.raises(ValidationError, match="whole multiple"):
        LoadPlannerParams(adjustment_interval_s=25, metric_pulling_interval_s=10)
    with pytest.raises(ValidationError, match="below"):
        LoadPlannerParams(kv_scale_down_threshold_frac=0.95)


def test_high_kv_adds_one_replica_per_interval_up_to_the_budget():
    log = run(load_planner(), lambda t, n: (0.95, 0.0), until_s=300)
    assert log == [(30.0 * k, 1 + k) for k in range(1, 8)]  # 8 GPUs / 1 per replica = 8


def test_interval_mean_not_the_last_sample_decides():
    # KV is 0.99 for 5 s and 0.5 for 25 s of each interval: the mean 0.58 is between the thresholds.
    log = run(
        load_planner(), lambda t, n: (0.99 if t % 30 > 25 or t % 30 == 0 else 0.5, 0.0), until_s=120
    )
    assert log == []


def test_no_decode_scale_down_for_three_intervals_after_a_scale_up():
    # High KV until 30 s (one scale-up at 30 s), then low: scale-down waits for intervals 2-4 to
    # pass.
    log = run(load_planner(), lambda t, n: (0.95 if t <= 30 else 0.1, 0.0), until_s=240, start=2)
    assert log == [(30.0, 3), (150.0, 2), (180.0, 1)]


def test_low_kv_removes_one_per_interval_down_to_the_floor():
    log = run(load_planner(), lambda t, n: (0.1, 0.0), until_s=300, start=4)
    assert log == [(30.0, 3), (60.0, 2), (90.0, 1)]


def test_no_decision_while_a_change_is_in_progress():
    # New pods take 100 s to become ready: nothing is decided until all pods serve.
    born: dict[int, float] = {}

    def ready(t, n):
        for i in range(n):
            born.setdefault(i, t)
        return sum(1 for i in range(n) if t - born[i] >= 100 or i == 0)

    log = run(load_planner(), lambda t, n: (0.95, 0.0), until_s=200, ready=ready)
    assert log == [(30.0, 2), (150.0, 3)]


def test_prefill_queue_thresholds_and_the_trend_rule():
    p = load_planner(role="prefill")
    assert run(p, lambda t, n: (0.0, 0.6 * n), until_s=60) == [
        (30.0, 2),
        (60.0, 3),
    ]  # waiting per pod 0.6 > 0.5
    assert run(p, lambda t, n: (0.0, 0.1), until_s=60, start=3) == [(30.0, 2), (60.0, 1)]
    # Queue per worker 3.0 then 1.0: above 0.5, but the trend (-2 per interval) predicts
    # it below 0.5 within 3 intervals, so the second interval does not scale up.
    falling = run(p, lambda t, n: (0.0, 3.0 if t <= 30 else 1.0), until_s=60, start=1)
    assert falling == [(30.0, 2)]


def test_prefill_queue_counts_requests_held_at_the_gateway():
    p = load_planner(role="prefill")
    state = p.initial_state()
    for k in range(1, 31):
        desired, state = p.decide(
            fleet_view(float(k), 2, vllm_pods(2, waiting=0.0), gateway_queue=4.0), state
        )
    assert desired == 3  # (0 + 4) / 2 workers = 2 > 0.5


def test_late_2025_preset_is_slower_and_needs_a_deeper_queue():
    p = load_planner(role="prefill", defaults="late-2025")
    assert run(p, lambda t, n: (0.0, 2.0), until_s=540) == []  # 2 per worker < 5.0
    assert run(p, lambda t, n: (0.0, 6.0), until_s=540) == [(180.0, 2), (360.0, 3), (540.0, 4)]


def test_gpu_budget_counts_gpus_per_replica():
    (ctrl,) = build_autoscalers(LoadPlannerParams(max_gpu_budget=8), context("H100-SXM", tp=4))
    assert ctrl.max_replicas == 2 and ctrl.min_replicas == 1
