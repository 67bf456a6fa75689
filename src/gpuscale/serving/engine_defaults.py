"""vLLM engine defaults and the weight-load bandwidth: one copy, read by `simulate` and `plan`.

Before this module the scenario's engine config (sim/run.py) and the planner's sizing
(plan/sizing.py, plan/warm_pool.py) each kept their own `max_num_seqs`, token budget and
GB/s of weight loading, so a plan could be sized on an engine the simulator never ran.

Sources: `../shared/reference/serving-engine-metrics.md` section 1.4 (vLLM
`vllm/engine/arg_utils.py` `get_batch_defaults`), docs/calibration.md rows A15-A17 via
`serving/cold_start.py`.
"""

from __future__ import annotations

from gpuscale.catalog.specs import GpuSpec
from gpuscale.serving.cold_start import weight_load_gbps

# vLLM picks bigger batch defaults on GPUs with >= 70 GiB that are not A100 (arg_utils.py).
BIG_GPU_MIN_MEMORY_GIB = 70
MAX_NUM_SEQS_BIG_GPU = 1024
MAX_NUM_SEQS_SMALL_GPU = 256
# API-server token budgets (the offline `LLM` uses 16384 / 8192; serving runs the API server).
MAX_NUM_BATCHED_TOKENS_BIG_GPU = 8192
MAX_NUM_BATCHED_TOKENS_SMALL_GPU = 2048
# Scenario defaults (scenario/models.py EngineSettings): memory share vLLM pre-allocates and
# the per-GPU reserves outside the KV cache.
GPU_MEMORY_UTILIZATION = 0.9
ACTIVATION_RESERVE_GIB = 2.0
NON_TORCH_GIB = 0.5
BLOCK_SIZE = 16  # KV-cache block, tokens (vLLM CUDA default)
# The scenario's default cold-start storage: EBS gp3 read by the Run:ai streamer (row A16).
DEFAULT_WEIGHT_STORAGE = "gp3"
DEFAULT_WEIGHT_LOADER = "streamer"
DEFAULT_IMAGE_SIZE_GB = 12.0  # scenario ColdStart.image_size_gb: vLLM images ~12-12.6 GB


def is_big_gpu(gpu: GpuSpec) -> bool:
    """vLLM's 'large GPU' test for its batch defaults."""
    return gpu.memory_gib >= BIG_GPU_MIN_MEMORY_GIB and not gpu.name.startswith("A100")


def default_max_num_seqs(gpu: GpuSpec) -> int:
    return MAX_NUM_SEQS_BIG_GPU if is_big_gpu(gpu) else MAX_NUM_SEQS_SMALL_GPU


def default_max_num_batched_tokens(gpu: GpuSpec) -> int:
    return MAX_NUM_BATCHED_TOKENS_BIG_GPU if is_big_gpu(gpu) else MAX_NUM_BATCHED_TOKENS_SMALL_GPU


def default_weight_load_gbps() -> float:
    """GB/s of the scenario's default weight storage and loader (gp3 + streamer, ~1.05)."""
    return weight_load_gbps(DEFAULT_WEIGHT_STORAGE, DEFAULT_WEIGHT_LOADER)
