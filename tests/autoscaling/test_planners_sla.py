"""SLA planner: cadence, direction of its sizing with load / ITL target / GPU type, corrections."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.autoscaling import AutoscalerContext, build_autoscalers
from gpuscale.autoscaling.cadence import Sums
from gpuscale.autoscaling.capacity import decode_batch_at_itl, prefill_utilization_at_ttft
from gpuscale.autoscaling.planner_sla import Observation, SlaPlanner, SlaPlannerParams
from gpuscale.autoscaling.predictors import ArimaPredictor, ConstantPredictor
from gpuscale.errors import UserInputError
from gpuscale.serving.performance import StepCost

from .planner_views import context, fleet_view

L40S = context("L40S")
H100 = context("H100-SXM")


def planner(ctx=L40S, **params) -> SlaPlanner:
    params.setdefault("predictor", ConstantPredictor())
    params.setdefault("max_gpu_budget", 64)
    return SlaPlanner(SlaPlannerParams(**params), ctx)


def size(
    p: SlaPlanner, rate: float, isl: float = 1000.0, osl: float = 200.0, window: Sums = Sums()
) -> int:
    return p.plan((Observation(rate, isl, osl),), window).replicas


def test_decides_only_every_adjustment_interval_on_the_interval_mean():
    p = planner(adjustment_interval_s=180, metric_pulling_interval_s=10)
    state, current, log = p.initial_state(), 1, []
    for k in range(1, 37):  # ticks at 10, 20, ... 360 s
        rate = 2.0 if k <= 9 else 30.0  # the mean over the first interval is 16 req/s
        view = fleet_view(
            10.0 * k,
            current,
            request_rate_per_s=rate,
            prompt_tokens_mean=1000,
            output_tokens_mean=200,
        )
        desired, state = p.decide(view, state)
        if desired is not None:
            current = desired
            log.append((10 * k, desired))
    assert [t for t, _ in log] == [180, 360]
    assert log[0][1] == size(p, 16.0) and log[1][1] == size(p, 30.0) > log[0][1]
    assert state.history[0].rate_per_s == pytest.approx(16.0)
    assert state.history[1].rate_per_s == pytest.approx(30.0)
    assert len(state.history) == 2 and state.tick == 36


@settings(max_examples=40, deadline=None)
@given(
    r1=st.floats(0.0, 60.0),
    r2=st.floats(0.0, 60.0),
    role=st.sampled_from(["serve", "prefill", "decode"]),
)
def test_more_load_never_means_fewer_replicas(r1, r2, role):
    p = planner(context("L40S", role=role))
    lo, hi = sorted((r1, r2))
    assert size(p, lo) <= size(p, hi)


def test_load_raises_the_count_and_zero_load_keeps_min_endpoint():
    p = planner()
    counts = [size(p, r) for r in (0.0, 2.0, 10.0, 30.0)]
    assert counts[0] == 1 and counts[-1] > counts[1]
    assert size(planner(min_endpoint=2), 0.0) == 2


@settings(max_examples=30, deadline=None)
@given(itl1=st.floats(0.02, 0.2), itl2=st.floats(0.02, 0.2))
def test_a_tighter_itl_target_never_means_fewer_decode_replicas(itl1, itl2):
    tight, loose = sorted((itl1, itl2))
    ctx = context("L40S", role="decode")
    assert size(planner(ctx, itl_target_s=tight), 20.0) >= size(
        planner(ctx, itl_target_s=loose), 20.0
    )


def test_itl_target_moves_the_count_and_only_for_roles_that_decode():
    assert size(planner(itl_target_s=0.025), 20.0) > size(planner(itl_target_s=0.1), 20.0)
    prefill = context("L40S", role="prefill")
    assert size(planner(prefill, itl_target_s=0.025), 20.0) == size(
        planner(prefill, itl_target_s=0.1), 20.0
    )


def test_isl_sizes_prefill_and_osl_sizes_decode():
    pre, dec = planner(context("L40S", role="prefill")), planner(context("L40S", role="decode"))
    assert size(pre, 20.0, isl=4000) > size(pre, 20.0, isl=500)
    assert size(pre, 20.0, osl=50) == size(pre, 20.0, osl=800)
    assert size(dec, 20.0, osl=800) > size(dec, 20.0, osl=100)


def test_a_faster_gpu_needs_fewer_replicas():
    for rate in (5.0, 20.0, 40.0):
        assert size(planner(H100), rate) <= size(planner(L40S), rate)
    assert size(planner(H100), 40.0) < size(planner(L40S), 40.0)


def test_gpu_budget_caps_replicas_by_gpus_per_replica():
    tp2 = context("H100-SXM", tp=2)
    assert size(planner(tp2, max_gpu_budget=8), 500.0) == 4
    with pytest.raises(UserInputError, match="below min_endpoint"):
        planner(tp2, max_gpu_budget=1)


def test_unmeetable_ttft_gets_dynamos_sla_floor():
    # 16k-token prompts take ~1 s to prefill on an L40S; a 0.1 s target can never be met, so
    # even a trickle of requests gets ceil(min_ttft / target) prefill replicas.
    p = planner(context("L40S", role="prefill"), ttft_target_s=0.1)
    decision = p.plan((Observation(0.01, 16000, 100),), Sums())
    assert not decision.capacity.ttft_feasible
    assert decision.replicas == -(-decision.capacity.min_ttft_s // 0.1)


def test_measured_itl_above_the_model_adds_decode_replicas():
    p = planner(context("L40S", role="decode"))
    last = Observation(20.0, 1000, 200)
    expected = p.cost.decode_step_s(50, 50 * (1000 + 100))
    as_modelled = Sums().add(itl=expected, batch=50.0, waiting=0.0)
    slower = Sums().add(itl=1.8 * expected, batch=50.0, waiting=0.0)
    d0, d1 = p.plan((last,), as_modelled), p.plan((last,), slower)
    assert d0.decode_correction == pytest.approx(1.0) and d1.decode_correction == pytest.approx(1.8)
    assert d1.replicas > d0.replicas
    queued = Sums().add(itl=1.8 * expected, batch=50.0, waiting=12.0)  # overload, not model error
    assert p.plan((last,), queued).decode_correction == 1.0
    way_off = Sums().add(itl=50 * expected, batch=50.0, waiting=0.0)
    assert p.plan((last,), way_off).decode_correction == 2.0  # max_correction_factor
    assert (
        planner(context("L40S", role="decode"), no_correction=True)
        .plan((last,), slower)
        .decode_correction
        == 1.0
    )


def test_ttft_below_the_model_lowers_prefill_load_but_above_it_never_raises_it():
    p = planner(context("L40S", role="prefill"))
    last = Observation(60.0, 3000, 200)
    base = p.plan((last,), Sums()).replicas
    fast = p.plan((last,), Sums().add(ttft=0.01)).replicas  # far below the unloaded prefill time
    slow = p.plan((last,), Sums().add(ttft=30.0)).replicas
    assert fast < base and slow == base


def test_the_predictor_looks_ahead_on_a_ramp():
    ramp = tuple(Observation(2.0 + 3.0 * k, 1000, 200) for k in range(8))  # next: 26 req/s
    arima = planner(predictor=ArimaPredictor()).plan(ramp, Sums())
    const = planner().plan(ramp, Sums())
    assert arima.predicted.rate_per_s == pytest.approx(26.0)
    assert const.predicted.rate_per_s == pytest.approx(23.0)
    assert arima.replicas >= const.replicas


def test_targets_come_from_params_then_scenario_slo_then_dynamo_defaults():
    assert planner(ttft_target_s=0.3).ttft_s == 0.3
    assert planner(context(ttft_s=1.5, tpot_s=0.07)).itl_s == 0.07
    bare = planner(context(ttft_s=None, tpot_s=None))
    assert (bare.ttft_s, bare.itl_s) == (0.5, 0.05)


def test_needs_hardware_and_builds_through_the_registry():
    with pytest.raises(UserInputError, match="hardware"):
        build_autoscalers(SlaPlannerParams(), AutoscalerContext())
    (ctrl,) = build_autoscalers(SlaPlannerParams(), L40S)
    assert ctrl.period_s == 10.0 and isinstance(ctrl, SlaPlanner)


def test_capacity_pieces_meet_their_targets_exactly_at_the_edge():
    cost = StepCost(L40S.hardware)
    for itl in (0.025, 0.03, 0.05):
        b, ok = decode_batch_at_itl(cost, 1500.0, itl, 256)
        assert ok and cost.decode_step_s(b, b * 1500.0) <= itl
        assert b == 256 or cost.decode_step_s(b + 1, (b + 1) * 1500.0) > itl
    assert decode_batch_at_itl(cost, 1500.0, 1e-4, 256) == (1, False)
    # M/D/1: S_min + rho S / (2 (1 - rho)) equals the target at the returned utilisation.
    rho = prefill_utilization_at_ttft(0.2, 0.3, 1.0)
    assert 0.3 + rho * 0.2 / (2 * (1 - rho)) == pytest.approx(1.0)
    assert prefill_utilization_at_ttft(0.2, 1.2, 1.0) is None
