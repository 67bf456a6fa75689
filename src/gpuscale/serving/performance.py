"""Roofline step-time model for one tensor-parallel replica.

A forward step's time is the sum of
- linear layers: max(FLOPs / (peak x compute_efficiency [x fp8_efficiency_factor for FP8]),
  weight bytes / (HBM BW x hbm_efficiency)),
- attention: prefill FLOPs (compute bound) and decode KV reads (memory bound),
- tensor-parallel all-reduce: two per layer, ring bus bytes over the measured effective bus
  bandwidth plus a per-collective latency (catalog, per GPU and TP degree: Vidur's H100 DGX
  NCCL profile, see gpus.yaml),
- a fixed per-step and per-layer overhead (kernel launch gaps, scheduler CPU time).

Efficiency factors are per GPU in the catalog (fixed by calibration rows A1-A3); the overhead
constants are BLIS's fitted coefficients. Everything is per GPU of the TP group: weights and
KV heads are split TP ways. Sources: ../shared/reference/hardware-and-models.md 1.2 and 5.3,
calibration.md rows A1-A4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from gpuscale.catalog.specs import GpuSpec, ModelSpec, Precision

# BLIS "trained-physics" coefficients fitted on H100 vLLM traces [S2] (hardware-and-models.md 1.2):
STEP_OVERHEAD_S = 126e-6  # per engine step
LAYER_OVERHEAD_S = 32e-6  # per transformer layer per step (kernel launch gaps)
SEQ_OVERHEAD_S = 4e-6  # per sequence in the batch (sampling, bookkeeping)
ACTIVATION_BYTES = 2  # activations stay BF16 even with FP8 weights


@dataclass(frozen=True)
class ReplicaHardware:
    """The fixed inputs of the step-time model for one replica (a TP group)."""

    gpu: GpuSpec
    model: ModelSpec
    weight_precision: Precision
    kv_precision: Precision
    tp: int
    # Wall time of an engine step / the roofline sum: 1.0 for an engine whose host work is
    # hidden behind the GPU (CUDA graphs, async scheduling: TensorRT-LLM, vLLM V1); larger for
    # engines with exposed CPU time per step (see serving/engines.py, ENGINE_PROFILES).
    step_time_factor: float = 1.0

    @property
    def flops_per_s(self) -> float:
        """Sustained FLOP/s of the whole TP group at the weight precision."""
        return self.gpu.sustained_flops(self.weight_precision) * self.tp

    @property
    def bytes_per_s(self) -> float:
        """Sustained HBM bytes/s of the whole TP group."""
        return self.gpu.memory_bandwidth_tbps * 1e12 * self.gpu.hbm_efficiency * self.tp

    @property
    def kv_bytes_per_token(self) -> int:
        return self.model.kv_bytes_per_token(self.kv_precision)


def expert_coverage_frac(num_tokens: int, num_experts: int, experts_per_token: int) -> float:
    """Expected fraction of experts a batch of `num_tokens` touches under uniform routing.

    1 - (1 - k/E)^tokens: one decode token reads k/E of the expert weights, a large batch all.
    """
    if num_experts == 0:
        return 1.0
    return 1.0 - (1.0 - experts_per_token / num_experts) ** max(num_tokens, 1)


def weight_bytes_read(model: ModelSpec, precision: Precision, num_tokens: int) -> float:
    """Weight bytes streamed from HBM by one forward step of `num_tokens` tokens."""
    if not model.is_moe:
        return model.total_params * precision.bytes_per_elem
    routed = model.moe_layers * model.num_experts * model.expert_params
    always = model.total_params - routed
    cover = expert_coverage_frac(num_tokens, model.num_experts, model.experts_per_token)
    return (always + routed * cover) * precision.bytes_per_elem


def linear_time_s(hw: ReplicaHardware, num_tokens: int) -> float:
    """Time of all linear layers (projections, MLP/experts, LM head) for `num_tokens` tokens."""
    flops = 2.0 * hw.model.active_params * num_tokens
    bytes_read = weight_bytes_read(hw.model, hw.weight_precision, num_tokens)
    return max(flops / hw.flops_per_s, bytes_read / hw.bytes_per_s)


def layer_linear_time_s(hw: ReplicaHardware, num_tokens: int) -> float:
    """Per-layer QKV+O+MLP GEMM time (what Vidur's mlp.csv profiles; rows A1-A3)."""
    params = hw.model.attention_params + hw.model.expert_params
    flops = 2.0 * params * num_tokens
    bytes_read = params * hw.weight_precision.bytes_per_elem
    return max(flops / hw.flops_per_s, bytes_read / hw.bytes_per_s)


def prefill_attention_time_s(hw: ReplicaHardware, chunk_tokens: int, prefix_tokens: int) -> float:
    """Causal attention FLOPs of a prefill chunk over its own prefix: 4 x L x q_dim x c x (p + c/2)."""
    if chunk_tokens <= 0:
        return 0.0
    q_dim = hw.model.q_heads * hw.model.head_dim
    flops = 4.0 * hw.model.layers * q_dim * chunk_tokens * (prefix_tokens + chunk_tokens / 2.0)
    return flops / hw.flops_per_s


def decode_attention_time_s(hw: ReplicaHardware, context_tokens: float) -> float:
    """Decode attention is a KV-cache read: every cached token of every decoding sequence."""
    return context_tokens * hw.kv_bytes_per_token / hw.bytes_per_s


def allreduce_time_s(hw: ReplicaHardware, num_tokens: int) -> float:
    """Two all-reduces per layer over the TP group (attention out and MLP out).

    Each: latency + 2 (tp-1)/tp x payload / bus bandwidth, both from the catalog's measured
    profile for this GPU and TP degree. Depends on the tokens in the step only, never on the
    context, so a pure-decode stretch keeps a constant all-reduce term.
    """
    if hw.tp <= 1:
        return 0.0
    payload = num_tokens * hw.model.hidden * ACTIVATION_BYTES
    bus_bytes_per_s, latency_s = hw.gpu.allreduce_bus_bytes_per_s_and_latency_s(hw.tp)
    per_op = latency_s + 2.0 * (hw.tp - 1) / hw.tp * payload / bus_bytes_per_s
    return 2 * hw.model.layers * per_op


def overhead_time_s(hw: ReplicaHardware, num_seqs: int) -> float:
    return STEP_OVERHEAD_S + LAYER_OVERHEAD_S * hw.model.layers + SEQ_OVERHEAD_S * num_seqs


def step_time_s(hw: ReplicaHardware, *, decode_seqs: int, decode_context_tokens: float,
                prefill_chunks: tuple[tuple[int, int], ...] = ()) -> float:
    """One engine step: `decode_seqs` sequences emit a token while reading
    `decode_context_tokens` cached tokens in total; each prefill chunk is (tokens, prefix)."""
    prefill_tokens = sum(c for c, _ in prefill_chunks)
    num_tokens = decode_seqs + prefill_tokens
    if num_tokens == 0:
        return 0.0
    attention = decode_attention_time_s(hw, decode_context_tokens) + sum(
        prefill_attention_time_s(hw, c, p) for c, p in prefill_chunks)
    num_seqs = decode_seqs + len(prefill_chunks)
    return hw.step_time_factor * (linear_time_s(hw, num_tokens) + attention
                                  + allreduce_time_s(hw, num_tokens) + overhead_time_s(hw, num_seqs))


class DecodeSegment:
    """Step time of a pure-decode stretch as a line in the step index k: a + b x k.

    With n sequences, each step adds n tokens to the cache, so the KV read grows by
    n x kv_bytes per step. The linear part is constant; when it is compute bound (very large
    batches) the slope only applies to the attention term, which is what is modelled.
    """

    __slots__ = ("first_step_s", "slope_s")  # a plain slotted class: built on the hot path

    def __init__(self, first_step_s: float, slope_s: float) -> None:
        self.first_step_s = first_step_s
        self.slope_s = slope_s

    def duration_s(self, num_steps: int) -> float:
        """Time of steps 0..num_steps-1: K a + b K (K-1) / 2."""
        return num_steps * self.first_step_s + self.slope_s * num_steps * (num_steps - 1) / 2.0

    def steps_within(self, elapsed_s: float) -> int:
        """Largest K with duration_s(K) <= elapsed_s (closed form, then a guard for rounding)."""
        if elapsed_s <= 0:
            return 0
        a, b = self.first_step_s, self.slope_s
        if b <= 1e-15:
            k = int(elapsed_s // a)
        else:
            half_b = b / 2.0
            lin = a - half_b
            k = int((-lin + math.sqrt(lin * lin + 4.0 * half_b * elapsed_s)) / (2.0 * half_b))
        while k > 0 and self.duration_s(k) > elapsed_s:
            k -= 1
        while self.duration_s(k + 1) <= elapsed_s:
            k += 1
        return k


def decode_segment(hw: ReplicaHardware, num_seqs: int, context_tokens: float) -> DecodeSegment:
    first = step_time_s(hw, decode_seqs=num_seqs, decode_context_tokens=context_tokens)
    slope = hw.step_time_factor * num_seqs * hw.kv_bytes_per_token / hw.bytes_per_s
    return DecodeSegment(first, slope)


class StepCost:
    """`step_time_s` with every per-replica constant folded in, for the simulation's hot path.

    Same formula as the pure functions above (a test checks they agree); only the arithmetic
    that does not depend on the batch is done once.
    """

    __slots__ = ("hw", "_linear_flop_s", "_weight_s", "_kv_s", "_attn_prefill_s", "_ar_fixed_s",
                 "_ar_token_s", "_fixed_s", "_per_seq_s", "_moe", "_moe_cache", "_factor")

    def __init__(self, hw: ReplicaHardware) -> None:
        self.hw = hw
        self._linear_flop_s = 2.0 * hw.model.active_params / hw.flops_per_s
        self._weight_s = weight_bytes_read(hw.model, hw.weight_precision, 10**9) / hw.bytes_per_s
        self._kv_s = hw.kv_bytes_per_token / hw.bytes_per_s
        q_dim = hw.model.q_heads * hw.model.head_dim
        self._attn_prefill_s = 4.0 * hw.model.layers * q_dim / hw.flops_per_s
        if hw.tp > 1:
            bus, latency_s = hw.gpu.allreduce_bus_bytes_per_s_and_latency_s(hw.tp)
            per_token = 2.0 * (hw.tp - 1) / hw.tp * hw.model.hidden * ACTIVATION_BYTES / bus
            self._ar_fixed_s = 2 * hw.model.layers * latency_s
            self._ar_token_s = 2 * hw.model.layers * per_token
        else:
            self._ar_fixed_s = self._ar_token_s = 0.0
        self._fixed_s = STEP_OVERHEAD_S + LAYER_OVERHEAD_S * hw.model.layers
        self._per_seq_s = SEQ_OVERHEAD_S
        self._moe = hw.model.is_moe
        self._moe_cache: dict[int, float] = {}
        self._factor = hw.step_time_factor

    def _weights_s(self, num_tokens: int) -> float:
        if not self._moe:
            return self._weight_s
        cached = self._moe_cache.get(num_tokens)
        if cached is None:
            cached = weight_bytes_read(self.hw.model, self.hw.weight_precision, num_tokens) \
                / self.hw.bytes_per_s
            self._moe_cache[num_tokens] = cached
        return cached

    def step_s(self, decode_seqs: int, decode_context_tokens: float,
               prefill_chunks: Sequence[tuple[int, int]] = ()) -> float:
        prefill_tokens = 0
        attention = decode_context_tokens * self._kv_s
        for chunk, prefix in prefill_chunks:
            prefill_tokens += chunk
            attention += self._attn_prefill_s * chunk * (prefix + chunk / 2.0)
        tokens = decode_seqs + prefill_tokens
        if tokens == 0:
            return 0.0
        compute = self._linear_flop_s * tokens
        weights = self._weights_s(tokens)
        linear = compute if compute > weights else weights
        allreduce = self._ar_fixed_s + self._ar_token_s * tokens if self._ar_fixed_s else 0.0
        seqs = decode_seqs + len(prefill_chunks)
        return self._factor * (linear + attention + allreduce + self._fixed_s
                               + self._per_seq_s * seqs)

    def decode_step_s(self, num_seqs: int, context_tokens: float) -> float:
        """`step_s` without prefill chunks (the common case), with no tuple to walk."""
        compute = self._linear_flop_s * num_seqs
        weights = self._weights_s(num_seqs)
        linear = compute if compute > weights else weights
        allreduce = self._ar_fixed_s + self._ar_token_s * num_seqs if self._ar_fixed_s else 0.0
        return self._factor * (linear + context_tokens * self._kv_s + allreduce + self._fixed_s
                                + self._per_seq_s * num_seqs)

    def segment(self, num_seqs: int, context_tokens: float) -> DecodeSegment:
        """`DecodeSegment` of a pure-decode stretch starting at `context_tokens`."""
        return DecodeSegment(self.decode_step_s(num_seqs, context_tokens),
                             self._factor * num_seqs * self._kv_s)
