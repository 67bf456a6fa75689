"""Pipeline parallelism: a replica of `pp` stages, each a TP group holding layers / pp.

The batch runs as m = min(pp, sequences) micro-batches (vLLM's virtual engines and V1's
`max_concurrent_batches`, TensorRT-LLM's micro-batches: `mNumMicroBatches = pp`,
trtGptModelInflightBatching.cpp; Vidur's replica scheduler keeps up to `num_stages` batches
running, base_replica_scheduler.py). Every decoding sequence advances one token per period: a
micro-batch crosses every stage in turn, and a stage works on the m micro-batches one after the
other, so the period is the longer of one micro-batch's trip through all stages and m
micro-batches through the slowest stage (the last, with the LM head). Fewer sequences than
stages leave bubbles: a lone sequence is no faster than one stage holding every layer.

Each micro-batch is scheduled on its own, with its own token budget: vLLM V1 schedules a batch
per free stage slot with the whole `max_num_batched_tokens`, V0 runs one scheduler per virtual
engine, TensorRT-LLM's micro-batch scheduler fills each micro-batch up to `max_num_tokens`,
and Vidur forms each batch up to its chunk size (sarathi_replica_scheduler.py). So a period
carries up to pp budgets of tokens (`step_token_budget`), where a single budget split over the
stages made every pipelined step too light (issue 28: Vidur's TP2 x PP2 Llama-2-70B on A100
read TPOT -28 % / -35 %). And a prefill chunk rides one micro-batch whole, so the period is at
least the trip of the micro-batch that carries the largest chunk, not of an even split
(`pipeline_gpu_s`). Checked against Vidur runs of that setup: docs/calibration.md, "Pipeline
parallelism against Vidur".
"""

from __future__ import annotations

from gpuscale.serving.hardware import ReplicaHardware
from gpuscale.serving.kernels import ACTIVATION_BYTES, layers_time_s, lm_head_time_s

# Stage-to-stage activation send: aiconfigurator's 10 us p2p latency (the catalog's default
# all-reduce latency) plus the bytes over the datasheet link.
P2P_LATENCY_S = 10e-6


def step_token_budget(budget_tokens: int, pp: int) -> int:
    """Tokens one engine step (one pipeline period) may carry: a budget per micro-batch."""
    return budget_tokens * max(1, pp)


def p2p_time_s(hw: ReplicaHardware, num_tokens: float) -> float:
    """Send one micro-batch's activations to the next pipeline stage."""
    return P2P_LATENCY_S + num_tokens * hw.model.hidden * ACTIVATION_BYTES \
        / (hw.gpu.link_gbps_per_direction * 1e9)


def pipeline_gpu_s(hw: ReplicaHardware, num_tokens: int, num_seqs: int, attention_s: float,
                   floors_s: float, heavy_tokens: int = 0, heavy_attention_s: float = 0.0
                   ) -> float:
    """GPU time of one period of a `hw.pp`-stage pipeline carrying `num_tokens` tokens of
    `num_seqs` sequences (attention and per-layer floors of the whole step given).

    A prefill chunk rides one micro-batch (a request is in one micro-batch at a time), so the
    heaviest micro-batch carries at least the largest chunk (`heavy_tokens`, with its share of
    the decodes; `heavy_attention_s` its attention): its trip through every stage bounds the
    period, as it cannot start its next step before it left the last stage. The stages' work
    on all m micro-batches, evenly split, is the other bound."""
    m = min(hw.pp, num_seqs)
    mb_tokens = -(-num_tokens // m)
    layers = layers_time_s(hw, mb_tokens, attention_s / m, floors_s)
    head = lm_head_time_s(hw, -(-num_seqs // m))
    p2p = p2p_time_s(hw, mb_tokens)
    trip = layers + (hw.pp - 1) * p2p + head
    if heavy_tokens > mb_tokens:
        trip = layers_time_s(hw, heavy_tokens, heavy_attention_s, floors_s) \
            + (hw.pp - 1) * p2p_time_s(hw, heavy_tokens) + head
    return max(trip, m * (layers / hw.pp + head + p2p))
