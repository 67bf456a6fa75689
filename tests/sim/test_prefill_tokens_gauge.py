"""`gpuscale:num_prefill_tokens_waiting` sees long prompts that the request count hides."""

from __future__ import annotations

from pathlib import Path

from gpuscale.scenario import scenario_from_dict
from gpuscale.sim import simulate_scenario


def _scenario(metric: str, threshold: float) -> dict:
    return {
        "name": "prefill-gauge", "seed": 1, "duration_s": 900.0, "drain_s": 300.0,
        "model": {"name": "Llama-3.1-8B", "precision": "fp8", "tp": 1},
        "cluster": {"instance_type": "p5.48xlarge", "ready_nodes": 1, "max_nodes": 1},
        "workload": {"kind": "poisson", "duration_s": 900.0, "rate_per_s": 1.0,
                     "prompt_tokens": {"kind": "fixed", "value": 30000},
                     "output_tokens": {"kind": "fixed", "value": 50}},
        "slo": {"ttft_s": 5.0, "tpot_s": 0.1},
        "initial_replicas": 1,
        "strategies": [{"name": "keda", "autoscaler": {
            "kind": "keda", "polling_interval_s": 15.0, "min_replica_count": 1,
            "max_replica_count": 8,
            "triggers": [{"query": {"metric": metric, "aggregation": "sum"},
                          "threshold": threshold}]}}],
    }


def test_scaling_on_waiting_prefill_tokens_reacts_where_queue_depth_does_not():
    # Few long prompts wait at a time: under a queue threshold of 18 the fleet never grows,
    # while 18 requests' worth of waiting prompt tokens makes it grow.
    queue, _ = simulate_scenario(scenario_from_dict(
        _scenario("vllm:num_requests_waiting", 18), source="<test>"), Path("."))
    tokens, _ = simulate_scenario(scenario_from_dict(
        _scenario("gpuscale:num_prefill_tokens_waiting", 60_000), source="<test>"), Path("."))
    q, t = queue.runs[0].summary, tokens.runs[0].summary
    assert t.replicas.peak > q.replicas.peak
    assert q.replicas.peak == 1
    assert t.slo_attainment > q.slo_attainment + 0.05
