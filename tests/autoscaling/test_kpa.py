"""Knative KPA: targets, window averages of the metric, rate bounds, panic entry/exit, scale to
zero."""

from __future__ import annotations

import math

import numpy as np
from pydantic import TypeAdapter

from gpuscale.autoscaling import AutoscalerSpec, build_autoscalers
from gpuscale.autoscaling.kpa import KpaController, KpaParams, scale_bounds

from .planner_views import fleet_view, vllm_pods


def kpa(**params) -> KpaController:
    (ctrl,) = build_autoscalers(
        TypeAdapter(AutoscalerSpec).validate_python({"kind": "kpa", **params})
    )
    return ctrl


def drive(ctrl: KpaController, total_at, until_s: float, start: int):
    """Ticks every 2 s; the revision's in-flight total is spread over the pods (all ready at
    once)."""
    state, current, log, states = ctrl.initial_state(), start, [], []
    for k in range(1, int(until_s / ctrl.period_s) + 1):
        t = k * ctrl.period_s
        total = total_at(t)
        pods = vllm_pods(current, running=total / current, waiting=0.0) if current else ()
        view = fleet_view(t, current, pods, gateway_queue=0.0 if current else total)
        desired, state = ctrl.decide(view, state)
        states.append((t, state))
        if desired is not None:
            current = desired
            log.append((t, current))
    return log, states


def test_targets_follow_knative_defaults():
    assert KpaParams().target_per_pod == 70.0  # 100 x 0.7
    assert KpaParams(container_concurrency=10).target_per_pod == 7.0
    assert KpaParams(metric="rps").target_per_pod == 140.0  # 200 x 0.7
    assert KpaParams(target=50).target_per_pod == 35.0
    assert KpaParams(target=0.001).target_per_pod == 0.01
    assert KpaParams().panic_window_s == 6.0


def test_rate_bounds():
    assert scale_bounds(10, 1000, 2) == (5, 10000)
    assert scale_bounds(3, 1000, 2) == (1, 3000)
    assert scale_bounds(0, 1000, 2) == (0, 1000)  # ready pods count as at least 1


def test_stable_decision_is_the_window_average_of_the_metric_not_of_proposals():
    # 10 pods at 700 in flight, then 1050 (x1.5: below the panic threshold).
    ctrl = kpa(min_scale=1)
    log, states = drive(ctrl, lambda t: 700.0 if t <= 100 else 1050.0, until_s=200, start=10)
    samples = [700.0 if 2 * k <= 100 else 1050.0 for k in range(1, 101)]
    counts = dict(log)
    current = 10
    for k in range(1, 101):
        t = 2.0 * k
        window = samples[max(0, k - 30):k]  # the last 60 s of 2-s ticks
        expected = math.ceil(np.mean(window) / 70.0)
        current = counts.get(t, current)
        assert current == max(expected, 5), t
    assert not any(s.panicking for _, s in states)
    reached = min(t for t, n in log if n == 15)
    assert reached - 100 > 40  # the average needs most of a stable window to catch up


def test_scale_down_is_limited_to_halving_per_tick():
    log, _ = drive(
        kpa(stable_window_s=6, min_scale=1),
        lambda t: 1400.0 if t <= 10 else 0.0,
        until_s=40,
        start=20,
    )
    previous = 20
    for _, n in log:
        assert n >= math.floor(previous / 2)
        previous = n
    assert log[-1][1] == 1


def test_panic_starts_at_twice_the_ready_pods_holds_the_peak_and_ends_after_a_stable_window():
    ctrl = kpa(min_scale=1)
    burst = lambda t: 420.0 if 100 < t <= 110 else 140.0  # noqa: E731
    # Hold the pod count at 2 (as if new pods were slow): decisions are then pure decider output.
    state, decisions = ctrl.initial_state(), {}
    for k in range(1, 121):
        t = 2.0 * k
        desired, state = ctrl.decide(fleet_view(t, 2, vllm_pods(2, running=burst(t) / 2)), state)
        decisions[t] = (desired, state.panicking)
    assert decisions[100.0] == (None, False)
    # First burst tick: panic window (96, 102] averages (140, 140, 420) -> 233 -> 4 pods = 2 x 2
    # ready.
    assert decisions[102.0] == (4, True)
    peak = max(d for d, _ in decisions.values() if d is not None)
    assert peak == 6  # ceil(420 / 70), reached once the 6-s window is all burst
    after = [(t, d, p) for t, (d, p) in decisions.items() if t > 110]
    # In panic the count never drops, though the load is back at the stable level.
    assert all(d == peak for t, d, p in after if p)
    # The condition last held at 114 s (the 6-s window (108, 114] still holds the 110-s burst
    # sample: mean 233 -> 4 pods); panic ends a stable window later, back to the stable count
    # (2, the pods it already has: no change).
    ends = min(t for t, d, p in after if not p)
    assert ends == 174.0 and decisions[ends] == (None, False)


def test_scale_to_zero_after_a_stable_window_of_activity_and_the_grace_period():
    log, _ = drive(kpa(), lambda t: 0.0, until_s=120, start=1)
    assert log == [(62.0, 0)]  # first tick at 2 s: active until 62 s; grace (30 s) already over
    log, _ = drive(kpa(), lambda t: 35.0 if t <= 100 else 0.0, until_s=240, start=1)
    # The stable average is 0 once the window (now-60, now] holds no traffic: at 160 s; grace 30 s.
    assert log == [(190.0, 0)]
    assert drive(kpa(enable_scale_to_zero=False), lambda t: 0.0, until_s=200, start=1)[0] == []
    assert drive(kpa(min_scale=1), lambda t: 0.0, until_s=200, start=1)[0] == []


def test_scale_from_zero_on_requests_the_gateway_holds():
    log, _ = drive(kpa(), lambda t: 0.0 if t < 10 else 5.0, until_s=12, start=0)
    assert log == [(10.0, 1)]


def test_history_stays_bounded_by_the_stable_window():
    _, states = drive(kpa(), lambda t: 50.0, until_s=600, start=1)
    assert max(len(s.history) for _, s in states) == 30
