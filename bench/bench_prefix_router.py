"""Routers on a long-prompt conversation trace: prefix hits against load (issue 28).

Replays the Mooncake FAST'25 synthetic trace (../shared/traces/mooncake, 3,993 requests, p50
prompt ~12k tokens, 512-token block hashes) `--repeat` times back to back through a fixed
fleet of 8 x Llama-3.1-70B FP8 TP2 on H100 (two p5.48xlarge), once per router, and prints the
prefix-cache hit rate, SLO attainment, drops and TTFT. `prefix-only` is the old prefix_aware
(longest cached prefix first, load only as the tie break: weights 1 / 0 / 0).

    python bench/bench_prefix_router.py [--repeat 3] [--rate-scale 1.0]
    python bench/bench_prefix_router.py --repeat 1 --model Llama-3.1-8B --precision bf16 \
        --tp 1 --replicas 4 --nodes 1     # docs/serving.md's 4 x 8B table
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpuscale.scenario import scenario_from_dict
from gpuscale.sim.run import run_strategy, scenario_requests

TRACE = Path(__file__).resolve().parents[1] / ".." / "shared" / "traces" / "mooncake" / \
    "synthetic_trace.jsonl"
ROUTERS = {"round_robin": ("round_robin", None), "least_outstanding": ("least_outstanding", None),
           "prefix_aware": ("prefix_aware", None),
           "prefix-only": ("prefix_aware", {"prefix_cache": 1.0, "queue": 0.0, "kv_cache": 0.0})}


def scenario_dict(router: str, weights: dict | None, args: argparse.Namespace) -> dict:
    extra = {"prefix_aware_weights": weights} if weights else {}
    replicas = args.replicas
    return {
        **extra,
        "name": "bench-prefix-router", "seed": 1, "duration_s": 1e6, "drain_s": 1800.0,
        "model": {"name": args.model, "precision": args.precision, "tp": args.tp},
        "cluster": {"instance_type": "p5.48xlarge", "ready_nodes": args.nodes,
                    "max_nodes": args.nodes},
        "initial_replicas": replicas, "router": router,
        "slo": {"ttft_s": 10.0, "tpot_s": 0.2},
        "workload": {"kind": "trace", "format": "mooncake", "path": str(TRACE),
                     "repeat": args.repeat, "rate_scale": args.rate_scale},
        "strategies": [{"name": f"fixed-{replicas}",
                        "autoscaler": {"kind": "fixed", "replicas": replicas}}],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rate-scale", type=float, default=1.0)
    parser.add_argument("--model", default="Llama-3.1-70B")
    parser.add_argument("--precision", default="fp8")
    parser.add_argument("--tp", type=int, default=2)
    parser.add_argument("--replicas", type=int, default=8)
    parser.add_argument("--nodes", type=int, default=2, help="p5.48xlarge nodes")
    args = parser.parse_args()
    if not TRACE.exists():
        sys.exit(f"no trace at {TRACE}")
    print(f"{'router':18s} {'hit rate':>9s} {'SLO':>7s} {'dropped':>9s} {'TTFT p50':>9s} "
          f"{'TTFT p99':>9s} {'TPOT p50':>9s}")
    for label, (router, weights) in ROUTERS.items():
        scenario = scenario_from_dict(scenario_dict(router, weights, args))
        requests = scenario_requests(scenario, Path("."))
        summary = run_strategy(scenario, scenario.strategies[0], requests).summary
        hit = summary.prefix_cache.hit_rate
        print(f"{label:18s} {hit if hit is not None else float('nan'):9.1%} "
              f"{summary.slo_attainment:7.1%} "
              f"{summary.requests.dropped:5d}/{summary.requests.total:<5d} "
              f"{summary.ttft_s.p50:9.2f} {summary.ttft_s.p99:9.2f} "
              f"{summary.tpot_s.p50 * 1e3:7.1f}ms", flush=True)


if __name__ == "__main__":
    main()
