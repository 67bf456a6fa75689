"""Analytic sizing: parallelism that fits, what one replica serves, how long it takes to start.

These numbers seed the decisions and the warm-pool search; the search itself simulates. All
approximations are listed in docs/plan.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpuscale.catalog import InstanceType, ModelSpec
from gpuscale.catalog.specs import Precision
from gpuscale.plan.inputs import TrafficShape, WorkloadInput
from gpuscale.serving.kv_cache import kv_cache_bytes_per_gpu
from gpuscale.serving.performance import ReplicaHardware, step_time_s
from gpuscale.units import GIB
from gpuscale.workloads import build_requests

# Scenario defaults (scenario/models.py EngineSettings): vLLM memory share, activation and
# non-torch reserve per GPU.
GPU_MEMORY_UTILIZATION = 0.9
RESERVE_GIB = 2.5
# Weights may take at most this share of the usable memory, so at least the rest is KV cache:
# below ~half, a 70B replica holds too few sequences to batch well (our rule, docs/plan.md).
MAX_WEIGHT_SHARE = 0.5
# Cold-start components when the input gives none (calibration.md A15-A17, scenario ColdStart).
IMAGE_PULL_S = 120.0
STORAGE_GBPS = 1.05
ENGINE_INIT_S = 120.0
# Replicas are sized to run at this share of their capacity: headroom for variance, and more
# than covers the model's server-mode optimism (the one measured server, calibration row A8,
# saturated at ~0.87 of the load at which the model does; docs/calibration.md, A8 load sweep).
TARGET_LOAD_FRAC = 0.7
# KV-cache share a replica may fill before vLLM starts preempting (WVA saturates at 0.8,
# layer3-replica-autoscaling.md 6.3); the scaler targets a bit below it.
KV_TARGET_FRAC = 0.7
MAX_NUM_SEQS_BIG_GPU = 1024  # vLLM default on >=70 GiB GPUs (serving-engine-metrics.md 1.4)


@dataclass(frozen=True)
class Parallelism:
    tp: int
    pp: int
    reason: str


def usable_gib(instance: InstanceType) -> float:
    return GPU_MEMORY_UTILIZATION * instance.gpu_spec.memory_gib - RESERVE_GIB


def choose_parallelism(model: ModelSpec, precision: Precision, instance: InstanceType,
                       domain_gpus: int) -> Parallelism:
    """Smallest power-of-two TP within one NVLink domain that leaves half the memory for KV;
    pipeline stages across domains only when even a full domain is too small."""
    weights_gib = model.weight_bytes(precision) / GIB
    budget = usable_gib(instance) * MAX_WEIGHT_SHARE
    widest = min(domain_gpus, instance.num_gpus) if instance.num_gpus else domain_gpus
    tp = 1
    while tp <= widest:
        if weights_gib / tp <= budget and not model.tp_error(tp):
            return Parallelism(tp, 1, f"{weights_gib:.0f} GiB of {precision.value} weights over TP{tp} "
                               f"use {weights_gib / tp:.0f} GiB per GPU, at most half of the "
                               f"{usable_gib(instance):.0f} GiB vLLM may use, leaving the rest for KV cache")
        tp *= 2
    tp = max(1, 2 ** int(math.log2(widest)))
    while model.tp_error(tp):  # the widest power of two that splits the heads
        tp //= 2
    pp = math.ceil(weights_gib / (tp * budget))
    return Parallelism(tp, pp, f"{weights_gib:.0f} GiB of weights do not fit one {widest}-GPU NVLink "
                       f"domain with KV headroom: TP{tp} inside a domain, PP{pp} stages across domains")


def cold_start_estimate_s(model: ModelSpec, precision: Precision) -> float:
    return IMAGE_PULL_S + model.weight_bytes(precision) / (STORAGE_GBPS * 1e9) + ENGINE_INIT_S


@dataclass(frozen=True)
class TrafficStats:
    mean_rate_per_s: float
    burst_rate_per_s: float
    trough_rate_per_s: float
    burst_duration_s: float
    burst_period_s: float
    mean_prompt_tokens: float
    mean_output_tokens: float


def _window_peak(arrival_s: np.ndarray, window_s: float) -> float:
    if len(arrival_s) == 0:
        return 0.0
    counts = np.bincount((arrival_s // window_s).astype(np.int64))
    return float(counts.max()) / window_s


def traffic_stats(workload: WorkloadInput, base_dir: Path, window_s: float) -> TrafficStats:
    """Rates and mean lengths of the workload's traffic (a trace is read, a shape sampled)."""
    traffic = workload.traffic
    rng = np.random.default_rng(0)  # lengths only; fixed so the plan is deterministic
    if isinstance(traffic, TrafficShape):
        prompts = traffic.prompt_tokens.sample(rng, 4096)
        outputs = traffic.output_tokens.sample(rng, 4096)
        mean = traffic.mean_rate_per_s
        burst = mean * traffic.burst_factor
        period, dur = traffic.burst_period_s, traffic.burst_duration_s
        base = (mean * period - burst * dur) / (period - dur)
        trough = base * (1 - traffic.diurnal_swing_frac)
        return TrafficStats(mean, burst, trough, dur, period, float(prompts.mean()),
                            float(outputs.mean()))
    requests = build_requests(traffic, rng, base_dir)
    keep = requests.arrival_s < requests.arrival_s[0] + window_s if len(requests.arrival_s) else []
    arrival = requests.arrival_s[keep] - (requests.arrival_s[0] if len(requests.arrival_s) else 0)
    span = max(float(arrival.max()) if len(arrival) else 1.0, 1.0)
    mean = len(arrival) / span
    burst = max(_window_peak(arrival, 60.0), mean)
    trough = min(float(np.percentile(np.bincount((arrival // 60).astype(np.int64)), 10)) / 60.0, mean) \
        if len(arrival) else 0.0
    return TrafficStats(mean, burst, trough, 60.0, span, float(requests.prompt_tokens[keep].mean()),
                        float(requests.output_tokens[keep].mean()))


def replica_hardware(model: ModelSpec, precision: Precision, instance: InstanceType,
                     gpus: int) -> ReplicaHardware:
    """The roofline view of one replica; PP stages are approximated as a wider TP group."""
    return ReplicaHardware(gpu=instance.gpu_spec, model=model, weight_precision=precision,
                           kv_precision=precision, tp=gpus)


@dataclass(frozen=True)
class Capacity:
    requests_per_s: float  # at full load
    decode_batch: int
    prefill_s: float  # one mean prompt
    kv_tokens: int


def replica_capacity(hw: ReplicaHardware, prompt_tokens: float, output_tokens: float,
                     itl_slo_s: float) -> Capacity:
    """Requests/s one replica sustains: the largest decode batch whose step meets 0.8 x the ITL
    SLO and fits the KV cache at KV_TARGET_FRAC, with each request's prefill run in turn."""
    kv_bytes = kv_cache_bytes_per_gpu(hw, gpu_memory_utilization=GPU_MEMORY_UTILIZATION,
                                      activation_reserve_gib=2.0, non_torch_gib=0.5) * hw.tp
    kv_tokens = max(0, int(kv_bytes / hw.kv_bytes_per_token))
    context = prompt_tokens + output_tokens / 2
    kv_batch = max(1, int(KV_TARGET_FRAC * kv_tokens / (prompt_tokens + output_tokens)))
    batch = min(kv_batch, MAX_NUM_SEQS_BIG_GPU)
    while batch > 1 and step_time_s(hw, decode_seqs=batch,
                                    decode_context_tokens=batch * context) > 0.8 * itl_slo_s:
        batch = max(1, batch * 3 // 4)
    step = step_time_s(hw, decode_seqs=batch, decode_context_tokens=batch * context)
    prefill = step_time_s(hw, decode_seqs=0, decode_context_tokens=0,
                          prefill_chunks=((max(1, int(prompt_tokens)), 0),))
    per_request_s = prefill + output_tokens * step / batch
    return Capacity(1.0 / per_request_s, batch, prefill, kv_tokens)


def queue_threshold(capacity_rps: float, ttft_slo_s: float) -> int:
    """Waiting requests per replica whose drain time is half the TTFT SLO (1..32)."""
    return int(min(32, max(1, math.floor(0.5 * ttft_slo_s * capacity_rps))))


def replicas_for(rate_per_s: float, capacity_rps: float) -> int:
    return max(1, math.ceil(rate_per_s / (capacity_rps * TARGET_LOAD_FRAC)))
