"""Issue 16's benchmark, end to end as a user meets it: `gpuscale simulate FILE`, process start
to exit, on ten times the Azure 2023 conversation trace (rate-scaled into one hour, ~194k
requests) with Karpenter (layer 1), KAI (layer 2) and KEDA (layer 3), aggregated serving.

    python bench/bench_e2e.py [--repeat 3] [--scheduler kai|kube-scheduler] [--in-loop]
                              [--profile OUT.prof] [--keep FILE.yaml]

Prints, in one process: the heapq yardstick (bench/yardstick.py), the end-to-end requests/s of
each `gpuscale simulate` subprocess (wall time from spawn to exit, best of N), and with
--in-loop the rate of `run_strategy` alone (trace already loaded), each also normalised to a
1.4M ops/s yardstick. --profile writes a cProfile of the whole `simulate` command (one run,
in this process) for `python -m pstats`. Needs ../shared/traces beside the repository.
"""

from __future__ import annotations

import argparse
import copy
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_azure_conv import KARPENTER as KARPENTER_POOL
from bench_azure_conv import TRACE
from yardstick import heapq_ops_per_s, report_line

ROOT = Path(__file__).resolve().parents[1]


def scenario_dict(scheduler: str = "kai") -> dict:
    """10 x Azure conv rate-scaled (~54 req/s for an hour), Llama-3.1-70B FP8 TP2 replicas on
    p5.48xlarge (4 replicas a node), KEDA on the summed waiting queue, Karpenter launching
    nodes for pods the scheduler cannot place, and `scheduler` binding them."""
    pool = copy.deepcopy(KARPENTER_POOL)
    pool["node_pools"][0]["limits"] = {"nvidia.com/gpu": 512}
    return {
        "name": "bench-e2e-azure-conv-10x", "seed": 1, "duration_s": 3_600.0, "drain_s": 600.0,
        "model": {"name": "Llama-3.1-70B", "precision": "fp8", "tp": 2},
        "cluster": {"instance_type": "p5.48xlarge", "ready_nodes": 2, "max_nodes": 64},
        "nodes": pool, "scheduler": {"kind": scheduler},
        "initial_replicas": 8,
        "workload": {"kind": "trace", "format": "azure", "path": str(TRACE), "repeat": 10,
                     "rate_scale": 10},
        "strategies": [{"name": "keda-queue-depth", "autoscaler": {
            "kind": "keda", "min_replica_count": 2, "max_replica_count": 64,
            "triggers": [{"query": {"metric": "vllm:num_requests_waiting",
                                    "aggregation": "sum"}, "threshold": 5}]}}],
    }


def run_cli(path: Path, out: Path) -> float:
    # PYTHONPATH first, so a compiled copy of the package given there is what runs.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (os.environ.get("PYTHONPATH", ""), str(ROOT / "src")) if p)}
    # As a user runs it: with the bytecode cache (an install writes it; a shell that sets
    # PYTHONDONTWRITEBYTECODE would otherwise recompile every stale module on each run).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gpuscale", "simulate", str(path), "--format", "json",
                    "--out", str(out), "--force"], check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def in_loop(path: Path) -> tuple[float, int, dict]:
    from gpuscale.scenario import load_scenario
    from gpuscale.sim.run import run_strategy, scenario_requests

    scenario = load_scenario(path)
    requests = scenario_requests(scenario, path.parent)
    t0 = time.perf_counter()
    result = run_strategy(scenario, scenario.strategies[0], requests)
    return time.perf_counter() - t0, len(requests), result.summary


def profile(path: Path, out_prof: Path) -> None:
    import cProfile

    from gpuscale.cli import main as cli_main

    prof = cProfile.Profile()
    prof.enable()
    try:
        cli_main(["simulate", str(path), "--format", "json", "--out", str(path.with_suffix(".json")),
                  "--force"])
    except SystemExit:
        pass
    prof.disable()
    prof.dump_stats(str(out_prof))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="CLI runs to time; best is reported")
    parser.add_argument("--scheduler", default="kai", choices=["kai", "kube-scheduler"])
    parser.add_argument("--in-loop", action="store_true", help="also time run_strategy alone")
    parser.add_argument("--profile", type=Path, default=None, help="cProfile the CLI run here")
    parser.add_argument("--keep", type=Path, default=None, help="write the scenario YAML here")
    args = parser.parse_args()
    if not TRACE.exists():
        print(f"trace not found: {TRACE} (needs ../shared/traces)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "scenario.yaml"
        path.write_text(yaml.safe_dump(scenario_dict(args.scheduler), sort_keys=False))
        yard = heapq_ops_per_s()
        import gpuscale.serving.replica as replica_module

        compiled = replica_module.__file__.endswith(".so")
        print(f"hot path: {'compiled (mypyc)' if compiled else 'pure Python'} "
              f"({Path(replica_module.__file__).parent.parent})")
        print(f"scenario: 10 x Azure conv rate-scaled, Karpenter + {args.scheduler} + KEDA, "
              f"aggregated ({path})")
        if args.profile:
            profile(path, args.profile)
            print(f"profile written to {args.profile}")
            return 0
        out = Path(tmp) / "result.json"
        import compileall

        compileall.compile_dir(str(Path(replica_module.__file__).parent.parent), quiet=1)
        walls = [run_cli(path, out) for _ in range(max(1, args.repeat))]
        import json

        summary = json.loads(out.read_text())["runs"][0]
        num = summary["requests"]["total"]
        print(f"requests {num:,}  completed {summary['requests']['completed']:,}  "
              f"SLO {summary['slo_attainment']:.3f}  replicas peak {summary['replicas']['peak']}")
        print(f"end to end, `gpuscale simulate` start to exit: {', '.join(f'{w:.2f}' for w in walls)} s")
        print(report_line(f"end to end (best of {len(walls)})", num / min(walls), yard))
        if args.in_loop:
            wall, num_loop, _ = in_loop(path)
            print(report_line(f"in loop (run_strategy alone, {wall:.2f} s)", num_loop / wall, yard))
        print(f"simulation wall inside the process (wall_s): {summary['wall_s']:.2f} s; "
              f"preemptions {summary['preemptions']}")
        print(f"heapq yardstick again after the runs: {heapq_ops_per_s():,.0f} ops/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
