"""Fit a GPU's efficiency factors to the user's own vLLM `bench serve` results.

Input: the result JSON `vllm bench serve --save-result` (benchmark_serving.py) writes, one
object, a list of them, or one per line (several request rates make a better fit). Each point
is replayed through the real engine (`serving.bench.run_benchmark`) with its own lengths
(`input_lens` / `output_lens` when saved with --save-detailed, else the mean lengths) and its
arrivals (`request_rate` inf = all at t=0, else Poisson, seeded); the prediction of mean TTFT,
mean TPOT and output throughput is compared with the measurement.

Fitted: `hbm_efficiency` (decode steps read the weights and KV cache) and
`compute_efficiency` (prefill GEMMs), by a coordinate-wise golden-section search on the sum of
squared log errors. Not fitted: exposed host time per step. The step-time model multiplies it
with the roofline (`step_time_factor`, an engine profile in code, not a catalog field), so it
is not separable from the efficiencies on bench points; the fit says so and keeps the
engine's profile. The overlay written is a `gpus:` catalog entry `--catalog` takes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from gpuscale.catalog import Precision, get_gpu, get_model
from gpuscale.errors import UserInputError
from gpuscale.inputs import check_json_depth, read_text
from gpuscale.serving.bench import (
    BenchResult,
    offline_requests,
    poisson_requests,
    run_benchmark,
)
from gpuscale.serving.kv_cache import num_kv_blocks
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.serving.replica import EngineConfig
from gpuscale.workloads.base import Requests

BOUNDS = (0.05, 1.0)  # an efficiency is a fraction of the datasheet peak
MAX_REQUESTS_PER_POINT = 400  # replayed per point: enough for stable means, fast to search
ROUNDS = 5  # coordinate sweeps; each narrows both factors


@dataclass(frozen=True)
class BenchPoint:
    source: str
    request_rate_per_s: float  # inf = offline
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    mean_ttft_s: float
    mean_tpot_s: float
    output_tokens_per_s: float
    max_num_seqs: int
    max_num_batched_tokens: int | None = None  # None = vLLM's default for the GPU
    arrival_s: np.ndarray | None = None  # recorded arrivals (replaces request_rate)


@dataclass(frozen=True)
class FitResult:
    gpu: str
    hbm_efficiency: float
    compute_efficiency: float
    points: list[dict]  # per point: measured, predicted, error

    def overlay(self, source: str) -> dict:
        return {"gpus": {self.gpu: {
            "hbm_efficiency": round(self.hbm_efficiency, 4),
            "compute_efficiency": round(self.compute_efficiency, 4),
            "efficiency_source": f"fit to {len(self.points)} vLLM bench point(s) in {source}"}}}


def _number(obj: dict, key: str, source: str, where: str) -> float:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise UserInputError(f"expected a number > 0, got {value!r}", source=source,
                             field=f"{where}{key}")
    return float(value)


def _lengths(
    obj: dict, key: str, total_key: str, count: int, source: str, where: str
) -> np.ndarray:
    lens = obj.get(key)
    if isinstance(lens, list) and lens and all(isinstance(v, int) and v > 0 for v in lens):
        return np.asarray(lens[:MAX_REQUESTS_PER_POINT], np.int64)
    mean = _number(obj, total_key, source, where) / count
    return np.full(min(count, MAX_REQUESTS_PER_POINT), max(1, round(mean)), np.int64)


def read_bench_results(path: Path, max_num_seqs: int) -> list[BenchPoint]:
    """The points of a bench-serve result file (object, list, or one object per line)."""
    # Read like every input (size capped, devices and FIFOs refused), nesting checked
    # before json recurses (gpuscale/inputs.py).
    text = read_text(path, what="vLLM bench serve result (JSON)")
    check_json_depth(text, str(path))
    try:
        data = json.loads(text)
        items = data if isinstance(data, list) else [data]
    except ValueError:
        try:
            items = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as exc:
            raise UserInputError(f"not JSON ({exc}); expected vLLM bench serve results",
                                 source=str(path)) from None
    points = []
    for index, obj in enumerate(items):
        where = f"[{index}]." if len(items) > 1 else ""
        if not isinstance(obj, dict):
            raise UserInputError(
                "expected a bench result object", source=str(path), field=where or None
            )
        if obj.get("max_concurrency") not in (None, 0):
            raise UserInputError("max_concurrency runs (a closed-loop client) are not replayed; "
                                 "use --request-rate runs", source=str(path),
                                 field=f"{where}max_concurrency")
        count = int(_number(obj, "completed", str(path), where))
        rate = obj.get("request_rate", math.inf)
        rate = math.inf if rate in ("inf", None) else float(rate)
        points.append(BenchPoint(
            str(path), rate,
            _lengths(obj, "input_lens", "total_input_tokens", count, str(path), where),
            _lengths(obj, "output_lens", "total_output_tokens", count, str(path), where),
            _number(obj, "mean_ttft_ms", str(path), where) / 1e3,
            _number(obj, "mean_tpot_ms", str(path), where) / 1e3,
            _number(obj, "output_throughput", str(path), where), max_num_seqs))
    if not points:
        raise UserInputError("no bench results", source=str(path))
    return points


def _requests(point: BenchPoint) -> Requests:
    n = min(len(point.prompt_tokens), len(point.output_tokens))
    prompt, output = point.prompt_tokens[:n], point.output_tokens[:n]
    if point.arrival_s is not None:
        return Requests(np.asarray(point.arrival_s[:n], float), prompt, output)
    if math.isinf(point.request_rate_per_s):
        return offline_requests(prompt, output)
    return poisson_requests(np.random.default_rng(0), point.request_rate_per_s, prompt, output)


def predict(hw: ReplicaHardware, point: BenchPoint) -> BenchResult:
    blocks = num_kv_blocks(hw, gpu_memory_utilization=0.9, block_size=16,
                           activation_reserve_gib=2.0, non_torch_gib=0.5)
    if blocks == 0:
        raise UserInputError(f"{hw.model.name} does not fit {hw.gpu.name} at tp={hw.tp}",
                             field="--tp")
    big = hw.gpu.memory_gib >= 70
    budget = point.max_num_batched_tokens or (8192 if big else 2048)
    cfg = EngineConfig(point.max_num_seqs, budget, 16, blocks, 10**6, 1e9)
    return run_benchmark(hw, cfg, _requests(point))


def _log_errors(result: BenchResult, point: BenchPoint) -> list[float]:
    pairs = ((result.mean_ttft_s, point.mean_ttft_s), (result.mean_tpot_s, point.mean_tpot_s),
             (result.output_tokens_per_s, point.output_tokens_per_s))
    return [math.log(max(p, 1e-12) / m) for p, m in pairs]


def _golden(f, lo: float, hi: float, steps: int = 14) -> float:
    ratio = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(steps):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = f(d)
    return (a + b) / 2


def fit(points: list[BenchPoint], gpu: str, model: str, tp: int,
        precision: Precision = Precision.BF16) -> FitResult:
    base = get_gpu(gpu)
    spec = get_model(model)

    def loss(hbm: float, compute: float) -> float:
        hw = ReplicaHardware(replace(base, hbm_efficiency=hbm, compute_efficiency=compute),
                             spec, precision, precision, tp)
        return sum(e * e for p in points for e in _log_errors(predict(hw, p), p))

    hbm, compute = base.hbm_efficiency, base.compute_efficiency
    for _ in range(ROUNDS):
        hbm = _golden(lambda x, c=compute: loss(x, c), *BOUNDS)
        compute = _golden(lambda x, h=hbm: loss(h, x), *BOUNDS)
    hw = ReplicaHardware(replace(base, hbm_efficiency=hbm, compute_efficiency=compute),
                         spec, precision, precision, tp)
    rows = []
    for p in points:
        r = predict(hw, p)
        errors = _log_errors(r, p)
        rows.append(
            {
                "request_rate_per_s": p.request_rate_per_s,
                "measured": {
                    "mean_ttft_s": p.mean_ttft_s,
                    "mean_tpot_s": p.mean_tpot_s,
                    "output_tokens_per_s": p.output_tokens_per_s,
                },
                "predicted": {
                    "mean_ttft_s": r.mean_ttft_s,
                    "mean_tpot_s": r.mean_tpot_s,
                    "output_tokens_per_s": r.output_tokens_per_s,
                },
                "error_frac": {
                    k: math.expm1(e)
                    for k, e in zip(("mean_ttft_s", "mean_tpot_s", "output_tokens_per_s"), errors,
                                    strict=True)
                },
            }
        )
    return FitResult(gpu, hbm, compute, rows)
