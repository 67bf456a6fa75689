"""Benchmarks of issue 5's speed-at-scale goals (see docs/benchmarks.md).

    python bench/bench_scale.py azure10x   # 10 x Azure conv (~194k requests), P/D split,
                                           # SLA planner per role, Karpenter + kube-scheduler
    python bench/bench_scale.py day        # a 10-million-request synthetic day: peak memory

Prints requests simulated per wall second and the peak resident memory of the process.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

from bench_azure_conv import KARPENTER as KARPENTER_POOL
from bench_azure_conv import TRACE
from gpuscale.engine.run import run_strategy, scenario_requests
from gpuscale.scenario import scenario_from_dict

KARPENTER = {**KARPENTER_POOL, "node_pools": [
    {**KARPENTER_POOL["node_pools"][0], "limits": {"nvidia.com/gpu": 512}}]}
PLANNER = {"kind": "sla_planner", "adjustment_interval_s": 60,
           "predictor": {"kind": "moving_average"}, "max_gpu_budget": 256}


def azure10x() -> dict:
    return {
        "name": "bench-azure-conv-10x", "seed": 1, "duration_s": 36_000.0, "drain_s": 600.0,
        "model": {"name": "Llama-3.1-70B", "precision": "fp8", "tp": 2},
        "cluster": {"instance_type": "p5.48xlarge", "ready_nodes": 2, "max_nodes": 32},
        "nodes": KARPENTER, "scheduler": {"kind": "kube-scheduler"},
        "disaggregation": {"prefill": {"initial_replicas": 2}, "decode": {"initial_replicas": 2}},
        "workload": {"kind": "trace", "format": "azure", "path": str(TRACE), "repeat": 10},
        "strategies": [{"name": "sla-planner-per-role", "prefill": PLANNER, "decode": PLANNER}],
    }


def day() -> dict:
    return {
        "name": "bench-10M-day", "seed": 1, "duration_s": 86_400.0, "drain_s": 600.0,
        "model": {"name": "Llama-3.1-8B", "precision": "fp8", "tp": 1},
        "cluster": {"instance_type": "p5.48xlarge", "ready_nodes": 8, "max_nodes": 16},
        "initial_replicas": 48,
        "workload": {"kind": "diurnal", "duration_s": 86_400.0, "min_rate_per_s": 60.0,
                     "max_rate_per_s": 172.0},
        "strategies": [{"name": "keda-queue", "autoscaler": {
            "kind": "keda", "min_replica_count": 32, "max_replica_count": 128,
            "triggers": [{"query": {"metric": "vllm:num_requests_waiting",
                                    "aggregation": "sum"}, "threshold": 4}]}}],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", choices=["azure10x", "day"])
    args = parser.parse_args()
    if args.which == "azure10x" and not TRACE.exists():
        print(f"trace not found: {TRACE} (needs ../shared/traces)", file=sys.stderr)
        return 2
    scenario = scenario_from_dict(azure10x() if args.which == "azure10x" else day(),
                                  source=args.which)
    t0 = time.perf_counter()
    requests = scenario_requests(scenario, Path("."))
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = run_strategy(scenario, scenario.strategies[0], requests)
    wall = time.perf_counter() - t0
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    summary = result.summary
    print(f"{scenario.name}: {len(requests):,} requests (workload built in {load_s:.1f} s)")
    print(f"simulate: {wall:.1f} s -> {len(requests) / wall:,.0f} requests/s "
          f"({result.extra['num_events']:,} events)")
    print(f"peak RSS: {peak_mib:,.0f} MiB")
    print(f"completed {summary['requests']['completed']:,}  SLO {summary['slo_attainment']:.3f}  "
          f"replicas peak {summary['replicas']['peak']}  GPU-h {summary['gpu_hours']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
