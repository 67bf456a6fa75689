"""The GPU kernels of one forward step, each a small function of the token or sequence count.

- GEMMs of the L layers (QKV, O, up/gate, down): per layer a smooth maximum of the weight
  stream (bytes / (HBM x hbm_efficiency)) and the compute (FLOPs / (peak x compute_efficiency
  [x fp8_efficiency_factor])), the compute taken at n + GEMM_HALF_TOKENS tokens because small-M
  tiles waste work, plus a fixed kernel floor per GEMM. No hard switch between the rooflines:
  sqrt(mem^2 + comp^2) (the p = 2 fit below);
- the LM head once per sequence that emits a token this step (s rows, BF16 weights), not per
  prefill token; the input embedding is a row lookup, not a GEMM;
- elementwise work per token (2 RMSNorms, RoPE, SiLU x up, 2 residual adds): bytes moved /
  (HBM x elementwise_bw_frac), smoothly at least their kernel floors;
- attention at its own precision (BF16 FlashAttention beside FP8 GEMMs): prefill FLOPs
  4 L q_dim c p over the prefix and 4 L q_dim c c/2 causal, the KV of the context read from HBM
  (decode sequences and the earlier chunks a chunked prefill re-reads), and per-layer kernel
  floors (KV-cache write, one decode and one prefill kernel when present); where a GPU's
  attention kernels were profiled (A100, gpus.yaml) each part runs at its measured rate and
  floor, elsewhere at the GEMM factors;
- two all-reduces per layer over the TP group: the measured NCCL curve (small messages flat)
  or, for engines with their own one-shot kernel below 8 MB, the affine fit;
- host time of the engine (serving/engines.py) and, without CUDA graphs, the CPU's launch of
  every kernel (EAGER_LAUNCH_S per kernel).

Every constant is from a measurement: Vidur's kernel profiles for the GEMM curve, floors,
elementwise, attention (A100) and all-reduce (gpus.yaml). Sources: ../shared/reference/
hardware-and-models.md 1.2 and 5.3, calibration.md rows A1-A4, docs/calibration.md.
"""

from __future__ import annotations

import math

from gpuscale.catalog.specs import ModelSpec, Precision
from gpuscale.serving.hardware import EAGER_KERNELS_PER_LAYER, ReplicaHardware

ACTIVATION_BYTES = 2  # activations stay BF16 even with FP8 weights
# GEMM curve, one fit over Vidur's mlp.csv (microsoft/vidur @7d47513, 400 points: CodeLlama-34B
# A100/H100, Llama-2-70B A100/H100, Llama-2-7B H100, TP1-8, 1-4096 tokens): time = sqrt(mem^2
# + comp(n + 16)^2) + 4 kernel floors, 8.5% rms, worst 31% (H100 Llama-2-70B TP1 at 256
# tokens, where the profile has a step); p = 4 gives 13%, a hard max 15%+.
GEMM_HALF_TOKENS = 16.0
GEMMS_PER_LAYER = 4
ELEMENTWISE_KERNELS_PER_LAYER = 6  # 2 norms, RoPE, activation, 2 residual adds (Vidur's ops)


def smooth_max(a: float, b: float) -> float:
    """sqrt(a^2 + b^2): the p = 2 blend of two rooflines (GEMM_HALF_TOKENS comment)."""
    return math.sqrt(a * a + b * b)


def expert_coverage_frac(num_tokens: int, num_experts: int, experts_per_token: int) -> float:
    """Expected fraction of experts a batch of `num_tokens` touches under uniform routing.

    1 - (1 - k/E)^tokens: one decode token reads k/E of the expert weights, a large batch all.
    """
    if num_experts == 0:
        return 1.0
    return 1.0 - (1.0 - experts_per_token / num_experts) ** max(num_tokens, 1)


def lm_head_params(model: ModelSpec) -> int:
    return model.vocab * model.hidden


def weight_bytes_read(model: ModelSpec, precision: Precision, num_tokens: int) -> float:
    """Layer weight bytes (all GPUs together) streamed by one step of `num_tokens` tokens.

    Excludes the embeddings: the input table is a row lookup and the LM head is its own term.
    """
    layers = model.total_params - 2 * lm_head_params(model)
    if not model.is_moe:
        return layers * precision.bytes_per_elem
    routed = model.moe_layers * model.num_experts * model.expert_params
    cover = expert_coverage_frac(num_tokens, model.num_experts, model.experts_per_token)
    return (layers - routed + routed * cover) * precision.bytes_per_elem


def active_layer_params(model: ModelSpec) -> int:
    """Parameters of the layers one token multiplies (the LM head and embedding apart)."""
    return model.active_params - 2 * lm_head_params(model)


def gemm_time_s(hw: ReplicaHardware, num_tokens: int) -> float:
    """QKV, O and MLP/expert GEMMs of every layer for `num_tokens` tokens (LM head apart)."""
    if num_tokens <= 0:
        return 0.0
    mem = weight_bytes_read(hw.model, hw.weight_precision, num_tokens) / hw.bytes_per_s
    comp = 2.0 * active_layer_params(hw.model) * (num_tokens + GEMM_HALF_TOKENS) / hw.flops_per_s
    return smooth_max(mem, comp) + hw.model.layers * GEMMS_PER_LAYER * hw.kernel_floor_s


def layer_linear_time_s(hw: ReplicaHardware, num_tokens: int) -> float:
    """Per-layer QKV+O+MLP GEMM time (what Vidur's mlp.csv profiles; rows A1-A3)."""
    params = hw.model.attention_params + hw.model.expert_params
    mem = params * hw.weight_precision.bytes_per_elem / hw.bytes_per_s
    comp = 2.0 * params * (num_tokens + GEMM_HALF_TOKENS) / hw.flops_per_s
    return smooth_max(mem, comp) + GEMMS_PER_LAYER * hw.kernel_floor_s


def lm_head_time_s(hw: ReplicaHardware, num_seqs: int) -> float:
    """Logits for one token per sequence that samples this step; the head stays BF16 (ModelOpt
    FP8 checkpoints keep lm_head unquantised)."""
    if num_seqs <= 0:
        return 0.0
    params = lm_head_params(hw.model)
    mem = params * Precision.BF16.bytes_per_elem / hw.bytes_per_s
    comp = 2.0 * params * (num_seqs + GEMM_HALF_TOKENS) / hw.attention_flops_per_s
    return smooth_max(mem, comp) + hw.kernel_floor_s


def elementwise_bytes_per_token(model: ModelSpec, tp: int) -> float:
    """HBM bytes one token moves per layer per GPU through norms, RoPE, activation and adds.

    Norm: read + write hidden (x2 norms); add: read 2 x hidden, write hidden (x2); RoPE: read +
    write the GPU's q and k heads; SiLU x up: read 2 x ffn / tp, write ffn / tp. All BF16.
    """
    h = model.hidden
    q_dim = model.q_heads * model.head_dim
    kv_dim = model.kv_heads * model.head_dim
    ffn = model.ffn * max(1, model.experts_per_token + model.shared_experts) if model.is_moe \
        else model.ffn
    elems = 2 * 2 * h + 2 * 3 * h + 2 * (q_dim + kv_dim) / tp + 3 * ffn / tp
    return elems * ACTIVATION_BYTES


def elementwise_time_s(hw: ReplicaHardware, num_tokens: int) -> float:
    """Per-token elementwise kernels of every layer (each GPU does its share in parallel)."""
    if num_tokens <= 0:
        return 0.0
    per_gpu_bw = hw.elementwise_bytes_per_s / hw.tp_degree
    stream = num_tokens * elementwise_bytes_per_token(hw.model, hw.tp_degree) / per_gpu_bw
    floor = ELEMENTWISE_KERNELS_PER_LAYER * hw.kernel_floor_s
    return hw.model.layers * smooth_max(floor, stream)


def prefill_attention_time_s(hw: ReplicaHardware, chunk_tokens: int, prefix_tokens: int) -> float:
    """A prefill chunk's attention in BF16: 4 L q_dim c p FLOPs over its prefix and 4 L q_dim c
    c/2 over itself (causal), each at its measured rate, plus reading the KV of the
    `prefix_tokens` earlier chunks (or cached prefix) from HBM."""
    if chunk_tokens <= 0:
        return 0.0
    q_dim = hw.model.q_heads * hw.model.head_dim
    per_token_pair = 4.0 * hw.model.layers * q_dim
    return (per_token_pair * chunk_tokens * prefix_tokens / hw.attention_prefix_flops_per_s
            + per_token_pair * chunk_tokens * chunk_tokens / 2.0 / hw.attention_causal_flops_per_s
            + prefix_tokens * hw.kv_bytes_per_token / hw.bytes_per_s)


def decode_attention_time_s(hw: ReplicaHardware, context_tokens: float) -> float:
    """Decode attention is a KV-cache read: every cached token of every decoding sequence."""
    return context_tokens * hw.kv_bytes_per_token / hw.attention_kv_bytes_per_s


def attention_floor_s(hw: ReplicaHardware, decode_seqs: int, num_chunks: int) -> float:
    """Per layer: the KV-cache write, plus one decode and one prefill attention kernel when the
    step has such sequences (engines launch them apart: FlashAttention varlen / paged decode)."""
    return hw.model.layers * (hw.kernel_floor_s
                              + (hw.attention_decode_floor_s if decode_seqs else 0.0)
                              + (hw.attention_prefill_floor_s if num_chunks else 0.0))


def one_allreduce_s(hw: ReplicaHardware, payload_bytes: float) -> float:
    """One all-reduce: the engine's own kernel (affine fit, or its measured small-message curve
    where the catalog has one) or NCCL's curve plus the eager launch (`sarathi`)."""
    tp = hw.tp_degree
    if hw.custom_allreduce:
        if hw.gpu.allreduce_custom_small_us:
            return hw.gpu.allreduce_s(tp, payload_bytes, custom=True)
        bus, latency_s = hw.gpu.allreduce_bus_bytes_per_s_and_latency_s(tp)
        return latency_s + 2.0 * (tp - 1) / tp * payload_bytes / bus
    return hw.gpu.allreduce_s(tp, payload_bytes) + hw.allreduce_launch_s


def allreduce_time_s(hw: ReplicaHardware, num_tokens: int) -> float:
    """Two all-reduces per layer over the TP group (attention out and MLP out).

    Each moves num_tokens x hidden BF16 values; its time comes from the catalog's measured
    profile for this GPU and TP degree (`one_allreduce_s`). Depends on the tokens in the step
    only, never on the context, so a pure-decode stretch keeps a constant all-reduce term.
    """
    if hw.tp_degree <= 1 or num_tokens <= 0:
        return 0.0
    return (
        2 * hw.model.layers * one_allreduce_s(hw, num_tokens * hw.model.hidden * ACTIVATION_BYTES)
    )


def layers_time_s(hw: ReplicaHardware, num_tokens: int, attention_s: float,
                  floors_s: float) -> float:
    """Every layer of the model on one TP group: GEMMs, elementwise, attention, all-reduce."""
    return (gemm_time_s(hw, num_tokens) + elementwise_time_s(hw, num_tokens) + attention_s
            + floors_s + allreduce_time_s(hw, num_tokens))


def host_time_s(hw: ReplicaHardware, num_seqs: int) -> float:
    return hw.host_step_s + hw.host_seq_s * num_seqs


def eager_launch_floor_s(hw: ReplicaHardware) -> float:
    """Without CUDA graphs the GPU cannot finish a step before the CPU launched its kernels."""
    if hw.cuda_graphs:
        return 0.0
    return hw.model.layers * EAGER_KERNELS_PER_LAYER * hw.eager_launch_s
