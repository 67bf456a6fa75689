"""Analytic sizing: parallelism that fits, what one replica serves, how long it takes to start.

These numbers seed the decisions and the warm-pool search; the search itself simulates. All
approximations are listed in docs/plan.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import numpy as np

from gpuscale.catalog import InstanceType, ModelSpec
from gpuscale.catalog.specs import Precision
from gpuscale.plan.inputs import TrafficShape, WorkloadInput
from gpuscale.scenario.parallelism import ExpertParallelism
from gpuscale.serving.cold_start import cold_start_medians
from gpuscale.serving.engine_defaults import (
    ACTIVATION_RESERVE_GIB,
    BLOCK_SIZE,
    DEFAULT_IMAGE_SIZE_GB,
    DEFAULT_WEIGHT_LOADER,
    DEFAULT_WEIGHT_STORAGE,
    GPU_MEMORY_UTILIZATION,
    NON_TORCH_GIB,
    default_max_num_batched_tokens,
    default_max_num_seqs,
    default_weight_load_gbps,
)
from gpuscale.serving.kv_cache import kv_cache_bytes_per_gpu, kv_gpu_shares, num_kv_blocks
from gpuscale.serving.performance import ReplicaHardware, step_time_s
from gpuscale.serving.replica import EngineConfig
from gpuscale.sim.replica_setup import parallel_layout, per_rank_host
from gpuscale.units import GIB
from gpuscale.workloads import build_requests

# Engine defaults and weight-load bandwidth come from the one module simulate uses too.
STORAGE_GBPS = default_weight_load_gbps()
# Cold-start components when the input gives none (calibration.md A15-A17, scenario ColdStart).
IMAGE_PULL_S = 120.0
ENGINE_INIT_S = 120.0
# Replicas are sized to run at this share of their capacity: headroom for variance, and more
# than covers the model's server-mode optimism (the one measured server, calibration row A8,
# saturated at ~0.87 of the load at which the model does; docs/calibration.md, A8 load sweep).
TARGET_LOAD_FRAC = 0.7
# KV-cache share a replica may fill before vLLM starts preempting (WVA saturates at 0.8,
# layer3-replica-autoscaling.md 6.3); the scaler targets a bit below it.
KV_TARGET_FRAC = 0.7
# Widest replica a plan proposes across nodes: LMSYS's wide-EP DeepSeek ran prefill on 4 and
# decode on 9 H100 nodes (lmsys.org/blog/2025-05-05-large-scale-ep); 16 nodes bounds the
# search (and its cost) well past that.
MAX_REPLICA_NODES = 16
# A TP size is refused when more than this share of requests could never meet the TTFT SLO
# because their prompt alone takes longer to prefill on an idle replica; the plan then
# widens TP or reports the bound (issue 13, defect 5).


@dataclass(frozen=True)
class Parallelism:
    tp: int  # GPUs per pipeline stage (across nodes when wider than one)
    pp: int
    reason: str
    ep: int = 1  # expert-parallel GPUs (scenario/parallelism.py)
    dp_attention: bool = False  # one attention rank per GPU (dp = tp)

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    @property
    def label(self) -> str:
        """e.g. "TP16 EP16 DP-attention" or "TP8 x PP2"."""
        return (f"TP{self.tp}" + (f" x PP{self.pp}" if self.pp > 1 else "")
                + (f" EP{self.ep}" if self.ep > 1 else "")
                + (" DP-attention" if self.dp_attention else ""))


def usable_gib(instance: InstanceType) -> float:
    return (GPU_MEMORY_UTILIZATION * instance.gpu_spec.memory_gib - ACTIVATION_RESERVE_GIB
            - NON_TORCH_GIB)


def _tp_sizes(model: ModelSpec, widest: int) -> list[int]:
    sizes, tp = [], 1
    while tp <= widest:
        if not model.tp_error(tp):
            sizes.append(tp)
        tp *= 2
    return sizes


def choose_parallelism(model: ModelSpec, precision: Precision, instance: InstanceType,
                       domain_gpus: int, stats: TrafficStats | None = None,
                       itl_slo_s: float = 0.2) -> Parallelism:
    """The TP (power of two, splitting the heads, inside one node and NVLink domain) whose
    replica serves a request cheapest, among those whose KV cache holds the workload's tokens
    in flight: at least its longest requests (p99 prompt + output) and a decode batch of its
    mean context (`replica_capacity`). KV headroom is the workload's, not a fixed share of
    memory: a model whose weights take most of a node still fits it when the tokens in flight
    do (DeepSeek-V3 FP8 on one 8 x H200 node). Only when no TP inside one node holds them does a
    replica span nodes: a MoE model's experts spread over whole nodes (expert parallelism,
    `_wide_expert_parallelism`), a dense model's layers in pipeline stages across nodes."""
    weights_gib = model.weight_bytes(precision) / GIB
    widest = min(domain_gpus, instance.num_gpus) if instance.num_gpus else domain_gpus
    longest = stats.p99_context_tokens if stats else 1
    best = None
    for tp in _tp_sizes(model, widest):
        hw = replica_hardware(model, precision, instance, tp)
        cap = replica_capacity(hw, stats.mean_prompt_tokens if stats else 1000.0,
                               stats.mean_output_tokens if stats else 200.0, itl_slo_s)
        if cap.kv_tokens < longest:
            continue
        usd = tp / cap.requests_per_s  # GPUs per served request/s; same price per GPU
        if best is None or usd < best[0] * 0.98:  # a wider TP must be clearly cheaper
            best = (usd, tp, cap)
    if best is not None:
        _, tp, cap = best
        return Parallelism(tp, 1, f"{weights_gib:.0f} GiB of {precision.value} weights over TP{tp} "
                           f"use {weights_gib / tp:.0f} GiB of the {usable_gib(instance):.0f} GiB "
                           f"vLLM may use per GPU; the rest holds {cap.kv_tokens:,} KV tokens, "
                           f"enough for the workload's longest requests ({longest:,} tokens) and "
                           f"a decode batch of {cap.decode_batch}; the cheapest served request "
                           "among the TP sizes that fit one node")
    if model.is_moe:
        wide = _wide_expert_parallelism(model, precision, instance, stats, itl_slo_s)
        if wide is not None:
            return wide
    tp = max(_tp_sizes(model, widest) or [1])
    budget = max(usable_gib(instance) - 1.0, 1.0)
    pp = max(2, math.ceil(weights_gib / (tp * budget)))
    if tp * pp > instance.num_gpus and (tp * pp) % instance.num_gpus:
        # a replica wider than a node takes whole nodes (sim/replica_setup.nodes_spanned)
        pp = math.ceil(tp * pp / instance.num_gpus) * instance.num_gpus // tp
    return Parallelism(tp, pp, f"{weights_gib:.0f} GiB of weights leave no KV cache for the "
                       f"workload's longest requests inside one {widest}-GPU node: TP{tp} inside "
                       f"a node, PP{pp} stages across nodes")


def _wide_layouts(model: ModelSpec, gpus: int) -> list[Parallelism]:
    """The layouts a MoE replica of `gpus` GPUs may take across nodes, valid for the model:
    experts over every GPU with one attention rank per GPU (the wide-EP deployments: SGLang
    --enable-dp-attention, vLLM --data-parallel-size), or with TP attention across the nodes,
    or experts split TP-style (SGLang's plain --tp 16 --nnodes 2)."""
    out = []
    for ep, dp_attention in ((gpus, True), (gpus, False), (1, False)):
        par = ExpertParallelism(ep=ep, dp_attention=dp_attention)
        if not par.parallelism_error(model, gpus):
            out.append(Parallelism(gpus, 1, "", ep, dp_attention))
    return out


def _wide_expert_parallelism(model: ModelSpec, precision: Precision, instance: InstanceType,
                             stats: TrafficStats | None, itl_slo_s: float) -> Parallelism | None:
    """A MoE model whose weights leave no room in one node: the replica spans 2 to
    MAX_REPLICA_NODES whole nodes, experts spread over them. Among the layouts whose KV cache
    holds the longest requests, the one needing the fewest GPUs to serve the mean rate in
    whole replicas (a wide replica is a coarse step of capacity), then the cheapest request."""
    per_node = max(1, instance.num_gpus)
    longest = stats.p99_context_tokens if stats else 1
    rate = stats.mean_rate_per_s if stats else 0.0
    best = None
    for nodes in range(2, MAX_REPLICA_NODES + 1):
        for par in _wide_layouts(model, nodes * per_node):
            hw = replica_hardware(model, precision, instance, par.gpus, par)
            cap = replica_capacity(hw, stats.mean_prompt_tokens if stats else 1000.0,
                                   stats.mean_output_tokens if stats else 200.0, itl_slo_s)
            if cap.kv_tokens < longest:
                continue
            key = (replicas_for(rate, cap.requests_per_s) * par.gpus,
                   par.gpus / cap.requests_per_s)
            if best is None or key < best[0]:
                best = (key, par, cap, nodes)
    if best is None:
        return None
    _, par, cap, nodes = best
    weights_gib = model.weight_bytes(precision) / GIB
    attention = (f"one attention rank per GPU ({par.tp} DP ranks, each caching its own "
                 "sequences)" if par.dp_attention else f"TP{par.tp} attention across the nodes")
    experts = (f"the {model.num_experts} experts over EP{par.ep}" if par.ep > 1
               else "every expert split over the GPUs")
    return replace(par, reason=(
        f"{weights_gib:.0f} GiB of {precision.value} weights leave no KV cache for the workload's "
        f"longest requests inside one {per_node}-GPU node: one replica spans {nodes} nodes "
        f"(a LeaderWorkerSet group), {experts}, {attention}; {cap.kv_tokens:,} KV tokens and a "
        f"decode batch of {cap.decode_batch}; the fewest GPUs serving the mean rate among "
        f"2-{MAX_REPLICA_NODES} nodes and the layouts the model allows"))


def prefill_alone_s(hw: ReplicaHardware, prompt_tokens: int, budget_tokens: int) -> float:
    """Seconds to prefill one prompt on an idle replica, in chunks of the token budget: the
    least TTFT it can have, whatever the autoscaler does."""
    total, done = 0.0, 0
    while done < prompt_tokens:
        chunk = min(budget_tokens, prompt_tokens - done)
        total += step_time_s(hw, decode_seqs=0, decode_context_tokens=0,
                             prefill_chunks=((chunk, done),))
        done += chunk
    return total


def unreachable_ttft_frac(hw: ReplicaHardware, prompt_sample: np.ndarray,
                          ttft_slo_s: float) -> float:
    """Share of the workload's requests whose prompt alone prefills slower than the TTFT
    SLO on an idle replica of this hardware (the vLLM default token budget)."""
    if len(prompt_sample) == 0:
        return 0.0
    budget = default_max_num_batched_tokens(hw.gpu)
    values, counts = np.unique(np.asarray(prompt_sample, np.int64), return_counts=True)
    # prefill time grows with the prompt: bisect the shortest prompt that misses the SLO
    lo, hi = 0, len(values)
    while lo < hi:
        mid = (lo + hi) // 2
        if prefill_alone_s(hw, int(values[mid]), budget) > ttft_slo_s:
            hi = mid
        else:
            lo = mid + 1
    return float(counts[lo:].sum() / counts.sum())


def cold_start_estimate_s(model: ModelSpec, precision: Precision,
                          instance: InstanceType | None = None, tp: int = 1) -> float:
    """Median cold start of the scenario's default model (serving/cold_start.py: image pull
    and extract, weights from gp3 with the streamer, engine init by size and TP), so the plan
    sizes on the cold start `simulate` will draw."""
    if instance is None:
        return IMAGE_PULL_S + model.weight_bytes(precision) / (STORAGE_GBPS * 1e9) + ENGINE_INIT_S
    hw = replica_hardware(model, precision, instance, tp)
    parts = cold_start_medians(hw, image_size_gb=DEFAULT_IMAGE_SIZE_GB, pull_image=True,
                               storage=DEFAULT_WEIGHT_STORAGE, loader=DEFAULT_WEIGHT_LOADER,
                               warm_compile_cache=False, skip_p2p_check=False)
    return float(sum(parts.values()))


@dataclass(frozen=True)
class TrafficStats:
    mean_rate_per_s: float
    burst_rate_per_s: float
    trough_rate_per_s: float
    burst_duration_s: float
    burst_period_s: float
    mean_prompt_tokens: float
    mean_output_tokens: float
    p99_context_tokens: int = 0  # prompt + output of the 99th-percentile request
    max_output_tokens: int = 0  # the longest output: how long a drain must be
    prompt_sample: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64),
                                      compare=False, repr=False)
    output_sample: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64),
                                      compare=False, repr=False)
    trace_span_s: float = 0.0  # a trace's whole length (0 for a shape): room to shift windows
    start_time: datetime | None = None  # a trace's first request, where it records wall clock


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
        return TrafficStats(
            mean,
            burst,
            trough,
            dur,
            period,
            float(prompts.mean()),
            float(outputs.mean()),
            _p99(prompts + outputs),
            int(outputs.max(initial=0)),
            prompts,
            outputs,
        )
    requests = build_requests(traffic, rng, base_dir)
    keep = requests.arrival_s < requests.arrival_s[0] + window_s if len(requests.arrival_s) else []
    arrival = requests.arrival_s[keep] - (requests.arrival_s[0] if len(requests.arrival_s) else 0)
    span = max(float(arrival.max()) if len(arrival) else 1.0, 1.0)
    mean = len(arrival) / span
    burst = max(_window_peak(arrival, 60.0), mean)
    trough = (
        min(float(np.percentile(np.bincount((arrival // 60).astype(np.int64)), 10)) / 60.0, mean)
        if len(arrival)
        else 0.0
    )
    prompts, outputs = requests.prompt_tokens[keep], requests.output_tokens[keep]
    whole_s = (
        float(requests.arrival_s[-1] - requests.arrival_s[0]) if len(requests.arrival_s) else 0.0
    )
    return TrafficStats(mean, burst, trough, 60.0, span, float(prompts.mean()),
                        float(outputs.mean()), _p99(prompts + outputs), int(outputs.max(initial=0)),
                        prompts, outputs, whole_s, requests.start_time)


def _p99(tokens: np.ndarray) -> int:
    return int(np.percentile(tokens, 99)) if len(tokens) else 0


def replica_hardware(model: ModelSpec, precision: Precision, instance: InstanceType,
                     gpus: int, par: Parallelism | None = None) -> ReplicaHardware:
    """The roofline view of one replica. Inside one node without EP, PP stages are approximated
    as a wider TP group; a replica with EP / DP attention or spanning nodes gets the layout
    `simulate` gives the same scenario (sim/replica_setup.py), so the plan sizes what it
    simulates."""
    if par is None or (par.ep == 1 and not par.dp_attention and gpus <= instance.num_gpus):
        return ReplicaHardware(gpu=instance.gpu_spec, model=model, weight_precision=precision,
                               kv_precision=precision, tp=gpus)
    layout = parallel_layout(ExpertParallelism(ep=par.ep, dp_attention=par.dp_attention),
                             instance, par.tp, gpus)
    return per_rank_host(ReplicaHardware(gpu=instance.gpu_spec, model=model,
                                         weight_precision=precision, kv_precision=precision,
                                         tp=gpus, pp=par.pp, layout=layout))


def replica_kv_tokens(hw: ReplicaHardware) -> int:
    """Tokens the replica's KV cache holds (serving/kv_cache.py: each GPU its share of a
    token's KV heads, each DP attention rank its own sequences)."""
    per_gpu = kv_cache_bytes_per_gpu(hw, gpu_memory_utilization=GPU_MEMORY_UTILIZATION,
                                     activation_reserve_gib=ACTIVATION_RESERVE_GIB,
                                     non_torch_gib=NON_TORCH_GIB)
    shares = hw.tp if hw.layout.is_plain else kv_gpu_shares(hw) * hw.layout.attention_dp
    return max(0, int(per_gpu * shares / hw.kv_bytes_per_token))


@dataclass(frozen=True)
class Capacity:
    requests_per_s: float  # at full load
    decode_batch: int
    prefill_s: float  # one mean prompt
    kv_tokens: int
    # the KV cache the engine's sequence limit (max_num_seqs) of mean requests holds, as a
    # share of the cache: below the KV target, the limit saturates first and KV use never
    # reaches the target
    kv_frac_at_seq_limit: float = 1.0


def replica_capacity(hw: ReplicaHardware, prompt_tokens: float, output_tokens: float,
                     itl_slo_s: float) -> Capacity:
    """Requests/s one replica sustains: the largest decode batch whose step meets 0.8 x the ITL
    SLO and fits the KV cache at KV_TARGET_FRAC, with each request's prefill run in turn."""
    kv_tokens = replica_kv_tokens(hw)
    context = prompt_tokens + output_tokens / 2
    kv_batch = max(1, int(KV_TARGET_FRAC * kv_tokens / (prompt_tokens + output_tokens)))
    # with DP attention each rank runs its own scheduler and limit (sim/replica_setup.py)
    seq_limit = default_max_num_seqs(hw.gpu) * hw.layout.attention_dp
    batch = min(kv_batch, seq_limit)
    while batch > 1 and step_time_s(hw, decode_seqs=batch,
                                    decode_context_tokens=batch * context) > 0.8 * itl_slo_s:
        batch = max(1, batch * 3 // 4)
    step = step_time_s(hw, decode_seqs=batch, decode_context_tokens=batch * context)
    prefill = step_time_s(hw, decode_seqs=0, decode_context_tokens=0,
                          prefill_chunks=((max(1, int(prompt_tokens)), 0),))
    per_request_s = prefill + output_tokens * step / batch
    kv_at_limit = seq_limit * context / kv_tokens if kv_tokens > 0 else 1.0
    return Capacity(1.0 / per_request_s, batch, prefill, kv_tokens, kv_at_limit)


def engine_config_of(hw: ReplicaHardware, request_timeout_s: float = 600.0) -> EngineConfig:
    """The engine a default scenario runs for this hardware (sim/replica_setup.py `engine_config`
    with the scenario's EngineSettings defaults), for the shared oracle."""
    ranks = hw.layout.attention_dp  # per-rank limits, as sim/replica_setup.engine_config
    return EngineConfig(
        max_num_seqs=ranks * default_max_num_seqs(hw.gpu),
        max_num_batched_tokens=ranks * default_max_num_batched_tokens(hw.gpu),
        block_size=BLOCK_SIZE,
        num_blocks=num_kv_blocks(
            hw,
            gpu_memory_utilization=GPU_MEMORY_UTILIZATION,
            block_size=BLOCK_SIZE,
            activation_reserve_gib=ACTIVATION_RESERVE_GIB,
            non_torch_gib=NON_TORCH_GIB,
        ),
        max_model_len=hw.model.max_context_tokens,
        request_timeout_s=request_timeout_s,
    )


def queue_threshold(capacity_rps: float, ttft_slo_s: float) -> int:
    """Waiting requests per replica whose drain time is half the TTFT SLO (1..32)."""
    return int(min(32, max(1, math.floor(0.5 * ttft_slo_s * capacity_rps))))


def replicas_for(rate_per_s: float, capacity_rps: float) -> int:
    return max(1, math.ceil(rate_per_s / (capacity_rps * TARGET_LOAD_FRAC)))
