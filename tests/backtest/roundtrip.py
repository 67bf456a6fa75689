"""A run's own export as its history: simulate a bundle on a trace with --metrics-out, then
backtest the same bundle on that export (issue 31's round trip)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.promql import openmetrics
from gpuscale.promql.query_json import range_response

BUNDLES = Path(__file__).resolve().parents[1] / "importer" / "bundles"
CATALOG = BUNDLES / "catalog.yaml"
SHAPES = ("flat", "step", "ramp", "wave")


def write_trace(path: Path, shape: str, seed: int, base_per_s: float, peak_per_s: float,
                minutes: float) -> Path:
    """A generic CSV trace: Poisson arrivals thinned to `shape`, lognormal lengths."""
    rng = np.random.default_rng(seed)
    span_s = minutes * 60.0

    def rate(t: np.ndarray) -> np.ndarray:
        f = t / span_s
        if shape == "step":
            return np.where((f > 0.3) & (f < 0.7), peak_per_s, base_per_s)
        if shape == "ramp":
            return base_per_s + (peak_per_s - base_per_s) * f
        if shape == "wave":
            return base_per_s + (peak_per_s - base_per_s) * 0.5 * (1 - np.cos(2 * np.pi * f))
        return np.full(len(t), base_per_s)

    top = max(base_per_s, peak_per_s)
    t = np.cumsum(rng.exponential(1.0 / top, size=int(top * span_s * 1.5) + 10))
    t = t[t < span_s]
    t = t[rng.random(len(t)) < rate(t) / top]
    prompt = np.clip(rng.lognormal(np.log(700), 0.8, len(t)), 16, 8000).astype(int)
    output = np.clip(rng.lognormal(np.log(180), 0.6, len(t)), 1, 2000).astype(int)
    rows = "".join(f"{a:.3f},{p},{o}\n" for a, p, o in zip(t, prompt, output, strict=True))
    path.write_text("arrival_s,prompt_tokens,output_tokens\n" + rows)
    return path


def invoke(args: list[str]) -> dict:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def simulate(bundle: Path, trace: Path, history: Path, seed: int) -> dict:
    """The run (result JSON) whose series become the history."""
    return invoke(["simulate", "--manifests", str(bundle), "--trace", str(trace),
                   "--catalog", str(CATALOG), "--seed", str(seed), "--metrics-out",
                   str(history), "-o", "json"])


def backtest(bundles: list[Path], history: Path, seed: int, *extra: str) -> dict:
    args = ["backtest", "--history", str(history), "--catalog", str(CATALOG), "--seed",
            str(seed), "-o", "json", *extra]
    for bundle in bundles:
        args += ["--manifests", str(bundle)]
    return invoke(args)


NEEDED_SERIES = ["vllm:time_to_first_token_seconds_bucket",
                 "vllm:time_to_first_token_seconds_sum",
                 "vllm:time_to_first_token_seconds_count",
                 "vllm:e2e_request_latency_seconds_sum", "vllm:e2e_request_latency_seconds_count",
                 "vllm:request_prompt_tokens_bucket", "vllm:request_prompt_tokens_sum",
                 "vllm:request_prompt_tokens_count", "vllm:request_generation_tokens_bucket",
                 "vllm:request_generation_tokens_sum", "vllm:request_generation_tokens_count",
                 "vllm:inter_token_latency_seconds_bucket", "vllm:num_requests_waiting",
                 "vllm:kv_cache_usage_perc", "vllm:num_requests_running",
                 "kube_deployment_spec_replicas", "kube_node_status_allocatable"]


def as_query_range(history: Path, out: Path, step_ms: int = 15_000) -> Path:
    """The export a user makes with the curl of docs/backtest.md, made in Python: each series
    resampled at the step as `/api/v1/query_range` answers."""
    store = openmetrics.read(history.read_text(), source=str(history))
    times = np.concatenate([f.t_ms.view() for f in store.families.values()
                            if f.num_samples()])
    response = range_response(store, NEEDED_SERIES, int(times.min()), int(times.max()),
                              step_ms)
    out.write_text(json.dumps(response))
    return out


def figures(run: dict, data: dict) -> dict:
    """The acceptance's three figures: replicas within one, SLO points, GPU-hours error."""
    replay = data["runs"][0]
    return {
        "within_one": data["backtest"]["agreement"]["replicas_within_one_frac"],
        "slo_points": replay["slo_attainment"] - run["slo_attainment"],
        "gpu_hours_frac": (replay["gpu_hours"] - run["gpu_hours"]) / run["gpu_hours"],
    }
