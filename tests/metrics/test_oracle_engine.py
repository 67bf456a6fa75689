"""The one oracle, as `simulate` reports it, is a bound on autoscaled runs too (plans and
KEDA policies, not only fixed fleets): no run that meets the SLO spends fewer GPU-hours."""

from __future__ import annotations

from pathlib import Path

from gpuscale.metrics.oracle import SLO_ATTAINMENT_TARGET
from gpuscale.scenario import scenario_from_dict
from gpuscale.sim import simulate_scenario


def _keda(name: str, minimum: int, threshold: float) -> dict:
    return {"name": name, "autoscaler": {
        "kind": "keda", "polling_interval_s": 15.0, "min_replica_count": minimum,
        "max_replica_count": 16,
        "triggers": [{"query": {"metric": "vllm:num_requests_waiting", "aggregation": "sum"},
                      "threshold": threshold}]}}


def _scenario(rate_low: float, rate_high: float) -> dict:
    lengths = {"prompt_tokens": {"kind": "lognormal", "median_tokens": 1000, "p90_tokens": 2700},
               "output_tokens": {"kind": "lognormal", "median_tokens": 200, "p90_tokens": 800}}
    return {
        "name": "oracle-bound", "seed": 3, "duration_s": 1800.0, "drain_s": 300.0,
        "model": {"name": "Llama-3.1-8B", "precision": "fp8", "tp": 1},
        "cluster": {"instance_type": "p5.48xlarge", "ready_nodes": 1, "max_nodes": 2},
        "workload": {"kind": "piecewise", "phases": [
            {"name": "low", "duration_s": 900.0, "rate_per_s": rate_low},
            {"name": "high", "duration_s": 900.0, "rate_per_s": rate_high}], **lengths},
        "slo": {"ttft_s": 2.0, "tpot_s": 0.05},
        "initial_replicas": 2,
        "strategies": [_keda("keda-min1", 1, 4), _keda("keda-min2", 2, 2),
                       {"name": "fixed-4", "autoscaler": {"kind": "fixed", "replicas": 4}}],
    }


def test_no_run_meeting_the_slo_spends_less_than_the_oracle():
    scenario = scenario_from_dict(_scenario(6.0, 30.0), source="<test>")
    result, _ = simulate_scenario(scenario, Path("."))
    checked = 0
    for run in result.runs:
        s = run.summary
        assert s.oracle_gpu_hours > 0
        if s.slo_attainment >= SLO_ATTAINMENT_TARGET:
            checked += 1
            assert s.oracle_gpu_hours <= s.gpu_hours, run.name
    assert checked, "no run met the SLO; the test would prove nothing"
