"""Warm-pool sizing: the search finds the boundary, and the size moves the right way when the
cold start or the burst factor grows (analytically and on the simulation engine)."""

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.plan import make_plan, plan_input_from_dict
from gpuscale.plan.model import EvidenceRow
from gpuscale.plan.sizing import TrafficStats
from gpuscale.plan.warm_pool import analytic_warm_pool, search_min_replicas

from .helpers import example_dict


def _row(m, ok):
    return EvidenceRow(m, 1.0 if ok else 9.0, 0.05, 1.0 if ok else 0.5, 0, float(m), ok)


@settings(max_examples=60, deadline=None)
@given(threshold=st.integers(1, 20), start=st.integers(1, 20), hi=st.integers(1, 20))
def test_search_returns_the_smallest_passing_size(threshold, start, hi):
    calls = []

    def evaluate(m):
        calls.append(m)
        return _row(m, m >= threshold)

    found, rows = search_min_replicas(evaluate, start, hi, max_candidates=32)
    assert found == (threshold if threshold <= hi else None)
    assert [r.min_replicas for r in rows] == sorted(set(calls))
    if found and found > 1:  # the evidence shows the failing size just below
        assert any(r.min_replicas == found - 1 and not r.meets_slo for r in rows)


def test_search_respects_the_candidate_budget():
    found, rows = search_min_replicas(lambda m: _row(m, m >= 50), 1, 100, max_candidates=4)
    assert found is None and len(rows) == 4


STATS = TrafficStats(10.0, 30.0, 5.0, 300.0, 3600.0, 1000.0, 150.0)


@settings(max_examples=50, deadline=None)
@given(reaction=st.floats(30, 1800), extra=st.floats(1, 1800), factor=st.floats(1.0, 4.0))
def test_analytic_estimate_grows_with_reaction_time_and_burst(reaction, extra, factor):
    base = analytic_warm_pool(STATS, 5.0, reaction, 2.0)
    assert analytic_warm_pool(STATS, 5.0, reaction + extra, 2.0) >= base
    burstier = replace(STATS, burst_rate_per_s=STATS.burst_rate_per_s * factor)
    assert analytic_warm_pool(burstier, 5.0, reaction, 2.0) >= base


def _simulated(cold_s, burst_factor):
    data = example_dict("llama70b-fp8-h100-chat")
    data["cluster"]["node_ready_s"] = 60
    w = data["workloads"][0]
    w["cold_start_s"] = cold_s
    w["traffic"].update(burst_factor=burst_factor, burst_duration_s=600, burst_period_s=7200,
                        diurnal_swing_frac=0.0)
    data["simulation"] = {"quiet_before_burst_s": 120, "after_burst_s": 120, "max_candidates": 6}
    plan = make_plan(plan_input_from_dict(data), Path("."))
    return plan.warm_pools["chat"]


@pytest.mark.slow
def test_simulated_warm_pool_grows_with_burst_factor():
    sizes = [_simulated(120, b).min_replicas for b in (1.5, 3.0, 5.0)]
    assert sizes[0] < sizes[1] < sizes[2]


@pytest.mark.slow
def test_simulated_warm_pool_does_not_shrink_when_cold_start_grows():
    fast, slow = _simulated(30, 3.0), _simulated(900, 3.0)
    assert slow.min_replicas >= fast.min_replicas
    assert slow.analytic_estimate >= fast.analytic_estimate
    # at a floor that fails in both (same scaler), the slow cold start is no better
    def failing(pool):
        first = pool.evidence[0].config
        return {r.min_replicas: r for r in pool.evidence if r.config == first and not r.meets_slo}
    both = failing(fast).keys() & failing(slow).keys()
    assert both  # the boundary's failing floor is simulated in both runs
    for m in both:
        f, s = failing(fast)[m], failing(slow)[m]
        assert s.ttft_p99_s >= f.ttft_p99_s and s.slo_attainment <= f.slo_attainment


def test_disaggregated_floors_are_checked_on_a_pd_simulation():
    data = example_dict("disaggregated-prefill-decode")
    plan = make_plan(plan_input_from_dict(data), Path("."))
    decision = next(
        d for d in plan.decisions if d.subject.endswith("prefill/decode floors, simulated")
    )
    roles = {r.role: r for r in plan.roles}
    assert (
        decision.choice
        == f"prefill {roles['prefill'].min_replicas}, decode {roles['decode'].min_replicas}"
    )
    assert "P99 TTFT" in decision.reason and "(meets)" in decision.reason


def test_pd_verification_raises_the_prefill_floor_until_the_slo_holds():
    from gpuscale.plan.warm_pool import verify_pd_floors

    def evaluate(prefill, decode):  # meets from 3 prefill replicas on
        return EvidenceRow(prefill + decode, 1.0 if prefill >= 3 else 9.0, 0.05, 1.0, 0,
                           float(prefill + decode), prefill >= 3)

    assert verify_pd_floors(evaluate, 1, 2, 5)[:2] == (3, 2)
    prefill, decode, rows = verify_pd_floors(evaluate, 1, 2, 2)  # budget runs out
    assert (prefill, decode, len(rows)) == (2, 2, 2) and not rows[-1].meets_slo
