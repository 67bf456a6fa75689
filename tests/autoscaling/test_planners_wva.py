"""WVA saturation (V1) analyzer, the variant choice, and the controller's cadence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuscale.autoscaling.base import PodMetrics
from gpuscale.autoscaling.wva import Variant, WvaController, WvaParams, analyze, pick_variant

from .planner_views import fleet_view, vllm_pods

P = WvaParams()


@pytest.mark.parametrize("kv, queue, step, why", [
    ([0.5, 0.6], [1, 1], 0, "steady"),  # spare kv 0.25, q 4; after removal kv 1.1 -> not safe
    ([0.75, 0.72], [0, 0], 1, "spare capacity below trigger"),  # spare kv 0.065 < 0.10
    ([0.3, 0.3], [2.5, 2.5], 1, "spare capacity below trigger"),  # spare queue 2.5 < 3
    ([0.85, 0.9], [0, 0], 1, "all replicas saturated"),
    ([0.8, 0.1], [0, 6], 1, "all replicas saturated"),  # kv >= 0.80 and queue >= 5 saturate
    ([0.1, 0.1, 0.1], [0, 0, 0], -1, "safe to remove one replica"),  # 0.3/2 = 0.15 -> spare 0.65
    ([0.1], [0], 0, "steady"),  # N = 1 never scales down
    ([], [], 0, "no ready replicas"),
])
def test_analyzer_semantics(kv, queue, step, why):
    result = analyze(kv, queue, P)
    assert (result.step, result.reason) == (step, why)


def test_scale_down_simulation_uses_total_load_over_one_fewer_replica():
    # Three replicas at 0.25: spread over two = 0.375, spare 0.425 >= 0.10 -> safe.
    assert analyze([0.25] * 3, [0.0] * 3, P).step == -1
    # Queue 1.1 each: over two = 1.65, spare 3.35 >= 3 -> safe; 1.5 each: 2.25, spare 2.75 < 3 ->
    # not.
    assert analyze([0.1] * 3, [1.1] * 3, P).step == -1
    assert analyze([0.1] * 3, [1.5] * 3, P).step == 0


def test_saturated_replicas_are_left_out_of_the_spare_average_and_the_removal_check():
    # One replica saturated by its queue, two idle: no scale-up. The documented removal check
    # spreads only the non-saturated replicas' load (over 2 - 1), so it even removes one while a
    # replica is saturated: the analyzer trusts the router to move the queue.
    result = analyze([0.1, 0.1, 0.2], [0, 0, 9], P)
    assert result.step == -1 and result.spare_queue == 5.0


VARIANTS = [
    Variant("h100", cost_usd_per_hour=12.0, capacity=3.0, replicas=2),
    Variant("l40s", cost_usd_per_hour=4.0, capacity=1.0, replicas=1),
    Variant("a100", cost_usd_per_hour=6.0, capacity=1.5, replicas=0),
]


def test_cheapest_variant_first_up_and_most_expensive_first_down():
    assert pick_variant(VARIANTS, +1) == "l40s"
    assert pick_variant(VARIANTS, -1) == "h100"


def test_pending_or_full_variants_get_no_scale_up_and_empty_ones_no_scale_down():
    pending = [Variant("l40s", 4.0, 1.0, replicas=1, pending=1)] + VARIANTS[::2]
    assert pick_variant(pending, +1) == "a100"
    full = [Variant("l40s", 4.0, 1.0, replicas=3, max_replicas=3)] + VARIANTS[::2]
    assert pick_variant(full, +1) == "a100"
    assert pick_variant([Variant("h100", 12.0, 3.0, replicas=0), VARIANTS[2]], -1) is None
    assert pick_variant([], +1) is None


@given(
    st.lists(
        st.tuples(st.floats(0, 50), st.floats(0.1, 10), st.integers(0, 5)), min_size=1, max_size=6
    )
)
def test_choice_is_the_cost_extreme_and_ignores_list_order(rows):
    variants = [Variant(f"v{i}", c, cap, replicas=r) for i, (c, cap, r) in enumerate(rows)]
    up, down = pick_variant(variants, +1), pick_variant(variants, -1)
    by_name = {v.name: v for v in variants}
    assert by_name[up].cost_usd_per_hour == min(v.cost_usd_per_hour for v in variants)
    if down is not None:
        assert by_name[down].cost_usd_per_hour == max(
            v.cost_usd_per_hour for v in variants if v.replicas > 0
        )
    assert (pick_variant(variants[::-1], +1), pick_variant(variants[::-1], -1)) == (up, down)


def drive(ctrl: WvaController, kv_at, until_s: float, start: int = 2) -> list[tuple[float, int]]:
    state, current, log = ctrl.initial_state(), start, []
    for k in range(1, int(until_s / ctrl.period_s) + 1):
        t = k * ctrl.period_s
        desired, state = ctrl.decide(
            fleet_view(t, current, vllm_pods(current, kv=kv_at(t), waiting=0.0)), state
        )
        if desired is not None:
            current = desired
            log.append((t, current))
    return log


def test_decides_every_60_s_on_the_one_minute_peak():
    ctrl = WvaController(P)
    # KV 0.75 only at the 45-s scrape of each minute: the max over [1m] sees it, so it scales up.
    assert drive(ctrl, lambda t: 0.75 if t % 60 == 45 else 0.2, until_s=180) == [
        (60.0, 3),
        (120.0, 4),
        (180.0, 5),
    ]
    # Low everywhere: -1 per minute down to min_replicas.
    assert drive(ctrl, lambda t: 0.05, until_s=240, start=3) == [(60.0, 2), (120.0, 1)]


def test_pending_pods_block_scale_up_and_zero_scales_from_the_gateway_queue():
    ctrl = WvaController(P)
    state = ctrl.initial_state()
    starting = vllm_pods(2, kv=0.9) + (PodMetrics("p9", "Pending", False, {}),)
    for k in range(1, 5):
        desired, state = ctrl.decide(fleet_view(15.0 * k, 3, starting), state)
    assert desired is None and state.last.step == 1  # wanted one more, but a pod is pending
    zero = WvaController(WvaParams(min_replicas=0))
    state = zero.initial_state()
    for k in range(1, 5):
        desired, state = zero.decide(fleet_view(15.0 * k, 0, (), gateway_queue=3.0), state)
    assert desired == 1
