"""Benchmark: the evaluator is not the bottleneck. The Azure 2023 conversation hour through a
KEDA-scaled fleet, the trigger read three ways:

- `builtin`: the shorthand `{metric: vllm:num_requests_waiting, aggregation: sum}` (the
  latest scrape, no PromQL);
- `rule`: a PromQL trigger `avg_over_time(llm:queue_depth[1m])` on a recording rule
  `llm:queue_depth = sum(vllm:num_requests_waiting)` evaluated every 30 s;
- `ttft`: a PromQL trigger on the P90 of the per-pod TTFT histograms
  (`histogram_quantile(0.9, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[1m])))`),
  which makes every engine keep its request events;
and `export`: the `rule` run collecting every series (`--metrics-out`, the file not written).
Prints the best wall time of `run_strategy` per variant and its ratio to `builtin` (goal for
`rule`: <= 1.5x; docs/benchmarks.md). Needs ../shared/traces beside the repository.

    python bench/bench_promql.py [--repeat 3]
    python bench/bench_promql.py --day export   # (and --day plain) a diurnal day

`--day` runs 24 hours of diurnal load (1-12 req/s, Llama-3.1-8B on L40S, KEDA on the
recorded rule) collecting every series, writes them as OpenMetrics to a temporary file, and
prints the wall time, the samples stored, the file size and the process's peak RSS beside
the same day without the export.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

from gpuscale.scenario import scenario_from_dict
from gpuscale.sim.run import run_strategy, scenario_requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_azure_conv import TRACE, scenario_dict

TRIGGERS = {
    "builtin": {"query": {"metric": "vllm:num_requests_waiting", "aggregation": "sum"},
                "threshold": 5},
    "rule": {"query": "avg_over_time(llm:queue_depth[1m])", "threshold": 5},
    "ttft": {"query": "histogram_quantile(0.9, sum by (le) "
                      "(rate(vllm:time_to_first_token_seconds_bucket[1m])))", "threshold": 2,
             "metric_type": "Value"},
}
RULES = [{"name": "llm", "interval_s": 30,
          "rules": [{"record": "llm:queue_depth", "expr": "sum(vllm:num_requests_waiting)"}]}]


def _scenario(trigger: dict):
    data = scenario_dict(TRACE)
    data["metrics"] = {"rule_groups": RULES}
    data["strategies"][0]["autoscaler"]["triggers"] = [trigger]
    return scenario_from_dict(data, source="bench")


def _best(scenario, requests, repeat: int, export: bool) -> tuple[float, int]:
    best = float("inf")
    events = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = run_strategy(scenario, scenario.strategies[0], requests, export_series=export)
        best = min(best, time.perf_counter() - t0)
        prometheus = result.prometheus
        events = 0 if prometheus is None else sum(
            f.num_samples() for f in prometheus.store.families.values())
    return best, events


DAY = {
    "name": "bench-promql-day", "seed": 2, "duration_s": 86400.0, "drain_s": 600.0,
    "model": {"name": "Llama-3.1-8B", "precision": "bf16", "tp": 1},
    "cluster": {"instance_type": "g6e.24xlarge", "ready_nodes": 1, "max_nodes": 16},
    "initial_replicas": 1,
    "metrics": {"rule_groups": RULES},
    "workload": {"kind": "diurnal", "duration_s": 86400.0, "min_rate_per_s": 1.0,
                 "max_rate_per_s": 12.0,
                 "prompt_tokens": {"kind": "lognormal", "median_tokens": 1000,
                                   "p90_tokens": 3000, "max_tokens": 8000},
                 "output_tokens": {"kind": "lognormal", "median_tokens": 200,
                                   "p90_tokens": 500, "max_tokens": 1000}},
    "strategies": [{"name": "keda-rule", "autoscaler": {
        "kind": "keda", "min_replica_count": 1, "max_replica_count": 16,
        "triggers": [TRIGGERS["rule"]]}}],
}


def _peak_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def day(export: bool) -> int:
    """One day in this process (run it once per process: the peak RSS is the process's)."""
    import tempfile

    from gpuscale.cli.metrics_out import write_metrics

    scenario = scenario_from_dict(DAY, source="bench")
    requests = scenario_requests(scenario, Path("."))
    t0 = time.perf_counter()
    result = run_strategy(scenario, scenario.strategies[0], requests, export_series=export)
    run_s = time.perf_counter() - t0
    samples = 0 if result.prometheus is None else sum(
        f.num_samples() for f in result.prometheus.store.families.values())
    size = 0
    write_s = 0.0
    if export:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "day.om"
            t0 = time.perf_counter()
            write_metrics(path, [result], force=True)
            write_s = time.perf_counter() - t0
            size = path.stat().st_size
    print(f"day export={export}: {len(requests):,} requests, run {run_s:.1f} s, write "
          f"{write_s:.1f} s, samples stored {samples:,}, file {size / 2**20:.0f} MiB, "
          f"peak RSS {_peak_rss_mib():.0f} MiB")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per variant; best reported")
    parser.add_argument("--memory", action="store_true",
                        help="also the peak traced memory of one `export` run")
    parser.add_argument("--day", choices=("export", "plain"), default=None,
                        help="one diurnal day with (export) or without (plain) every series")
    args = parser.parse_args()
    if args.day is not None:
        return day(args.day == "export")
    if not TRACE.exists():
        print(f"trace not found: {TRACE} (needs ../shared/traces)", file=sys.stderr)
        return 2
    base = _scenario(TRIGGERS["builtin"])
    requests = scenario_requests(base, Path("."))
    rows = {}
    for name, trigger, export in (("builtin", TRIGGERS["builtin"], False),
                                  ("rule", TRIGGERS["rule"], False),
                                  ("ttft", TRIGGERS["ttft"], False),
                                  ("export", TRIGGERS["rule"], True)):
        rows[name] = _best(_scenario(trigger), requests, args.repeat, export)
    reference = rows["builtin"][0]
    for name, (wall_s, samples) in rows.items():
        print(f"{name:8s} {wall_s:7.3f} s  {wall_s / reference:5.2f}x  samples stored {samples:,}")
    if args.memory:
        tracemalloc.start()
        _best(_scenario(TRIGGERS["rule"]), requests, 1, True)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"export run peak traced memory: {peak / 2**20:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
