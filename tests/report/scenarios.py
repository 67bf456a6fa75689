"""Tiny scenarios shared by the report and sweep tests: an 8B model on one-GPU L40S nodes, a
burst that outruns one replica so the autoscaler, node launches and cold starts all show."""

from __future__ import annotations

import copy

TINY = {
    "name": "tiny-burst",
    "seed": 1,
    "duration_s": 300,
    "drain_s": 60,
    "model": {"name": "Llama-3.1-8B", "tp": 1},
    "cluster": {
        "instance_type": "g6e.2xlarge",
        "ready_nodes": 1,
        "max_nodes": 3,
        "node_launch": {"kind": "fixed", "value_s": 45},
    },
    "cold_start": {
        "image_pull": {"kind": "fixed", "value_s": 15},
        "engine_init": {"kind": "fixed", "value_s": 20},
    },
    "initial_replicas": 1,
    "slo": {"ttft_s": 2.0, "tpot_s": 0.2},
    "workload": {
        "kind": "piecewise",
        "phases": [
            {"name": "quiet", "duration_s": 90, "rate_per_s": 1.0},
            {"name": "burst", "duration_s": 120, "rate_per_s": 12.0},
            {"name": "tail", "duration_s": 90, "rate_per_s": 2.0},
        ],
        "prompt_tokens": {
            "kind": "lognormal",
            "median_tokens": 500,
            "p90_tokens": 1500,
            "max_tokens": 4000,
        },
        "output_tokens": {
            "kind": "lognormal",
            "median_tokens": 100,
            "p90_tokens": 300,
            "max_tokens": 1000,
        },
    },
    "strategies": [
        {"name": "fixed-1", "autoscaler": {"kind": "fixed", "replicas": 1}},
        {
            "name": "keda-queue",
            "autoscaler": {
                "kind": "keda",
                "min_replica_count": 1,
                "max_replica_count": 3,
                "polling_interval_s": 15,
                "triggers": [
                    {
                        "query": {"metric": "vllm:num_requests_waiting", "aggregation": "sum"},
                        "threshold": 5,
                    }
                ],
            },
        },
    ],
}

# 2 x 2 x 2 override sets x 2 strategies = 16 runs.
GRID = {
    "parameters": {
        "strategies[keda-queue].autoscaler.triggers[0].threshold": [2, 10],
        "cluster.ready_nodes": [1, 2],
        "seed": [1, 2],
    },
}


def tiny(**changes) -> dict:
    data = copy.deepcopy(TINY)
    data.update(changes)
    return data
