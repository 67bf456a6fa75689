"""Node scoring as pure functions of numbers, shared by the schedulers and the trace replay.

kube-scheduler's NodeResourcesFit scores CPU and memory only by default (weight 1 each;
`nvidia.com/gpu` is filtered, not scored), LeastAllocated by default, MostAllocated to pack
(layer2-scheduling.md 1.2). KAI scores the job's main resource, GPUs: binpack prefers the
feasible node whose free GPUs are closest to the minimum, spread the most free (2.7).
All functions take numpy arrays or floats, so the replay scores 1,213 nodes in one call.
"""

from __future__ import annotations

import numpy as np

MAX_NODE_SCORE = 100.0  # framework.MaxNodeScore


def least_allocated(req_cpu, req_mem, free_cpu, free_mem, cap_cpu, cap_mem):
    """Mean over cpu and memory of (capacity - requested after placement) / capacity x 100."""
    cpu = (free_cpu - req_cpu) / np.maximum(cap_cpu, 1)
    mem = (free_mem - req_mem) / np.maximum(cap_mem, 1)
    return MAX_NODE_SCORE * (cpu + mem) / 2.0


def most_allocated(req_cpu, req_mem, free_cpu, free_mem, cap_cpu, cap_mem):
    """Mean over cpu and memory of requested after placement / capacity x 100."""
    return MAX_NODE_SCORE - least_allocated(req_cpu, req_mem, free_cpu, free_mem, cap_cpu, cap_mem)


def gpu_binpack(free_gpus_after, cap_gpus):
    """Higher for nodes left with fewer free GPUs (KAI gpupack): fill nodes before opening one."""
    return MAX_NODE_SCORE * (1.0 - free_gpus_after / np.maximum(cap_gpus, 1))


def gpu_spread(free_gpus_after, cap_gpus):
    """Higher for nodes left with more free GPUs (KAI gpuspread)."""
    return MAX_NODE_SCORE * free_gpus_after / np.maximum(cap_gpus, 1)


SCORERS = {"LeastAllocated": least_allocated, "MostAllocated": most_allocated}
GPU_SCORERS = {"binpack": gpu_binpack, "spread": gpu_spread}


def argmax_random_tie(scores: np.ndarray, rng: np.random.Generator | None) -> int:
    """Index of the best score; ties broken at random as kube-scheduler's selectHost does
    (first index when no generator is given, for deterministic replays)."""
    best = np.flatnonzero(scores >= scores.max() - 1e-9)
    if rng is None or len(best) == 1:
        return int(best[0])
    return int(best[rng.integers(len(best))])
