"""KV-cache sizing as vLLM does it: blocks of `block_size` tokens in what memory is left.

usable per GPU = gpu_memory_utilization x GPU memory - weights per GPU - activation peak -
non-torch (calibration.md "How to use", row A5; serving-engine-metrics.md 1.4 for the defaults).

Per attention rank (serving/expert_parallel.py): a GPU holds its share of a token's KV, the KV
heads split over its rank's TP group (each GPU at least one: vLLM replicates KV heads when TP
exceeds them, and an MLA latent is one head every GPU of the group keeps whole); the replica's
pool is its `attention_dp` ranks' pools together, each rank caching only its own sequences.
Weights per GPU follow the layout too: the routed experts over the EP group, the rest over the
attention rank's GPUs (serving/moe.py `weight_bytes_per_gpu`).
"""

from __future__ import annotations

from gpuscale.serving import expert_parallel, moe
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.units import GIB


def weights_per_gpu_bytes(hw: ReplicaHardware) -> float:
    """Weight bytes one GPU of the replica holds."""
    if hw.layout.is_plain:
        return hw.model.weight_bytes(hw.weight_precision) / hw.tp
    return moe.weight_bytes_per_gpu(hw.model, hw.weight_precision, hw.layout, hw.tp_degree,
                                    hw.pp)


def kv_gpu_shares(hw: ReplicaHardware) -> int:
    """Ways a token's KV is split over the GPUs of its rank: pipeline stages x KV-head shards
    (module docstring); = the replica's GPUs for a GQA model at TP <= its KV heads."""
    return hw.pp * expert_parallel.kv_shards_per_rank(hw.model, hw.layout, hw.tp_degree)


def kv_cache_bytes_per_gpu(hw: ReplicaHardware, *, gpu_memory_utilization: float,
                           activation_reserve_gib: float, non_torch_gib: float) -> float:
    """Bytes left for the KV cache on each GPU of the replica (may be <= 0: does not fit)."""
    budget = gpu_memory_utilization * hw.gpu.memory_bytes
    return budget - weights_per_gpu_bytes(hw) - (activation_reserve_gib + non_torch_gib) * GIB


def num_kv_blocks(hw: ReplicaHardware, *, gpu_memory_utilization: float, block_size: int,
                  activation_reserve_gib: float, non_torch_gib: float) -> int:
    """Whole KV blocks per replica: each attention rank's blocks (a block's KV per GPU is its
    share of the heads), times the ranks."""
    per_gpu = kv_cache_bytes_per_gpu(hw, gpu_memory_utilization=gpu_memory_utilization,
                                     activation_reserve_gib=activation_reserve_gib,
                                     non_torch_gib=non_torch_gib)
    block_bytes_per_gpu = block_size * hw.kv_bytes_per_token / kv_gpu_shares(hw)
    return max(0, int(per_gpu // block_bytes_per_gpu)) * max(1, hw.layout.attention_dp)
