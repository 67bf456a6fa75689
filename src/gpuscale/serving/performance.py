"""The engine's step cost: `StepCost`, the step-time formula with every per-replica constant
folded in, for the simulation's hot path (compiled with mypyc, gpuscale/_hot_path.py).

The physics lives in small modules, which this one also re-exports so the engine and its
callers import one name: the replica's inputs (`serving/hardware.py`, ReplicaHardware), the
kernels of a step (`serving/kernels.py`), the step they add up to and the pipeline path
(`serving/step_time.py`), and the pure-decode stretch as a line (`serving/decode_segment.py`).
Sources of every constant: those modules, catalog/gpus.yaml and docs/calibration.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gpuscale.serving.decode_segment import (
    DecodeSegment,
    decode_segment,
    decode_slope_s,
    segment_duration_s,
    segment_steps_within,
)
from gpuscale.serving.hardware import (
    EAGER_KERNELS_PER_LAYER,
    EAGER_LAUNCH_S,
    HOST_SEQ_S,
    HOST_STEP_S,
    ReplicaHardware,
)
from gpuscale.serving.kernels import (
    ACTIVATION_BYTES,
    ELEMENTWISE_KERNELS_PER_LAYER,
    GEMM_HALF_TOKENS,
    GEMMS_PER_LAYER,
    active_layer_params,
    allreduce_time_s,
    attention_floor_s,
    decode_attention_time_s,
    eager_launch_floor_s,
    elementwise_bytes_per_token,
    elementwise_time_s,
    expert_coverage_frac,
    gemm_time_s,
    host_time_s,
    layer_linear_time_s,
    layers_time_s,
    lm_head_params,
    lm_head_time_s,
    one_allreduce_s,
    prefill_attention_time_s,
    smooth_max,
    weight_bytes_read,
)
from gpuscale.serving.pipeline import P2P_LATENCY_S, p2p_time_s, step_token_budget
from gpuscale.serving.step_time import step_time_s

__all__ = [
    "ACTIVATION_BYTES", "EAGER_KERNELS_PER_LAYER", "EAGER_LAUNCH_S",
    "ELEMENTWISE_KERNELS_PER_LAYER", "GEMMS_PER_LAYER", "GEMM_HALF_TOKENS", "HOST_SEQ_S",
    "HOST_STEP_S", "P2P_LATENCY_S", "DecodeSegment", "ReplicaHardware", "StepCost",
    "active_layer_params", "allreduce_time_s", "attention_floor_s", "decode_attention_time_s",
    "decode_segment", "decode_slope_s", "eager_launch_floor_s", "elementwise_bytes_per_token",
    "elementwise_time_s", "expert_coverage_frac", "gemm_time_s", "host_time_s",
    "layer_linear_time_s", "layers_time_s", "lm_head_params", "lm_head_time_s", "one_allreduce_s",
    "p2p_time_s", "prefill_attention_time_s", "segment_duration_s", "segment_steps_within",
    "smooth_max", "step_time_s", "step_token_budget", "weight_bytes_read",
]


def _grow(memo: list[float], index: int) -> None:
    """Extend a count-indexed memo past `index` (doubling, so growth is amortised)."""
    memo.extend([-1.0] * (max(index + 1, 2 * len(memo)) - len(memo)))


class StepCost:
    """`step_time_s` with every per-replica constant folded in, for the simulation's hot path.

    Same formula as `step_time_s` and the kernels (a test checks they agree): the terms that depend
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
        q_dim = hw.model.q_heads * hw.model.head_dim
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
        self._pipelined = hw.pp > 1  # rare: the reference formula, not the folded one
        self._decode_by_seqs: list[float] = []  # a decode step's context-free GPU time
        # The constant factors of gemm_time_s, elementwise_time_s and allreduce_time_s, so a
        # token count seen for the first time (thousands per run) costs a few float operations
        # instead of a dozen catalog property calls. Each is the very subexpression the
        # reference function computes, combined in the same order: the same floats
        # (tests/serving/test_performance.py checks equality, not closeness).
        model = hw.model
        # A dense model reads all its layer weights whatever the batch; an MoE's share depends
        # on the tokens (expert coverage), so it stays per count (None).
        self._weight_bytes: float | None = None if model.is_moe else float(
            weight_bytes_read(model, hw.weight_precision, 1))
        self._weight_bytes_per_s = hw.bytes_per_s
        self._gemm_flop_coef = 2.0 * active_layer_params(model)
        self._gemm_flops_per_s = hw.flops_per_s
        self._gemm_floor_s = model.layers * GEMMS_PER_LAYER * hw.kernel_floor_s
        self._elem_bytes_per_token = elementwise_bytes_per_token(model, hw.tp_degree)
        self._elem_bytes_per_s = hw.elementwise_bytes_per_s / hw.tp_degree
        self._elem_floor_s = ELEMENTWISE_KERNELS_PER_LAYER * hw.kernel_floor_s
        # The custom all-reduce's affine cost; 0 coefficient = no all-reduce (tp 1) and a
        # negative one = NCCL's measured curve, looked up per count (`one_allreduce_s`).
        tp = hw.tp_degree
        affine = hw.custom_allreduce and not hw.gpu.allreduce_custom_small_us
        self._allreduce_coef = 0.0 if tp <= 1 else (2.0 * (tp - 1) / tp if affine else -1.0)
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
        """gemm_time_s + elementwise_time_s + allreduce_time_s, from the folded constants."""
        if num_tokens <= 0:
            return 0.0
        hw = self.hw
        weight_bytes = self._weight_bytes
        if weight_bytes is None:
            weight_bytes = weight_bytes_read(hw.model, hw.weight_precision, num_tokens)
        mem = weight_bytes / self._weight_bytes_per_s
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
            return decode_slope_s(self.hw, num_seqs, context_tokens)
        if self._eager_s and first_step_s / self._factor - self._host_step_s \
                - self._host_seq_s * num_seqs <= self._eager_s:
            return 0.0
        return self._factor * num_seqs * self._kv_dec_s
