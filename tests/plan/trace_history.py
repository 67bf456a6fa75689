"""A small synthetic trace history for the plan tests: a daily ramp compressed into a few
hours (quiet, busy, quiet), generic CSV, written into a test's folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np

PHASES = ((3600.0, 0.8), (3600.0, 3.0), (3600.0, 0.8))  # (seconds, requests/s)


def _requests(seed: int, phases) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    times, t0 = [], 0.0
    for length_s, rate in phases:
        n = rng.poisson(rate * length_s)
        times.append(np.sort(t0 + rng.uniform(0.0, length_s, n)))
        t0 += length_s
    arrival = np.concatenate(times)
    return arrival, rng.integers(200, 1200, len(arrival)), rng.integers(20, 200, len(arrival))


def write_trace(path: Path, seed: int = 7, phases=PHASES) -> Path:
    arrival, prompts, outputs = _requests(seed, phases)
    lines = ["arrival_s,prompt_tokens,output_tokens"] + [
        f"{a:.6f},{p},{o}" for a, p, o in zip(arrival, prompts, outputs, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_azure_trace(path: Path, first: str, seed: int = 7, phases=PHASES) -> Path:
    """The same requests in Azure's format: wall-clock TIMESTAMPs from `first` (the first
    phase starts there; no zone, as Azure writes them)."""
    arrival, prompts, outputs = _requests(seed, phases)
    stamps = np.datetime64(first, "ns") + (arrival * 1e9).astype("timedelta64[ns]")
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"] + [
        f"{str(t).replace('T', ' ')[:27]},{p},{o}"
        for t, p, o in zip(stamps, prompts, outputs, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def history_input(trace: Path, check: Path | None = None, fmt: str = "generic") -> dict:
    workload = {"name": "chat", "model": "Llama-3.1-8B", "precision": "bf16",
                "traffic": {"kind": "trace", "format": fmt, "path": str(trace)}}
    if check is not None:
        workload["check_traffic"] = {"kind": "trace", "format": fmt, "path": str(check)}
    return {"name": "hist", "cluster": {"name": "prod", "instance_types": ["g6.2xlarge"],
                                        "max_gpus": 24},
            "slo": {"ttft_p99_s": 3.0, "itl_p99_s": 0.2, "goodput_frac": 0.99},
            "simulation": {"trace_window_s": 1200, "max_candidates": 6},
            "workloads": [workload]}
