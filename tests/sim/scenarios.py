"""Small scenarios for engine tests (short horizons, so the suite stays fast)."""

from __future__ import annotations

from gpuscale.scenario import Scenario, scenario_from_dict


def small_scenario(*, rate_per_s: float = 4.0, duration_s: float = 300.0, seed: int = 1,
                   strategies: list[dict] | None = None, **overrides) -> Scenario:
    data = {
        "name": "small",
        "seed": seed,
        "duration_s": duration_s,
        "drain_s": 300.0,
        "model": {"name": "Llama-3.1-8B", "precision": "bf16", "tp": 1},
        "cluster": {"instance_type": "g6e.24xlarge", "ready_nodes": 1, "max_nodes": 3,
                    "node_launch": {"kind": "fixed", "value_s": 120.0}},
        "initial_replicas": 1,
        "workload": {
            "kind": "piecewise",
            "phases": [
                {"name": "quiet", "duration_s": duration_s / 3, "rate_per_s": rate_per_s / 4},
                {"name": "burst", "duration_s": duration_s / 3, "rate_per_s": rate_per_s},
                {"name": "tail", "duration_s": duration_s / 3, "rate_per_s": rate_per_s / 2},
            ],
            "prompt_tokens": {"kind": "lognormal", "median_tokens": 800, "p90_tokens": 2000,
                              "max_tokens": 8000},
            "output_tokens": {"kind": "lognormal", "median_tokens": 150, "p90_tokens": 400,
                              "max_tokens": 1000},
        },
        "strategies": strategies or [
            {"name": "fixed-1", "autoscaler": {"kind": "fixed", "replicas": 1}},
            {"name": "keda-queue", "autoscaler": {
                "kind": "keda", "min_replica_count": 1, "max_replica_count": 8,
                "triggers": [{"query": {"metric": "vllm:num_requests_waiting",
                                        "aggregation": "sum"}, "threshold": 3}]}},
        ],
    }
    data.update(overrides)
    return scenario_from_dict(data)
