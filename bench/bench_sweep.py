"""Sweep throughput (runs per minute) with 1 and 2 local workers, optionally Ray.

    python bench/bench_sweep.py [--runs 32] [--duration-s 900] [--ray]

The scenario is an 8B model on one-GPU L40S nodes under a Poisson load with a burst, with a
KEDA queue-depth autoscaler; the grid varies the trigger threshold, the warm floor and the seed.
Each run is one strategy of one override set. Wall time includes process start-up and the
table writes (one fsync per row), i.e. what a user waits for.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from gpuscale.sweep import expand_grid, run_sweep

sys.path.insert(0, str(Path(__file__).resolve().parent))
from yardstick import REFERENCE_OPS_PER_S, heapq_ops_per_s


def scenario(duration_s: float) -> dict:
    third = duration_s / 3
    return {
        "name": "bench-sweep", "seed": 1, "duration_s": duration_s, "drain_s": 60,
        "model": {"name": "Llama-3.1-8B", "tp": 1},
        "cluster": {"instance_type": "g6e.2xlarge", "ready_nodes": 1, "max_nodes": 4},
        "initial_replicas": 1,
        "workload": {"kind": "piecewise", "phases": [
            {"name": "quiet", "duration_s": third, "rate_per_s": 2.0},
            {"name": "burst", "duration_s": third, "rate_per_s": 14.0},
            {"name": "tail", "duration_s": third, "rate_per_s": 4.0}],
            "prompt_tokens": {"kind": "lognormal", "median_tokens": 800, "p90_tokens": 2500,
                              "max_tokens": 8000},
            "output_tokens": {"kind": "lognormal", "median_tokens": 150, "p90_tokens": 400,
                              "max_tokens": 1500}},
        "strategies": [{"name": "keda-queue", "autoscaler": {
            "kind": "keda", "min_replica_count": 1, "max_replica_count": 4,
            "triggers": [{"query": {"metric": "vllm:num_requests_waiting", "aggregation": "sum"},
                          "threshold": 5}]}}],
    }


def grid(runs: int) -> dict:
    seeds = list(range(1, max(1, runs // 4) + 1))
    return {"parameters": {"strategies[0].autoscaler.triggers[0].threshold": [2, 8],
                           "cluster.ready_nodes": [1, 2], "seed": seeds}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=32)
    parser.add_argument("--duration-s", type=float, default=900.0)
    parser.add_argument("--ray", action="store_true")
    args = parser.parse_args()
    data = scenario(args.duration_s)
    runs = expand_grid(grid(args.runs), data)
    print(f"{len(runs)} runs of a {args.duration_s:.0f} s scenario, {os.cpu_count()} CPUs")
    yard = heapq_ops_per_s()
    print(f"heapq yardstick {yard:,.0f} ops/s in this process (figures below x "
          f"{REFERENCE_OPS_PER_S / yard:.2f} read as on a {REFERENCE_OPS_PER_S / 1e6:.1f}M/s machine)")
    settings = [("local", 1), ("local", 2)] + ([("ray", 2)] if args.ray else [])
    for backend, workers in settings:
        with tempfile.TemporaryDirectory() as tmp:
            start, cpu = time.perf_counter(), time.process_time()
            run_sweep(data, Path("."), runs, Path(tmp) / "t.csv", backend=backend, workers=workers)
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        # With workers=1 the runs execute in this process: its CPU time is the runs' own cost,
        # which bounds throughput on an idle core whatever else shares the machine.
        cpu_note = f", {cpu / len(runs):.2f} CPU-s/run" if workers == 1 and backend == "local" else ""
        # A run's requests are not counted here; a sweep's unit is the run.
        print(f"{backend:5s} workers={workers}: {wall:6.1f} s, {60 * len(runs) / wall:6.1f} runs/min"
              f" (normalised {60 * len(runs) / wall * REFERENCE_OPS_PER_S / yard:6.1f}){cpu_note}")
    if args.ray:
        import ray

        ray.shutdown()


if __name__ == "__main__":
    main()
