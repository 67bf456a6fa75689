"""One engine step's time from its kernels: the reference formula the folded `StepCost`
(serving/performance.py) reproduces to the float, and the pipeline-parallel path.

step = step_time_factor x (GPU kernels + host time), the GPU at least the eager launch floor.
"""

from __future__ import annotations

from gpuscale.serving.hardware import ReplicaHardware
from gpuscale.serving.kernels import (
    attention_floor_s,
    decode_attention_time_s,
    eager_launch_floor_s,
    host_time_s,
    layers_time_s,
    lm_head_time_s,
    prefill_attention_time_s,
)
from gpuscale.serving.pipeline import pipeline_gpu_s


def step_time_s(hw: ReplicaHardware, *, decode_seqs: int, decode_context_tokens: float,
                prefill_chunks: tuple[tuple[int, int], ...] = ()) -> float:
    """One engine step: `decode_seqs` sequences emit a token while reading
    `decode_context_tokens` cached tokens in total; each prefill chunk is (tokens, prefix).

    With pp > 1 stages the step is one pipeline period of m micro-batches
    (serving/pipeline.py): every sequence advances one token per period.
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
        gpu = layers_time_s(hw, num_tokens, attention, floors) + lm_head_time_s(hw, num_seqs)
    else:  # serving/pipeline.py: the largest chunk rides one micro-batch whole
        heavy_tokens, heavy_attention = 0, 0.0
        if prefill_chunks:
            chunk, prefix = max(prefill_chunks)
            m = min(hw.pp, num_seqs)
            share = -(-decode_seqs // m)
            heavy_tokens = chunk + share
            heavy_attention = prefill_attention_time_s(hw, chunk, prefix) + (
                decode_attention_time_s(hw, decode_context_tokens) * share / decode_seqs
                if decode_seqs else 0.0)
        gpu = pipeline_gpu_s(hw, num_tokens, num_seqs, attention, floors, heavy_tokens,
                             heavy_attention)
    gpu = max(gpu, eager_launch_floor_s(hw))
    return hw.step_time_factor * (gpu + host_time_s(hw, num_seqs))
