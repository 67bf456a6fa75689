"""Time the Alibaba GPU trace replay (8,152 pods on 1,213 GPU nodes) under each policy.

Usage: PYTHONPATH=src python3 bench/bench_alibaba.py [--json OUT] [--trace-dir DIR]
Prints one row per (policy, mode) with wall seconds and the headline figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from gpuscale.scheduling.replay import POLICIES, replay_fill, replay_timed
from gpuscale.workloads.gpu_jobs import read_alibaba_nodes, read_alibaba_pods

sys.path.insert(0, str(Path(__file__).resolve().parent))
from yardstick import REFERENCE_OPS_PER_S, heapq_ops_per_s

DEFAULT_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "traces" / "alibaba_gpu_v2023"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace-dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    yard = heapq_ops_per_s()
    print(f"heapq yardstick {yard:,.0f} ops/s in this process (x {REFERENCE_OPS_PER_S / yard:.2f} "
          f"for a {REFERENCE_OPS_PER_S / 1e6:.1f}M/s machine; pods/s below are raw)")
    start = time.perf_counter()
    pods = read_alibaba_pods(args.trace_dir / "openb_pod_list_default.csv")
    nodes = read_alibaba_nodes(args.trace_dir / "openb_node_list_gpu_node.csv")
    print(f"read {len(pods)} pods, {len(nodes)} nodes, {int(nodes.num_gpu.sum())} GPUs "
          f"in {time.perf_counter() - start:.2f} s")
    results = []
    for policy in POLICIES:
        for replay in (replay_fill, replay_timed):
            start = time.perf_counter()
            result = replay(pods, nodes, policy)
            result["wall_s"] = round(time.perf_counter() - start, 2)
            result["pods_per_s"] = round(len(pods) / max(result["wall_s"], 1e-9))
            results.append(result)
            if result["mode"] == "fill":
                print(f"{policy:22s} fill   {result['wall_s']:6.2f} s ({result['pods_per_s']:,} pods/s)  allocated "
                      f"{result['allocated_frac']:.3f}  at first GPU failure "
                      f"{result['allocated_frac_at_first_gpu_failure']}  failed pods "
                      f"{result['failed_pods']}  fragmented at end {result['fragmented_frac_at_end']}")
            else:
                print(f"{policy:22s} timed  {result['wall_s']:6.2f} s ({result['pods_per_s']:,} pods/s)  mean allocated after day 116 "
                      f"{result['mean_allocated_frac_after_day_116']}  fragmented "
                      f"{result['mean_fragmented_frac_after_day_116']}  never placed "
                      f"{result['never_placed']}  wait p99 {result['wait_s_p99']} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
