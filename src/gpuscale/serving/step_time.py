"""One engine step's time from its kernels: the reference formula the folded `StepCost`
(serving/performance.py) reproduces to the float, and the pipeline-parallel path.

step = step_time_factor x (GPU kernels + host time), the GPU at least the eager launch floor.
"""

from __future__ import annotations

from gpuscale.serving.hardware import ReplicaHardware
from gpuscale.serving.kernels import (
    ACTIVATION_BYTES,
    allreduce_time_s,
    attention_floor_s,
    decode_attention_time_s,
    eager_launch_floor_s,
    elementwise_time_s,
    gemm_time_s,
    host_time_s,
    lm_head_time_s,
    prefill_attention_time_s,
)

# Stage-to-stage activation send: aiconfigurator's 10 us p2p latency (the catalog's default
# all-reduce latency) plus the bytes over the datasheet link.
P2P_LATENCY_S = 10e-6


def p2p_time_s(hw: ReplicaHardware, num_tokens: float) -> float:
    """Send one micro-batch's activations to the next pipeline stage."""
    return P2P_LATENCY_S + num_tokens * hw.model.hidden * ACTIVATION_BYTES \
        / (hw.gpu.link_gbps_per_direction * 1e9)


def _layers_s(hw: ReplicaHardware, num_tokens: int, attention_s: float, floors_s: float) -> float:
    """Every layer of the model on one TP group: GEMMs, elementwise, attention, all-reduce."""
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
