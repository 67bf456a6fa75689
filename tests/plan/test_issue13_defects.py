"""Issue 13's plan defects, each with the behaviour that was wrong (the oracle's are in
tests/metrics/test_oracle.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuscale.catalog import get_instance_type, get_model
from gpuscale.catalog.specs import Precision
from gpuscale.plan import make_plan, plan_input_from_dict
from gpuscale.plan.model import EvidenceRow
from gpuscale.plan.report import render_plan_md
from gpuscale.plan.search import SearchBudget
from gpuscale.plan.sizing import (
    choose_parallelism,
    engine_config_of,
    replica_capacity,
    replica_hardware,
    traffic_stats,
)
from gpuscale.plan.warm_pool import boundary_found, search_min_replicas, simulate_candidate

from .helpers import example_dict


def _row(m, ok):
    return EvidenceRow(m, 1.0 if ok else 9.0, 0.05, 1.0 if ok else 0.5, 0, float(m), ok)


def _plan(data, simulate=False, budget=None):
    return make_plan(plan_input_from_dict(data), Path("."), simulate=simulate, budget=budget)


def test_defect3_requests_still_decoding_at_the_end_are_not_drops():
    data = {
        "name": "long-outputs", "seed": 0, "duration_s": 60.0, "drain_s": 30.0,
        "model": {"name": "Llama-3.1-8B", "precision": "fp8", "tp": 1},
        "cluster": {"instance_type": "p5.48xlarge", "ready_nodes": 1, "max_nodes": 1},
        "workload": {"kind": "poisson", "duration_s": 60.0, "rate_per_s": 1.0,
                     "prompt_tokens": {"kind": "fixed", "value": 500},
                     "output_tokens": {"kind": "fixed", "value": 30000}},
        "slo": {"ttft_s": 5.0, "tpot_s": 0.2}, "initial_replicas": 1,
        "strategies": [{"name": "fixed", "autoscaler": {"kind": "fixed", "replicas": 1}}],
    }
    row = simulate_candidate(data, Path("."), 5.0)
    assert row.dropped == 0  # all of them are still decoding, none was dropped


def test_defect3_the_candidate_drain_outlasts_the_longest_output():
    data = example_dict("llama70b-fp8-h100-chat")
    data["workloads"][0]["traffic"]["output_tokens"] = {"kind": "fixed", "value": 32000}
    from gpuscale.plan.warm_pool import CandidateSetup, drain_s
    plan = plan_input_from_dict(data)
    stats = traffic_stats(plan.workloads[0], Path("."), 3600.0)
    setup = CandidateSetup("p5.48xlarge", 2, 4, 8, (), 300, None, 2.0, 0.1)
    assert drain_s(stats, setup) >= 32000 * 0.1


def test_defect4_all_passing_searches_lower_past_the_start():
    calls = []
    found, rows = search_min_replicas(lambda m: calls.append(m) or _row(m, m >= 2), 20, 40,
                                      max_candidates=8)
    assert found == 2 and boundary_found(found, rows)


def test_defect4_none_passing_searches_up_to_the_gpu_limit_or_fails():
    found, rows = search_min_replicas(lambda m: _row(m, m >= 30), 3, 40, max_candidates=32)
    assert found == 30 and boundary_found(found, rows)
    found, rows = search_min_replicas(lambda m: _row(m, False), 3, 40, max_candidates=32)
    assert found is None and max(r.min_replicas for r in rows) == 40


def test_defect4_no_smallest_claim_without_the_boundary():
    from gpuscale.plan.inputs import SloInput
    from gpuscale.plan.search import FloorSearch
    from gpuscale.plan.sizing_search import _floor_method
    unbounded = FloorSearch("x", "queue depth, queue 4", 9, False, (_row(9, True),))
    text = _floor_method(unbounded, SloInput(), 40, 3, 1, 9)
    assert "smallest" not in text and "boundary below it was not reached" in text
    assert "does NOT meet" in _floor_method(None, SloInput(), 40, 3, 1, 40)


def test_defect5_unreachable_ttft_is_reported_and_tp_widened():
    data = example_dict("llama70b-fp8-h100-chat")
    w = data["workloads"][0]
    w["traffic"]["prompt_tokens"] = {"kind": "fixed", "value": 30000}
    w["traffic"]["output_tokens"] = {"kind": "fixed", "value": 100}
    narrow = _plan(data)  # TP2 prefills 30k tokens in ~2.5 s, over the 2 s SLO
    role = narrow.roles[0]
    data["slo"]["ttft_p99_s"] = 60.0
    relaxed = _plan(data).roles[0]
    assert role.tp > relaxed.tp  # widened for the TTFT SLO
    data["slo"]["ttft_p99_s"] = 0.5  # no TP inside a node prefills 30k tokens in 0.5 s
    hopeless = _plan(data)
    assert any(d.subject.endswith("TTFT reachable") and "can never meet" in d.choice
               for d in hopeless.decisions)
    assert any("reachable bound" in r.instead for r in hopeless.refusals)


def test_defect7_the_simulated_floor_fills_whole_nodes():
    data = example_dict("llama70b-fp8-h100-chat")
    data["simulation"] = {"quiet_before_burst_s": 120, "after_burst_s": 120, "max_candidates": 6}
    plan = _plan(data, simulate=True)
    role = plan.roles[0]
    per_node = get_instance_type(role.instance_type).num_gpus // role.gpus_per_replica
    assert role.min_replicas % per_node == 0


def test_defect8_deepseek_v3_fp8_fits_one_h200_node():
    it = get_instance_type("p5en.48xlarge")
    par = choose_parallelism(get_model("DeepSeek-V3"), Precision.FP8, it, 8)
    assert (par.tp, par.pp) == (8, 1)


def test_defect9_llama_8b_on_one_l4_is_tp1_with_sane_throughput():
    it = get_instance_type("g6.2xlarge")
    model = get_model("Llama-3.1-8B")
    data = example_dict("llama70b-fp8-h100-chat")
    data["cluster"] = {"name": "l4", "instance_types": ["g6.2xlarge"], "max_gpus": 64}
    data["workloads"][0].update(model="Llama-3.1-8B", precision="bf16")
    data["workloads"][0]["traffic"]["mean_rate_per_s"] = 6
    plan = _plan(data)
    role = plan.roles[0]
    assert (role.tp, role.pp, role.pods_per_replica) == (1, 1, 1)
    assert role.capacity_rps > 0.5
    cap = replica_capacity(replica_hardware(model, Precision.BF16, it, 1), 1000, 150, 0.2)
    assert cap.decode_batch > 1


def test_defect10_disaggregated_plan_md_tells_one_story():
    plan = make_plan(plan_input_from_dict(example_dict("disaggregated-prefill-decode")), Path("."))
    text = render_plan_md(plan, [])
    assert "approximation until the simulator models" not in text
    roles = {r.role: r.min_replicas for r in plan.roles}
    assert f"**rag-prefill**: min replicas {roles['prefill']}" in text
    assert f"**rag-decode**: min replicas {roles['decode']}" in text
    assert not any(d.subject == "rag: min replicas" for d in plan.decisions)


@pytest.mark.parametrize("gpu_type", ["p5.48xlarge", "g6.2xlarge", "p4d.24xlarge"])
def test_defect11_plan_and_simulate_share_the_engine_defaults(gpu_type):
    from gpuscale.scenario import scenario_from_dict
    from gpuscale.sim.replica_setup import engine_config
    scenario = scenario_from_dict(
        {
            "name": "x",
            "duration_s": 60.0,
            "model": {"name": "Llama-3.1-8B", "precision": "fp8", "tp": 1},
            "cluster": {"instance_type": gpu_type, "ready_nodes": 1},
            "workload": {"kind": "poisson", "duration_s": 60.0, "rate_per_s": 1.0},
            "strategies": [{"name": "f", "autoscaler": {"kind": "fixed", "replicas": 1}}],
        },
        source="x",
    )
    it = get_instance_type(gpu_type)
    hw = replica_hardware(get_model("Llama-3.1-8B"), Precision.FP8, it, 1)
    assert engine_config_of(hw) == engine_config(scenario, hw)


def test_the_time_budget_stops_the_search_and_says_so():
    data = example_dict("llama70b-fp8-h100-chat")
    data["simulation"] = {"quiet_before_burst_s": 120, "after_burst_s": 120, "max_candidates": 4}
    ticks = iter(np.arange(0.0, 1e6, 100.0))
    budget = SearchBudget(time_budget_s=1.0, clock=lambda: float(next(ticks)))
    plan = _plan(data, simulate=True, budget=budget)
    assert "time budget ended the search" in plan.warm_pools["chat"].method
    configs = {r.config for r in plan.warm_pools["chat"].evidence}
    # one candidate, then stopped (besides the fixed fleets and the always-on plan they give)
    assert len([c for c in configs if "fixed" not in c and "always on" not in c]) == 1
