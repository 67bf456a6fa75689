"""vLLM `bench serve` result points for `calibrate --fit`: read, and replay through the engine.

Input: the result JSON `vllm bench serve --save-result` (benchmark_serving.py) writes, one
object, a list of them, or one per line (several request rates make a better fit). Each point
is replayed through the real engine (`serving.bench.run_benchmark`) with its own lengths
(`input_lens` / `output_lens` when saved with --save-detailed, else the mean lengths) and its
arrivals (`request_rate` inf = all at t=0, else Poisson, seeded); the prediction of mean TTFT,
mean TPOT and output throughput is compared with the measurement.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from gpuscale.errors import UserInputError
from gpuscale.serving.bench import BenchResult, offline_requests, poisson_requests, run_benchmark
from gpuscale.serving.engine_defaults import (
    ACTIVATION_RESERVE_GIB,
    BLOCK_SIZE,
    GPU_MEMORY_UTILIZATION,
    NON_TORCH_GIB,
    default_max_num_batched_tokens,
)
from gpuscale.serving.kv_cache import num_kv_blocks
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.serving.replica import EngineConfig
from gpuscale.workloads.base import Requests

MAX_REQUESTS_PER_POINT = 400  # replayed per point: enough for stable means, fast to search
# A bound on one request's prompt or output: above the longest context window released (Llama 4
# Scout's 10M tokens); larger is a corrupt file, and would overflow the int64 arrays.
MAX_LENGTH_TOKENS = 10_000_000
BENCH_STATS = ("mean_ttft_s", "mean_tpot_s", "output_tokens_per_s")


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

    @property
    def label(self) -> str:
        return f"rate {self.request_rate_per_s:g}/s"

    @property
    def measured(self) -> dict[str, float]:
        return {"mean_ttft_s": self.mean_ttft_s, "mean_tpot_s": self.mean_tpot_s,
                "output_tokens_per_s": self.output_tokens_per_s}

    @property
    def decode_batch(self) -> float:
        """Mean sequences decoding together, by Little's law: tokens/s x s/token."""
        return self.output_tokens_per_s * self.mean_tpot_s

    def predict_stats(self, hw: ReplicaHardware) -> dict[str, float]:
        r = predict(hw, self)
        return {"mean_ttft_s": r.mean_ttft_s, "mean_tpot_s": r.mean_tpot_s,
                "output_tokens_per_s": r.output_tokens_per_s}


def _number(obj: dict, key: str, source: str, where: str) -> float:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 \
            or not math.isfinite(value):
        raise UserInputError(f"expected a number > 0, got {value!r}", source=source,
                             field=f"{where}{key}")
    return float(value)


def _lengths(
    obj: dict, key: str, total_key: str, count: int, source: str, where: str
) -> np.ndarray:
    lens = obj.get(key)
    if lens is not None and lens != []:
        # Present but not lengths: refused, not silently replaced by the totals' mean. A 0 is
        # a failed request (bench serve keeps its slot): the totals' mean stands in then.
        if not isinstance(lens, list) or not all(
                isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_LENGTH_TOKENS
                for v in lens):
            raise UserInputError(f"expected a list of token counts, each 0..{MAX_LENGTH_TOKENS}",
                                 source=source, field=f"{where}{key}")
        if all(lens):
            return np.asarray(lens[:MAX_REQUESTS_PER_POINT], np.int64)
    mean = _number(obj, total_key, source, where) / count
    if mean > MAX_LENGTH_TOKENS:
        raise UserInputError(f"expected at most {MAX_LENGTH_TOKENS} tokens a request "
                             f"(completed x that), got {mean:.4g} a request", source=source,
                             field=f"{where}{total_key}")
    return np.full(min(count, MAX_REQUESTS_PER_POINT), max(1, round(mean)), np.int64)


def _count(obj: dict, key: str, source: str, where: str) -> int:
    value = obj.get(key)
    if isinstance(value, float) and value.is_integer():  # 100.0 from a JSON writer
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserInputError(f"expected a whole number of requests >= 1, got {value!r}",
                             source=source, field=f"{where}{key}")
    return value


def _lens(obj: dict, key: str) -> list[int] | None:
    value = obj.get(key)
    return value if isinstance(value, list) and value and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value) else None


def _check_counts(obj: dict, count: int, source: str, where: str) -> None:
    """A result whose counts disagree was not written by one bench run (hand-merged, cut, or
    edited): fitting it fitted the wrong requests. vLLM writes `input_lens` for every request,
    `output_lens` with 0 for a failed one, `completed` = the successes, `total_output_tokens`
    = sum(output_lens), `total_input_tokens` = the successes' prompts
    (vllm/benchmarks/serve.py, calculate_metrics and the result dict)."""
    inputs, outputs = _lens(obj, "input_lens"), _lens(obj, "output_lens")
    problem = None
    if inputs is not None and outputs is not None and len(inputs) != len(outputs):
        problem = (f"input_lens has {len(inputs)} requests, output_lens {len(outputs)}",
                   "output_lens")
    elif outputs is not None and not sum(1 for v in outputs if v) <= count <= len(outputs):
        problem = (f"completed is {count}, but output_lens holds {len(outputs)} requests of "
                   f"which {sum(1 for v in outputs if v)} produced tokens", "completed")
    elif outputs is not None and isinstance(obj.get("total_output_tokens"), (int, float)) \
            and obj["total_output_tokens"] != sum(outputs):
        problem = (f"total_output_tokens is {obj['total_output_tokens']}, but output_lens sums "
                   f"to {sum(outputs)}", "total_output_tokens")
    elif inputs is not None and outputs is not None and isinstance(
            obj.get("total_input_tokens"), (int, float)) and not (
            sum(i for i, o in zip(inputs, outputs, strict=True) if o)
            <= obj["total_input_tokens"] <= sum(inputs)):
        problem = (f"total_input_tokens is {obj['total_input_tokens']}, outside the prompts of "
                   "the requests input_lens and output_lens say completed", "total_input_tokens")
    if problem is not None:
        raise UserInputError(f"the counts disagree: {problem[0]}; expected one bench serve "
                             "result as vLLM writes it", source=source,
                             field=f"{where}{problem[1]}")


def bench_items(text: str, source: str) -> list:
    """The objects of a bench-serve result text: one object, a list, or one per line."""
    try:
        data = json.loads(text)
        return data if isinstance(data, list) else [data]
    except ValueError:
        try:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as exc:
            raise UserInputError(f"not JSON ({exc}); expected vLLM bench serve results or a "
                                 "Prometheus query_range export", source=source) from None


def bench_points(items: list, source: str, max_num_seqs: int,
                 max_num_batched_tokens: int | None = None) -> list[BenchPoint]:
    points = []
    for index, obj in enumerate(items):
        where = f"[{index}]." if len(items) > 1 else ""
        if not isinstance(obj, dict):
            raise UserInputError(
                "expected a bench result object", source=source, field=where or None
            )
        if obj.get("max_concurrency") not in (None, 0):
            raise UserInputError("max_concurrency runs (a closed-loop client) are not replayed; "
                                 "use --request-rate runs", source=source,
                                 field=f"{where}max_concurrency")
        count = _count(obj, "completed", source, where)
        rate = obj.get("request_rate", math.inf)
        try:
            rate = math.inf if rate in ("inf", None) else float(rate)
        except (TypeError, ValueError):
            rate = math.nan
        if isinstance(obj.get("request_rate"), bool) or not rate > 0:
            raise UserInputError(f"expected a rate > 0 or \"inf\", got "
                                 f"{obj.get('request_rate')!r}", source=source,
                                 field=f"{where}request_rate")
        prompt = _lengths(obj, "input_lens", "total_input_tokens", count, source, where)
        output = _lengths(obj, "output_lens", "total_output_tokens", count, source, where)
        _check_counts(obj, count, source, where)
        points.append(BenchPoint(
            source, rate, prompt, output,
            _number(obj, "mean_ttft_ms", source, where) / 1e3,
            _number(obj, "mean_tpot_ms", source, where) / 1e3,
            _number(obj, "output_throughput", source, where), max_num_seqs,
            max_num_batched_tokens))
    if not points:
        raise UserInputError("no bench results", source=source)
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
    blocks = num_kv_blocks(hw, gpu_memory_utilization=GPU_MEMORY_UTILIZATION,
                           block_size=BLOCK_SIZE, activation_reserve_gib=ACTIVATION_RESERVE_GIB,
                           non_torch_gib=NON_TORCH_GIB)
    if blocks == 0:
        raise UserInputError(f"{hw.model.name} does not fit {hw.gpu.name} at tp={hw.tp}",
                             field="--tp")
    budget = point.max_num_batched_tokens or default_max_num_batched_tokens(hw.gpu)
    cfg = EngineConfig(point.max_num_seqs, budget, BLOCK_SIZE, blocks, 10**6, 1e9)
    return run_benchmark(hw, cfg, _requests(point))
