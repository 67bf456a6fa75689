"""Step-time model for one tensor-parallel replica: GPU kernels plus the engine's host time.

A forward step of `n` tokens (decode tokens + prefill chunk tokens) from `s` sequences costs
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
- a MoE layer's routed experts from their own shapes (serving/moe.py: tokens per expert,
  grouped-GEMM tiles, routing kernels) and, for a replica with EP, DP attention or spanning
  nodes, its layout's weights, KV reads and collectives (serving/expert_parallel.py), entered
  at a few call sites below; a dense one-node replica's layout is plain and costs nothing;
- host time of the engine (serving/engines.py): absolute seconds per step and per sequence
  (scheduler, sampling, detokenisation), exposed unless hidden; without CUDA graphs the GPU
  also waits for the CPU to launch every kernel (EAGER_LAUNCH_S per kernel).

Every constant is from a measurement: Vidur's kernel profiles for the GEMM curve, floors,
elementwise, attention (A100) and all-reduce (gpus.yaml), BLIS's fitted host coefficients for
vLLM, the engine profiles for the rest. Sources: ../shared/reference/hardware-and-models.md
1.2 and 5.3, calibration.md rows A1-A4, docs/calibration.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gpuscale.catalog.specs import GpuSpec, ModelSpec, Precision
from gpuscale.serving import expert_parallel, moe
from gpuscale.serving.expert_parallel import PLAIN_LAYOUT, ParallelLayout

ACTIVATION_BYTES = 2  # activations stay BF16 even with FP8 weights
# GEMM curve, one fit over Vidur's mlp.csv (microsoft/vidur @7d47513, 400 points: CodeLlama-34B
# A100/H100, Llama-2-70B A100/H100, Llama-2-7B H100, TP1-8, 1-4096 tokens): time = sqrt(mem^2
# + comp(n + 16)^2) + 4 kernel floors, 8.5% rms, worst 31% (H100 Llama-2-70B TP1 at 256
# tokens, where the profile has a step); p = 4 gives 13%, a hard max 15%+.
GEMM_HALF_TOKENS = 16.0
GEMMS_PER_LAYER = 4
ELEMENTWISE_KERNELS_PER_LAYER = 6  # 2 norms, RoPE, activation, 2 residual adds (Vidur's ops)
# Host coefficients BLIS fitted on H100 vLLM traces [S2] (hardware-and-models.md 1.2), the
# default engine's host time per step and per sequence (BLIS's 32 us per layer was the launch
# gaps between kernels; the kernel floors above now carry that term from kernel profiles).
HOST_STEP_S = 126e-6
HOST_SEQ_S = 4e-6
# PyTorch eager mode: the CPU launches each kernel (dispatch + cudaLaunchKernel). ~15 kernels
# per layer (6 elementwise, 4 GEMMs, attention + KV write, 2 all-reduces, 2 reshapes).
EAGER_KERNELS_PER_LAYER = 15
EAGER_LAUNCH_S = 17e-6  # engines.py cites the measurement (8B H100 eager vs graphs)


@dataclass(frozen=True)
class ReplicaHardware:
    """The fixed inputs of the step-time model for one replica (a TP group) and its engine."""

    gpu: GpuSpec
    model: ModelSpec
    weight_precision: Precision
    kv_precision: Precision
    tp: int
    # Multiplier on the whole step, kept for an engine whose host overhead is only known as a
    # ratio (vLLM 0.6's, serving/engines.py); 1.0 otherwise.
    step_time_factor: float = 1.0
    host_step_s: float = HOST_STEP_S  # exposed host time per step (scheduler, launch)
    host_seq_s: float = HOST_SEQ_S  # per sequence in the batch (sampling, bookkeeping)
    cuda_graphs: bool = True  # False: the GPU waits for per-kernel CPU launches
    custom_allreduce: bool = True  # one-shot kernel below 8 MB (vLLM, TRT-LLM); else NCCL
    eager_launch_s: float = EAGER_LAUNCH_S
    # CPU cost of each NCCL call an engine launches from Python outside CUDA graphs, exposed
    # because the collective waits for every rank's launch (serving/engines.py, `sarathi`).
    allreduce_launch_s: float = 0.0
    # Pipeline stages: the replica's `tp` GPUs form `pp` stages of tp / pp GPUs each (`tp` stays
    # the replica's GPU count, which pods, memory and cost read).
    pp: int = 1
    # Expert parallelism, DP attention and the nodes the replica spans (serving/
    # expert_parallel.py); the plain layout is one node's TP group.
    layout: ParallelLayout = PLAIN_LAYOUT

    @property
    def tp_degree(self) -> int:
        """GPUs of one tensor-parallel group (one pipeline stage)."""
        return max(1, self.tp // self.pp)

    @property
    def flops_per_s(self) -> float:
        """Sustained GEMM FLOP/s of one TP group at the weight precision."""
        return self.gpu.sustained_flops(self.weight_precision) * self.tp_degree

    @property
    def attention_flops_per_s(self) -> float:
        """Sustained FLOP/s of attention: BF16 whatever the weights (FlashAttention in BF16)."""
        return self.gpu.sustained_flops(Precision.BF16) * self.tp_degree

    @property
    def bytes_per_s(self) -> float:
        """Sustained HBM bytes/s of one TP group."""
        return self.gpu.memory_bandwidth_tbps * 1e12 * self.gpu.hbm_efficiency * self.tp_degree

    def _attention_frac(self, frac: float | None) -> float:
        return self.gpu.compute_efficiency if frac is None else frac

    @property
    def attention_prefix_flops_per_s(self) -> float:
        """Prefill attention of a chunk over its cached prefix (GpuSpec.attention_prefix_frac)."""
        return self.gpu.peak_flops(Precision.BF16) * self.tp_degree \
            * self._attention_frac(self.gpu.attention_prefix_frac)

    @property
    def attention_causal_flops_per_s(self) -> float:
        """Prefill attention of a chunk over itself, causal (GpuSpec.attention_causal_frac)."""
        return self.gpu.peak_flops(Precision.BF16) * self.tp_degree \
            * self._attention_frac(self.gpu.attention_causal_frac)

    @property
    def attention_kv_bytes_per_s(self) -> float:
        """HBM bytes/s at which decode attention reads the KV cache, in the replica's KV bytes:
        only the GPUs reading distinct KV count (expert_parallel.kv_read_gpus: an MLA latent is
        read whole by every GPU of a TP group). A GQA model's batches pay
        GpuSpec.attention_gqa_batch_overhead_frac on top of a uniform-batch profile's rate;
        MLA's absorbed decode adds its FLOPs (expert_parallel.mla_decode_bytes_per_s)."""
        frac = self.gpu.attention_decode_bw_frac
        readers = expert_parallel.kv_read_gpus(self.model, self.layout, self.tp_degree)
        rate = self.gpu.memory_bandwidth_tbps * 1e12 * readers \
            * (self.gpu.hbm_efficiency if frac is None else frac)
        if self.model.q_heads > self.model.kv_heads:
            rate /= 1.0 + self.gpu.attention_gqa_batch_overhead_frac
        if self.model.is_mla:
            rate = expert_parallel.mla_decode_bytes_per_s(self, rate)
        return rate

    @property
    def attention_decode_floor_s(self) -> float:
        floor = self.gpu.attention_decode_floor_us
        return self.kernel_floor_s if floor is None else floor * 1e-6

    @property
    def attention_prefill_floor_s(self) -> float:
        floor = self.gpu.attention_prefill_floor_us
        return self.kernel_floor_s if floor is None else floor * 1e-6

    @property
    def elementwise_bytes_per_s(self) -> float:
        return self.gpu.memory_bandwidth_tbps * 1e12 * self.gpu.elementwise_bw_frac \
            * self.tp_degree

    @property
    def kv_bytes_per_token(self) -> int:
        return self.model.kv_bytes_per_token(self.kv_precision)

    @property
    def kernel_floor_s(self) -> float:
        return self.gpu.kernel_floor_us * 1e-6


def smooth_max(a: float, b: float) -> float:
    """sqrt(a^2 + b^2): the p = 2 blend of two rooflines (GEMM_HALF_TOKENS comment)."""
    return math.sqrt(a * a + b * b)


def lm_head_params(model: ModelSpec) -> int:
    return model.vocab * model.hidden


def layer_weight_bytes(model: ModelSpec, precision: Precision) -> float:
    """Layer weight bytes (all GPUs together) a dense model streams every step. Excludes the
    embeddings: the input table is a row lookup and the LM head is its own term. (An MoE step
    reads only the experts its tokens reach: serving/moe.py.)"""
    return (model.total_params - 2 * lm_head_params(model)) * precision.bytes_per_elem


def _active_layer_params(model: ModelSpec) -> int:
    return model.active_params - 2 * lm_head_params(model)


def gemm_time_s(hw: ReplicaHardware, num_tokens: int) -> float:
    """QKV, O and MLP/expert GEMMs of every layer for `num_tokens` tokens (LM head apart); an
    MoE model's experts run as grouped GEMMs of their own token counts (serving/moe.py)."""
    if num_tokens <= 0:
        return 0.0
    if hw.model.is_moe:
        return moe.gemm_time_s(hw, num_tokens, GEMM_HALF_TOKENS) \
            + hw.model.layers * GEMMS_PER_LAYER * hw.kernel_floor_s
    mem = layer_weight_bytes(hw.model, hw.weight_precision) / hw.bytes_per_s
    comp = 2.0 * _active_layer_params(hw.model) * (num_tokens + GEMM_HALF_TOKENS) / hw.flops_per_s
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
    """Per-token elementwise kernels of every layer (each GPU does its share in parallel; with
    DP attention a GPU holds only its rank's tokens, split over the rank's GPUs)."""
    if num_tokens <= 0:
        return 0.0
    per_gpu_bw = hw.elementwise_bytes_per_s / hw.tp_degree
    ranks = hw.layout.attention_dp
    stream = num_tokens / ranks * elementwise_bytes_per_token(hw.model, hw.tp_degree // ranks) \
        / per_gpu_bw
    floor = ELEMENTWISE_KERNELS_PER_LAYER * hw.kernel_floor_s
    return hw.model.layers * smooth_max(floor, stream)


def prefill_attention_time_s(hw: ReplicaHardware, chunk_tokens: int, prefix_tokens: int) -> float:
    """A prefill chunk's attention in BF16: 4 L q_dim c p FLOPs over its prefix and 4 L q_dim c
    c/2 over itself (causal), each at its measured rate, plus reading the KV of the
    `prefix_tokens` earlier chunks (or cached prefix) from HBM."""
    if chunk_tokens <= 0:
        return 0.0
    per_token_pair = 4.0 * hw.model.layers * hw.model.attention_flops_dim
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


def one_allreduce_s(hw: ReplicaHardware, payload_bytes: float, gpus: int = 0) -> float:
    """One all-reduce over the TP group (or `gpus` GPUs of one NVLink domain)."""
    tp = gpus or hw.tp_degree
    if hw.custom_allreduce:
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


def host_time_s(hw: ReplicaHardware, num_seqs: int) -> float:
    return hw.host_step_s + hw.host_seq_s * num_seqs


def eager_launch_floor_s(hw: ReplicaHardware) -> float:
    """Without CUDA graphs the GPU cannot finish a step before the CPU launched its kernels."""
    if hw.cuda_graphs:
        return 0.0
    return hw.model.layers * EAGER_KERNELS_PER_LAYER * hw.eager_launch_s


# Stage-to-stage activation send: aiconfigurator's 10 us p2p latency (the catalog's default
# all-reduce latency) plus the bytes over the datasheet link.
P2P_LATENCY_S = 10e-6


def p2p_time_s(hw: ReplicaHardware, num_tokens: float) -> float:
    """Send one micro-batch's activations to the next pipeline stage."""
    return P2P_LATENCY_S + num_tokens * hw.model.hidden * ACTIVATION_BYTES \
        / (hw.gpu.link_gbps_per_direction * 1e9)


def _layers_s(hw: ReplicaHardware, num_tokens: int, attention_s: float, floors_s: float) -> float:
    """Every layer of the model on one TP group: GEMMs, elementwise, attention, all-reduce.
    With expert parallelism, DP attention or several nodes the collectives are the layout's
    (serving/expert_parallel.py), overlapped with the compute where the engine does so."""
    if not hw.layout.is_plain:
        return expert_parallel.layers_s(
            hw, num_tokens, attention_s, floors_s,
            lambda tokens: gemm_time_s(hw, tokens) + elementwise_time_s(hw, tokens),
            lambda gpus, payload: one_allreduce_s(hw, payload, gpus))
    return (gemm_time_s(hw, num_tokens) + elementwise_time_s(hw, num_tokens) + attention_s
            + floors_s + allreduce_time_s(hw, num_tokens))


def step_time_s(hw: ReplicaHardware, *, decode_seqs: int, decode_context_tokens: float,
                prefill_chunks: tuple[tuple[int, int], ...] = ()) -> float:
    """One engine step: `decode_seqs` sequences emit a token while reading
    `decode_context_tokens` cached tokens in total; each prefill chunk is (tokens, prefix).

    With pp > 1 stages the batch runs as m = min(pp, sequences) micro-batches (vLLM's virtual
    engines); every sequence advances one token per period = the longer of one micro-batch's
    trip through all stages and m micro-batches through the slowest (last, with the LM head)
    stage. Fewer sequences than stages leave the pipeline with bubbles: stages idle.
    """
    prefill_tokens = sum(c for c, _ in prefill_chunks)
    num_tokens = decode_seqs + prefill_tokens
    if num_tokens == 0:
        return 0.0
    num_seqs = decode_seqs + len(prefill_chunks)
    attention = decode_attention_time_s(hw, decode_context_tokens) + sum(
        prefill_attention_time_s(hw, c, p) for c, p in prefill_chunks)
    floors = attention_floor_s(hw, decode_seqs, len(prefill_chunks))
    if hw.pp <= 1:
        gpu = _layers_s(hw, num_tokens, attention, floors) + lm_head_time_s(hw, num_seqs)
    else:
        m = min(hw.pp, num_seqs)
        mb_tokens = -(-num_tokens // m)
        layers = _layers_s(hw, mb_tokens, attention / m, floors)
        head = lm_head_time_s(hw, -(-num_seqs // m))
        p2p = p2p_time_s(hw, mb_tokens)
        gpu = max(layers + (hw.pp - 1) * p2p + head, m * (layers / hw.pp + head + p2p))
    gpu = max(gpu, eager_launch_floor_s(hw))
    return hw.step_time_factor * (gpu + host_time_s(hw, num_seqs))


class DecodeSegment:
    """Step time of a pure-decode stretch as a line in the step index k: a + b x k.

    With n sequences, each step adds n tokens to the cache, so the KV read grows by
    n x kv_bytes per step; every other term depends on n only and stays constant.
    """

    __slots__ = ("first_step_s", "slope_s")  # a plain slotted class: built on the hot path

    def __init__(self, first_step_s: float, slope_s: float) -> None:
        self.first_step_s = first_step_s
        self.slope_s = slope_s

    def duration_s(self, num_steps: int) -> float:
        """Time of steps 0..num_steps-1: K a + b K (K-1) / 2."""
        return segment_duration_s(self.first_step_s, self.slope_s, num_steps)

    def steps_within(self, elapsed_s: float) -> int:
        """Largest K with duration_s(K) <= elapsed_s."""
        return segment_steps_within(self.first_step_s, self.slope_s, elapsed_s)


# The stretch's line as functions of its two numbers, so the engine keeps them in its own
# fields instead of allocating a DecodeSegment per stretch (~250k a run).
def segment_duration_s(first_step_s: float, slope_s: float, num_steps: int) -> float:
    """Time of steps 0..num_steps-1 of a stretch: K a + b K (K-1) / 2."""
    return num_steps * first_step_s + slope_s * num_steps * (num_steps - 1) / 2.0


def segment_steps_within(first_step_s: float, slope_s: float, elapsed_s: float) -> int:
    """Largest K with segment_duration_s(K) <= elapsed_s (closed form, then a guard for
    rounding)."""
    if elapsed_s <= 0:
        return 0
    a, b = first_step_s, slope_s
    if b <= 1e-15:
        k = int(elapsed_s // a)
    else:
        half_b = b / 2.0
        lin = a - half_b
        k = int((-lin + math.sqrt(lin * lin + 4.0 * half_b * elapsed_s)) / (2.0 * half_b))
    while k > 0 and segment_duration_s(a, b, k) > elapsed_s:
        k -= 1
    while segment_duration_s(a, b, k + 1) <= elapsed_s:
        k += 1
    return k


def decode_segment(hw: ReplicaHardware, num_seqs: int, context_tokens: float) -> DecodeSegment:
    first = step_time_s(hw, decode_seqs=num_seqs, decode_context_tokens=context_tokens)
    return DecodeSegment(first, _decode_slope_s(hw, num_seqs, context_tokens))


def _decode_slope_s(hw: ReplicaHardware, num_seqs: int, context_tokens: float) -> float:
    """Growth of the step per step. While the eager launch floor binds, the GPU's KV growth is
    hidden behind it (slope 0 until the stretch ends: slightly optimistic at the crossing)."""
    if hw.pp > 1 or not hw.layout.is_plain:  # piecewise linear in the context: local slope
        return step_time_s(hw, decode_seqs=num_seqs, decode_context_tokens=context_tokens
                           + num_seqs) - step_time_s(hw, decode_seqs=num_seqs,
                                                     decode_context_tokens=context_tokens)
    floor = eager_launch_floor_s(hw)
    if floor:
        gpu = step_time_s(hw, decode_seqs=num_seqs, decode_context_tokens=context_tokens) \
            / hw.step_time_factor - host_time_s(hw, num_seqs)
        if gpu <= floor:
            return 0.0
    return hw.step_time_factor * num_seqs * hw.kv_bytes_per_token / hw.attention_kv_bytes_per_s


def _grow(memo: list[float], index: int) -> None:
    """Extend a count-indexed memo past `index` (doubling, so growth is amortised)."""
    memo.extend([-1.0] * (max(index + 1, 2 * len(memo)) - len(memo)))


class StepCost:
    """`step_time_s` with every per-replica constant folded in, for the simulation's hot path.

    Same formula as the pure functions above (a test checks they agree): the terms that depend
    only on the step's token or sequence count are computed once per count and memoised.
    """

    __slots__ = (
        "_allreduce_bus_bytes_per_s",
        "_allreduce_coef",
        "_allreduce_latency_s",
        "_attn_causal_s",
        "_attn_prefix_s",
        "_by_seqs",
        "_by_tokens",
        "_decode_by_seqs",
        "_eager_s",
        "_elem_bytes_per_s",
        "_elem_bytes_per_token",
        "_elem_floor_s",
        "_factor",
        "_floor_dec_s",
        "_floor_pre_s",
        "_floor_write_s",
        "_gemm_floor_s",
        "_gemm_flop_coef",
        "_gemm_flops_per_s",
        "_host_seq_s",
        "_host_step_s",
        "_kv_dec_s",
        "_kv_s",
        "_pipelined",
        "_weight_bytes",
        "_weight_bytes_per_s",
        "hw",
    )

    def __init__(self, hw: ReplicaHardware) -> None:
        self.hw = hw
        self._kv_s = hw.kv_bytes_per_token / hw.bytes_per_s  # prefix KV a prefill re-reads
        self._kv_dec_s = hw.kv_bytes_per_token / hw.attention_kv_bytes_per_s
        q_dim = hw.model.attention_flops_dim
        self._attn_prefix_s = 4.0 * hw.model.layers * q_dim / hw.attention_prefix_flops_per_s
        self._attn_causal_s = 4.0 * hw.model.layers * q_dim / hw.attention_causal_flops_per_s
        self._floor_write_s = hw.model.layers * hw.kernel_floor_s
        self._floor_dec_s = hw.model.layers * hw.attention_decode_floor_s
        self._floor_pre_s = hw.model.layers * hw.attention_prefill_floor_s
        self._eager_s = eager_launch_floor_s(hw)
        self._factor = hw.step_time_factor
        self._host_step_s = hw.host_step_s
        self._host_seq_s = hw.host_seq_s
        # Memos indexed by the count, -1.0 where not computed yet (a list: a dict lookup of an
        # int key cost more than the list read in the compiled build).
        self._by_tokens: list[float] = []
        self._by_seqs: list[float] = []
        # Rare layouts run the reference formula, not the folded one: pipeline stages, and
        # expert parallelism / DP attention / several nodes (their collectives overlap).
        self._pipelined = hw.pp > 1 or not hw.layout.is_plain
        self._decode_by_seqs: list[float] = []  # a decode step's context-free GPU time
        # The constant factors of gemm_time_s, elementwise_time_s and allreduce_time_s, so a
        # token count seen for the first time (thousands per run) costs a few float operations
        # instead of a dozen catalog property calls. Each is the very subexpression the
        # reference function computes, combined in the same order: the same floats
        # (tests/serving/test_performance.py checks equality, not closeness).
        model = hw.model
        # A dense model reads all its layer weights whatever the batch; an MoE's grouped
        # expert GEMMs depend on the tokens per expert, so they run the reference (None).
        self._weight_bytes: float | None = None if model.is_moe else float(
            layer_weight_bytes(model, hw.weight_precision))
        self._weight_bytes_per_s = hw.bytes_per_s
        self._gemm_flop_coef = 2.0 * _active_layer_params(model)
        self._gemm_flops_per_s = hw.flops_per_s
        self._gemm_floor_s = model.layers * GEMMS_PER_LAYER * hw.kernel_floor_s
        self._elem_bytes_per_token = elementwise_bytes_per_token(model, hw.tp_degree)
        self._elem_bytes_per_s = hw.elementwise_bytes_per_s / hw.tp_degree
        self._elem_floor_s = ELEMENTWISE_KERNELS_PER_LAYER * hw.kernel_floor_s
        # The custom all-reduce's affine cost; 0 coefficient = no all-reduce (tp 1) and a
        # negative one = NCCL's measured curve, looked up per count (`one_allreduce_s`).
        tp = hw.tp_degree
        self._allreduce_coef = 0.0 if tp <= 1 else (2.0 * (tp - 1) / tp if hw.custom_allreduce
                                                     else -1.0)
        self._allreduce_bus_bytes_per_s, self._allreduce_latency_s = (
            hw.gpu.allreduce_bus_bytes_per_s_and_latency_s(tp) if tp > 1 else (1.0, 0.0))

    def _tokens_s(self, num_tokens: int) -> float:
        if num_tokens <= 0:
            return 0.0
        memo = self._by_tokens
        if num_tokens >= len(memo):
            _grow(memo, num_tokens)
        cached = memo[num_tokens]
        if cached < 0.0:
            cached = self._tokens_uncached_s(num_tokens)
            memo[num_tokens] = cached
        return cached

    def _tokens_uncached_s(self, num_tokens: int) -> float:
        """gemm_time_s + elementwise_time_s + allreduce_time_s, from the folded constants (an
        MoE model's grouped expert GEMMs from the reference functions)."""
        if num_tokens <= 0:
            return 0.0
        hw = self.hw
        if self._weight_bytes is None:
            return gemm_time_s(hw, num_tokens) + elementwise_time_s(hw, num_tokens) \
                + allreduce_time_s(hw, num_tokens)
        mem = self._weight_bytes / self._weight_bytes_per_s
        comp = self._gemm_flop_coef * (num_tokens + GEMM_HALF_TOKENS) / self._gemm_flops_per_s
        gemm = math.sqrt(mem * mem + comp * comp) + self._gemm_floor_s
        stream = num_tokens * self._elem_bytes_per_token / self._elem_bytes_per_s
        floor = self._elem_floor_s
        elementwise = hw.model.layers * math.sqrt(floor * floor + stream * stream)
        coef = self._allreduce_coef
        if coef == 0.0:
            return gemm + elementwise + 0.0
        payload = num_tokens * hw.model.hidden * ACTIVATION_BYTES
        if coef > 0.0:
            one = self._allreduce_latency_s + coef * payload / self._allreduce_bus_bytes_per_s
        else:
            one = one_allreduce_s(hw, payload)
        return gemm + elementwise + 2 * hw.model.layers * one

    def _seqs_s(self, num_seqs: int) -> float:
        if num_seqs < 0:
            return lm_head_time_s(self.hw, num_seqs)
        memo = self._by_seqs
        if num_seqs >= len(memo):
            _grow(memo, num_seqs)
        cached = memo[num_seqs]
        if cached < 0.0:
            cached = lm_head_time_s(self.hw, num_seqs)
            memo[num_seqs] = cached
        return cached

    def step_s(self, decode_seqs: int, decode_context_tokens: float,
               prefill_chunks: Sequence[tuple[int, int]] = ()) -> float:
        """One step with (tokens, prefix) chunks; the engine's hot path calls `engine_step_s`
        with its own chunk list instead."""
        return self.engine_step_s(decode_seqs, decode_context_tokens,
                                  [(0, chunk, prefix) for chunk, prefix in prefill_chunks])

    def engine_step_s(self, decode_seqs: int, decode_context_tokens: float,
                      chunks: list[tuple[int, int, int]]) -> float:
        """`step_time_s` of a step whose prefill chunks are the engine's own (request id,
        tokens, prefix) triples, with every per-replica constant folded in."""
        if self._pipelined:
            return step_time_s(self.hw, decode_seqs=decode_seqs,
                               decode_context_tokens=decode_context_tokens,
                               prefill_chunks=tuple((c, p) for _, c, p in chunks))
        prefill_tokens = 0
        prefix_tokens = 0
        attention = 0.0
        for _rid, chunk, prefix in chunks:
            prefill_tokens += chunk
            prefix_tokens += prefix
            attention += chunk * (self._attn_prefix_s * prefix + self._attn_causal_s * chunk / 2.0)
        tokens = decode_seqs + prefill_tokens
        if tokens == 0:
            return 0.0
        num_chunks = len(chunks)
        seqs = decode_seqs + num_chunks
        floors = self._floor_write_s + (self._floor_dec_s if decode_seqs else 0.0) \
            + (self._floor_pre_s if num_chunks else 0.0)
        gpu = (self._tokens_s(tokens) + self._seqs_s(seqs) + attention
               + decode_context_tokens * self._kv_dec_s + prefix_tokens * self._kv_s + floors)
        if gpu < self._eager_s:
            gpu = self._eager_s
        return self._factor * (gpu + self._host_step_s + self._host_seq_s * seqs)

    def decode_step_s(self, num_seqs: int, context_tokens: float) -> float:
        """`step_s` without prefill chunks (the common case), with no tuple to walk."""
        if self._pipelined:
            return step_time_s(self.hw, decode_seqs=num_seqs, decode_context_tokens=context_tokens)
        memo = self._decode_by_seqs
        if num_seqs >= len(memo):
            _grow(memo, num_seqs)
        fixed = memo[num_seqs] if num_seqs >= 0 else -1.0
        if fixed < 0.0:
            fixed = (self._tokens_s(num_seqs) + self._seqs_s(num_seqs) + self._floor_write_s
                     + self._floor_dec_s)
            if num_seqs >= 0:
                memo[num_seqs] = fixed
        gpu = fixed + context_tokens * self._kv_dec_s
        if gpu < self._eager_s:
            gpu = self._eager_s
        return self._factor * (gpu + self._host_step_s + self._host_seq_s * num_seqs)

    def segment(self, num_seqs: int, context_tokens: float) -> DecodeSegment:
        """`DecodeSegment` of a pure-decode stretch starting at `context_tokens`."""
        first = self.decode_step_s(num_seqs, context_tokens)
        return DecodeSegment(first, self.segment_slope_s(num_seqs, context_tokens, first))

    def segment_slope_s(self, num_seqs: int, context_tokens: float,
                        first_step_s: float) -> float:
        """The slope of the stretch whose first step is `first_step_s` (`decode_step_s`)."""
        if self._pipelined:
            return _decode_slope_s(self.hw, num_seqs, context_tokens)
        if self._eager_s and first_step_s / self._factor - self._host_step_s \
                - self._host_seq_s * num_seqs <= self._eager_s:
            return 0.0
        return self._factor * num_seqs * self._kv_dec_s
