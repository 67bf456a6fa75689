"""Mixture-of-experts layers from their own shapes: tokens per expert, grouped GEMMs, routing.

A step of `T` tokens routes each token to `k` of `E` experts. Expert `e` receives
`n_e ~ Binomial(T, k / E)` tokens (uniform routing); the grouped GEMM that runs every local
expert gives each its own row tiles, so it computes `pad(n_e)` rows: `n_e` rounded up to the
kernel's M tile (`GROUPED_GEMM_TILE_ROWS`), and never less than `n_e + GEMM_HALF_TOKENS` (the
small-M waste the dense GEMM fit carries, serving/kernels.py). Each expert is its own
roofline, the smooth maximum of streaming its weights (when any token reaches it) and its
FLOPs; the layer costs the sum over the experts a GPU holds. So a decode batch of 660 tokens
over Mixtral's 8 experts computes 8 x 256 rows, not 2 x 660 + 16: the expert GEMMs no longer
run at the dense rate of one big GEMM. The rest of the layer's weights (attention projections,
dense layers, shared experts, router) are one dense GEMM of the tokens each rank holds.

Around the GEMMs each MoE layer runs routing kernels (top-k, permute of the token rows to
expert order, finalize: unpermute and the weighted sum of the k outputs), each a kernel floor
plus its bytes at the elementwise bandwidth.

With expert parallelism the busiest GPU sets the pace (serving/expert_parallel.py
`imbalance_factor`: experts are not equally popular and a GPU's load is the sum of its local
experts').
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING

from gpuscale.serving.expert_parallel import ParallelLayout, attention_tp, imbalance_factor

if TYPE_CHECKING:
    from gpuscale.catalog.specs import ModelSpec, Precision
    from gpuscale.serving.hardware import ReplicaHardware

# Rows of one M tile of a grouped (MoE) GEMM: each expert's token rows are padded to it.
# DeepGEMM's grouped kernels align every expert segment to 128 rows
# (deepseek-ai/DeepGEMM @55ab91f deep_gemm/jit_kernels/m_grouped_gemm.py,
# `get_m_alignment_for_contiguous_layout()` = 128); TensorRT-LLM's SM90 grouped GEMMs run
# 128-row CTA tiles (cpp/tensorrt_llm/kernels/cutlass_kernels/moe_gemm). vLLM's Triton kernel
# picks smaller M blocks for small batches (assumed the same here).
GROUPED_GEMM_TILE_ROWS = 128
# Routing kernels per MoE layer besides the GEMMs: top-k gating, permute (expand rows),
# activation quantisation of the expanded rows, finalize (unpermute + weighted sum): the
# kernel sequence of TensorRT-LLM's MoE runner (cpp/tensorrt_llm/kernels/mixtureOfExperts/
# moe_kernels.cu) and vLLM's fused_moe (moe_align_block_size, topk, sum of the k outputs).
ROUTING_KERNELS_PER_LAYER = 4


def _binomial_window(n: int, p: float) -> range:
    """Counts holding all but ~1e-12 of Binomial(n, p)'s mass: mean +- 8 sd, widened by 12
    counts for the skewed tails of a small n x p."""
    mean = n * p
    spread = 8.0 * math.sqrt(n * p * (1.0 - p)) + 12.0
    return range(max(0, math.floor(mean - spread)), min(n, math.ceil(mean + spread)) + 1)


@lru_cache(maxsize=65536)
def expert_rows(num_tokens: int, route_prob: float, tile: int, half_tokens: float
                ) -> tuple[float, float]:
    """(expected rows one expert's GEMM computes, probability any token reaches it) for
    `num_tokens` tokens each reaching the expert with probability `route_prob` (k / E)."""
    if num_tokens <= 0 or route_prob <= 0.0:
        return 0.0, 0.0
    p = min(route_prob, 1.0)
    if p >= 1.0:
        return _padded(num_tokens, tile, half_tokens), 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    log_n = math.lgamma(num_tokens + 1)
    rows = 0.0
    for count in _binomial_window(num_tokens, p):
        if count == 0:
            continue
        log_pmf = (log_n - math.lgamma(count + 1) - math.lgamma(num_tokens - count + 1)
                   + count * log_p + (num_tokens - count) * log_q)
        rows += math.exp(log_pmf) * _padded(count, tile, half_tokens)
    return rows, 1.0 - math.exp(num_tokens * log_q)


def _padded(count: int, tile: int, half_tokens: float) -> float:
    return max(math.ceil(count / tile) * tile, count + half_tokens)


def non_expert_layer_params(model: ModelSpec) -> int:
    """Per-step GEMM parameters outside the routed experts: attention projections, dense
    layers' MLPs, shared experts and routers (embeddings and the LM head apart)."""
    dense = model.dense_layers * 3 * model.hidden * model.dense_ffn
    per_moe = model.shared_experts * model.expert_params + model.hidden * model.num_experts
    return model.layers * model.attention_params + dense + model.moe_layers * per_moe


def gemm_time_s(hw: ReplicaHardware, num_tokens: int, half_tokens: float) -> float:
    """Every layer's GEMMs of an MoE model on one GPU of the replica, as the slowest GPU
    runs them: the non-expert part on each attention rank's tokens, the experts grouped, and
    the routing kernels (the per-GEMM kernel floors are the caller's, as for a dense model)."""
    if num_tokens <= 0:
        return 0.0
    layout: ParallelLayout = hw.layout
    model = hw.model
    gpus = hw.tp_degree
    bw_gpu = hw.bytes_per_s / gpus
    flops_gpu = hw.flops_per_s / gpus
    bytes_per_param = hw.weight_precision.bytes_per_elem
    rank_gpus = attention_tp(layout, gpus)
    rank_tokens = num_tokens / max(1, layout.attention_dp)
    dense_params = non_expert_layer_params(model) / rank_gpus
    dense = math.hypot(dense_params * bytes_per_param / bw_gpu,
                       2.0 * dense_params * (rank_tokens + half_tokens) / flops_gpu)
    experts = model.moe_layers * experts_time_s(hw, num_tokens, half_tokens)
    floors = model.moe_layers * ROUTING_KERNELS_PER_LAYER * hw.kernel_floor_s
    return dense + experts + floors + routing_bytes_s(hw, num_tokens)


def experts_time_s(hw: ReplicaHardware, num_tokens: int, half_tokens: float) -> float:
    """One MoE layer's expert GEMMs on the busiest GPU."""
    layout: ParallelLayout = hw.layout
    model = hw.model
    gpus = hw.tp_degree
    slots = model.num_experts + (layout.redundant_experts if layout.ep > 1 else 0)
    ep = max(1, layout.ep)
    local_experts = slots / ep
    shard = max(1, gpus // ep)  # GPUs one expert's weights are split over
    rows, touched = expert_rows(num_tokens, model.experts_per_token / slots,
                                GROUPED_GEMM_TILE_ROWS, half_tokens)
    one = grouped_gemm_expert_s(model.expert_params / shard, rows, touched,
                                hw.weight_precision.bytes_per_elem, hw.bytes_per_s / gpus,
                                hw.flops_per_s / gpus)
    return local_experts * one * imbalance_factor(model, layout)


def grouped_gemm_expert_s(params: float, rows: float, touched: float, bytes_per_param: float,
                          bytes_per_s: float, flops_per_s: float) -> float:
    """One expert's share of a grouped GEMM on one GPU: the smooth maximum of streaming its
    `params` weights (with probability `touched`) and `rows` rows of FLOPs, as the dense
    GEMM curve (serving/kernels.py) takes one GEMM."""
    return math.hypot(touched * params * bytes_per_param / bytes_per_s,
                      2.0 * params * rows / flops_per_s)


def routing_bytes_s(hw: ReplicaHardware, num_tokens: int) -> float:
    """Bytes the routing kernels move on one GPU: each token's hidden read and written
    (permute in, finalize out, BF16) and its k expanded rows written in the GEMM's input
    precision and read back as BF16 outputs, at the elementwise bandwidth. A GPU handles
    the tokens of its attention rank (every token, TP-style, when the experts are sharded)."""
    layout: ParallelLayout = hw.layout
    model = hw.model
    gpus = hw.tp_degree
    tokens = num_tokens if layout.ep <= 1 else num_tokens / gpus
    per_token = model.hidden * (2 * 2 + model.experts_per_token * (
        hw.weight_precision.bytes_per_elem + 2))
    return model.moe_layers * tokens * per_token / (hw.elementwise_bytes_per_s / gpus)


def weight_bytes_per_gpu(model: ModelSpec, precision: Precision, layout: ParallelLayout,
                         gpus: int, stages: int) -> float:
    """Weights one GPU holds: the non-expert weights (embeddings, attention, dense and shared
    MLPs) split over its attention rank's GPUs, the routed experts over the EP group (each GPU
    `(experts + redundant) / ep` of them, split over `gpus / ep`), a `stages`-th of the layers."""
    total = model.weight_bytes(precision)
    routed = model.moe_layers * model.num_experts * model.expert_params \
        * precision.bytes_per_elem
    rank_gpus = attention_tp(layout, gpus)
    if layout.ep > 1:
        slots = model.num_experts + layout.redundant_experts
        experts = routed * slots / model.num_experts / layout.ep / max(1, gpus // layout.ep)
    else:
        experts = routed / gpus
    return ((total - routed) / rank_gpus + experts) / stages
