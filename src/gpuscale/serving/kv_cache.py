"""KV-cache sizing as vLLM does it: blocks of `block_size` tokens in what memory is left.

usable per GPU = gpu_memory_utilization x GPU memory - weights/TP - activation peak - non-torch
(calibration.md "How to use", row A5; serving-engine-metrics.md 1.4 for the defaults).
"""

from __future__ import annotations

from gpuscale.serving.performance import ReplicaHardware
from gpuscale.units import GIB


def kv_cache_bytes_per_gpu(hw: ReplicaHardware, *, gpu_memory_utilization: float,
                           activation_reserve_gib: float, non_torch_gib: float) -> float:
    """Bytes left for the KV cache on each GPU of the TP group (may be <= 0: does not fit)."""
    weights_per_gpu = hw.model.weight_bytes(hw.weight_precision) / hw.tp
    budget = gpu_memory_utilization * hw.gpu.memory_bytes
    return budget - weights_per_gpu - (activation_reserve_gib + non_torch_gib) * GIB


def num_kv_blocks(hw: ReplicaHardware, *, gpu_memory_utilization: float, block_size: int,
                  activation_reserve_gib: float, non_torch_gib: float) -> int:
    """Whole KV blocks per replica; each GPU holds 1/TP of every block's KV heads."""
    per_gpu = kv_cache_bytes_per_gpu(hw, gpu_memory_utilization=gpu_memory_utilization,
                                     activation_reserve_gib=activation_reserve_gib,
                                     non_torch_gib=non_torch_gib)
    block_bytes_per_gpu = block_size * hw.kv_bytes_per_token / hw.tp
    return max(0, int(per_gpu // block_bytes_per_gpu))
