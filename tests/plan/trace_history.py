"""A small synthetic trace history for the plan tests: a daily ramp compressed into a few
hours (quiet, busy, quiet), generic CSV, written into a test's folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np

PHASES = ((3600.0, 0.8), (3600.0, 3.0), (3600.0, 0.8))  # (seconds, requests/s)


def write_trace(path: Path, seed: int = 7, phases=PHASES) -> Path:
    rng = np.random.default_rng(seed)
    times, t0 = [], 0.0
    for length_s, rate in phases:
        n = rng.poisson(rate * length_s)
        times.append(np.sort(t0 + rng.uniform(0.0, length_s, n)))
        t0 += length_s
    arrival = np.concatenate(times)
    prompts = rng.integers(200, 1200, len(arrival))
    outputs = rng.integers(20, 200, len(arrival))
    lines = ["arrival_s,prompt_tokens,output_tokens"] + [
        f"{a:.6f},{p},{o}" for a, p, o in zip(arrival, prompts, outputs, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def history_input(trace: Path, check: Path | None = None) -> dict:
    workload = {"name": "chat", "model": "Llama-3.1-8B", "precision": "bf16",
                "traffic": {"kind": "trace", "format": "generic", "path": str(trace)}}
    if check is not None:
        workload["check_traffic"] = {"kind": "trace", "format": "generic", "path": str(check)}
    return {"name": "hist", "cluster": {"name": "prod", "instance_types": ["g6.2xlarge"],
                                        "max_gpus": 24},
            "slo": {"ttft_p99_s": 3.0, "itl_p99_s": 0.2, "goodput_frac": 0.99},
            "simulation": {"trace_window_s": 1200, "max_candidates": 6},
            "workloads": [workload]}
