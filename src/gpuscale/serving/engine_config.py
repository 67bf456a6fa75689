"""A serving engine's configuration, as the simulated replica reads it (serving/replica.py).

The engine's own flags (vLLM `--max-num-seqs`, `--max-num-batched-tokens`, `--block-size`,
`--max-model-len`, ...) for one replica: a scenario's `engine:` block resolved against the
hardware by sim/replica_setup.py (the KV blocks that fit beside the weights); the calibration
rows and the planner's sizing build their own. Compiled with the hot path (setup.py), so the
replica reads its fields natively; serving/replica.py re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineConfig:
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    num_blocks: int
    max_model_len: int
    request_timeout_s: float
    # How a step's token budget is filled (serving/batching.py): "chunked" (vLLM V1,
    # Sarathi), "prefill_first" (vLLM V0's default scheduler, Vidur's `vllm`) or
    # "whole_prompt" (TensorRT-LLM in-flight batching with chunked context off, its default).
    batching: str = "chunked"
    # When the head of the waiting queue fits (serving/admission.py): "max_utilization"
    # (vLLM; TensorRT-LLM's MAX_UTILIZATION) or "guaranteed_no_evict" (TensorRT-LLM's
    # default capacity scheduler).
    admission: str = "max_utilization"
    # vLLM V1's automatic prefix caching (on by default since V1); it acts only on a trace
    # that carries prompt block hashes (serving/prefix_cache.py).
    enable_prefix_caching: bool = True

    @property
    def capacity_tokens(self) -> int:
        return self.num_blocks * self.block_size
