"""Fast replay of the Alibaba GPU pod list on its GPU nodes (a placement benchmark).

Nodes are numpy arrays: free CPU, free memory and, per GPU, free milli-GPU (1000 = a whole
GPU), so GPU-sharing pods (`gpu_milli` < 1000) take part of one GPU as KAI's gpu-fraction
does; a whole-GPU pod needs `num_gpu` untouched GPUs. Policies reuse the scorers in
`placement.py`: kube-scheduler scores cpu/memory only (GPUs filtered, not scored, 1.2) and
picks the first GPU that fits; KAI binpack/spread score the pod's main resource (GPUs, or
CPU for CPU-only pods) and pack/spread shared GPUs too (gpusharingorder, 2.7). Gangs do not
arise: every row of the trace is one pod.

Two modes. `fill`: pods arrive in file order and never leave, as the FGD paper (ATC'23) uses
the trace; we record allocation and fragmentation against arrived GPU demand. `timed`: pods
arrive at creation_time and leave at deletion_time; a pod that does not fit waits (FIFO,
retried when capacity frees) until placed or until its deletion_time.

Fragmentation follows FGD's definition (paraphrased): for a node and a pod shape, the free GPU
capacity that shape cannot use (all of it if the shape does not fit the node at all; for a
sharing shape, GPUs with less free than it needs; for whole-GPU shapes, partly used GPUs),
averaged over the GPU pod shapes of the trace weighted by how often they occur.
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass

import numpy as np

from gpuscale.scheduling.placement import (
    argmax_random_tie,
    gpu_binpack,
    gpu_spread,
    least_allocated,
    most_allocated,
)
from gpuscale.workloads.gpu_jobs import AlibabaNodes, AlibabaPods

WHOLE = 1000
POLICIES = ("kube-least-allocated", "kube-most-allocated", "kai-binpack", "kai-spread")


@dataclass
class ReplayNodes:
    cap_cpu: np.ndarray
    cap_mem: np.ndarray
    num_gpu: np.ndarray
    free_cpu: np.ndarray
    free_mem: np.ndarray
    gpu_free: np.ndarray  # (nodes, max GPUs) milli; -1 where the node has no such GPU

    @classmethod
    def from_trace(cls, nodes: AlibabaNodes) -> ReplayNodes:
        n, width = len(nodes), int(max(1, nodes.num_gpu.max()))
        gpu = np.full((n, width), -1, np.int64)
        for i, k in enumerate(nodes.num_gpu):
            gpu[i, :k] = WHOLE
        return cls(nodes.cpu_milli.astype(float), nodes.memory_mib.astype(float),
                   nodes.num_gpu.astype(float), nodes.cpu_milli.astype(float).copy(),
                   nodes.memory_mib.astype(float).copy(), gpu)

    def fit_mask(self, cpu: float, mem: float, k: int, m: int) -> np.ndarray:
        ok = (self.free_cpu >= cpu) & (self.free_mem >= mem)
        if k == 0:
            return ok
        if m < WHOLE:
            return ok & (self.gpu_free >= m).any(axis=1)
        return ok & ((self.gpu_free == WHOLE).sum(axis=1) >= k)


def _shapes(pods: AlibabaPods) -> tuple[np.ndarray, np.ndarray]:
    """GPU pod shapes (k, milli, cpu, mem) and their frequencies (FGD's target workload)."""
    keys = Counter(zip(pods.num_gpu.tolist(), pods.gpu_milli.tolist(), pods.cpu_milli.tolist(),
                       pods.memory_mib.tolist(), strict=True))
    shapes = [(s, c) for s, c in sorted(keys.items()) if s[0] > 0]
    arr = np.array([s for s, _ in shapes], float)
    freq = np.array([c for _, c in shapes], float)
    return arr, freq / freq.sum()


def fragmented_gpus(nodes: ReplayNodes, shapes: np.ndarray, weights: np.ndarray) -> float:
    """FGD-style expected fragmented GPUs of the cluster (whole-GPU units), all shapes at once."""
    free = np.where(nodes.gpu_free > 0, nodes.gpu_free, 0)  # (N, G)
    k, m, cpu, mem = (shapes[:, i][:, None] for i in range(4))  # (S, 1)
    fits = (nodes.free_cpu[None, :] >= cpu) & (nodes.free_mem[None, :] >= mem)  # (S, N)
    whole = (free == WHOLE).sum(axis=1)[None, :] >= k
    share = (free[None, :, :] >= m[:, :, None]).any(axis=2)
    fits &= np.where(m < WHOLE, share, whole)
    # free capacity on GPUs with less free than the shape needs per GPU (min(m, 1000))
    need = np.minimum(m, WHOLE)[:, :, None]
    unusable = np.where(free[None, :, :] < need, free[None, :, :], 0).sum(axis=2)  # (S, N)
    per_shape = np.where(fits, unusable, free.sum(axis=1)[None, :]).sum(axis=1)
    return float(weights @ per_shape) / WHOLE


class Placer:
    """Chooses a node and GPUs for a pod under one policy, and applies it."""

    def __init__(self, nodes: ReplayNodes, policy: str, rng: np.random.Generator | None):
        if policy not in POLICIES:
            raise ValueError(f"unknown replay policy {policy!r}; known: {', '.join(POLICIES)}")
        self.nodes, self.policy, self.rng = nodes, policy, rng

    def place(self, cpu: float, mem: float, k: int, m: int) -> tuple[int, np.ndarray] | None:
        nodes = self.nodes
        idx = np.flatnonzero(nodes.fit_mask(cpu, mem, k, m))
        if len(idx) == 0:
            return None
        if self.policy.startswith("kube"):
            score = (
                least_allocated if self.policy.endswith("least-allocated") else most_allocated
            )(
                cpu,
                mem,
                nodes.free_cpu[idx],
                nodes.free_mem[idx],
                nodes.cap_cpu[idx],
                nodes.cap_mem[idx],
            )
            node = int(idx[argmax_random_tie(np.asarray(score), self.rng)])
        else:
            scorer = gpu_binpack if self.policy == "kai-binpack" else gpu_spread
            if k > 0:
                free_after = (
                    np.where(nodes.gpu_free[idx] > 0, nodes.gpu_free[idx], 0).sum(1) / WHOLE
                )
                score = scorer(free_after - k * m / WHOLE, nodes.num_gpu[idx])
            else:
                score = scorer((nodes.free_cpu[idx] - cpu), nodes.cap_cpu[idx])
            node = int(idx[np.argmax(score)])  # first index on ties: deterministic
        return node, self._gpus(node, k, m)

    def _gpus(self, node: int, k: int, m: int) -> np.ndarray:
        row = self.nodes.gpu_free[node]
        if k == 0:
            return np.zeros(0, np.int64)
        if m >= WHOLE:
            return np.flatnonzero(row == WHOLE)[:k]
        cand = np.flatnonzero(row >= m)
        if self.policy == "kai-binpack":
            return cand[[int(np.argmin(row[cand]))]]
        if self.policy == "kai-spread":
            return cand[[int(np.argmax(row[cand]))]]
        return cand[:1]  # device plugin order

    def apply(self, node: int, gpus: np.ndarray, cpu: float, mem: float, m: int, sign: int):
        nodes = self.nodes
        nodes.free_cpu[node] -= sign * cpu
        nodes.free_mem[node] -= sign * mem
        nodes.gpu_free[node, gpus] -= sign * min(m, WHOLE)


def _fits_node(nodes: ReplayNodes, j: int, cpu: float, mem: float, k: int, m: int) -> bool:
    if nodes.free_cpu[j] < cpu or nodes.free_mem[j] < mem:
        return False
    if k == 0:
        return True
    row = nodes.gpu_free[j]
    return bool((row >= m).any()) if m < WHOLE else int((row == WHOLE).sum()) >= k


def _request(pods: AlibabaPods, i: int) -> tuple[float, float, int, int]:
    return (float(pods.cpu_milli[i]), float(pods.memory_mib[i]), int(pods.num_gpu[i]),
            int(pods.gpu_milli[i]))


def replay_fill(pods: AlibabaPods, nodes: AlibabaNodes, policy: str, *, seed: int = 0,
                num_samples: int = 100) -> dict:
    """Pods in file order, never leaving (FGD's use of the trace)."""
    rn = ReplayNodes.from_trace(nodes)
    placer = Placer(rn, policy, np.random.default_rng(seed))
    shapes, weights = _shapes(pods)
    total = float(nodes.num_gpu.sum())
    demand = pods.num_gpu * np.minimum(pods.gpu_milli, WHOLE) / WHOLE
    marks = set(np.linspace(0, len(pods) - 1, num_samples).round().astype(int).tolist())
    arrived = allocated = 0.0
    failed, first_fail, series = 0, None, []
    for i in range(len(pods)):
        cpu, mem, k, m = _request(pods, i)
        arrived += demand[i]
        choice = placer.place(cpu, mem, k, m)
        if choice is None:
            failed += 1
            if first_fail is None and k > 0:
                first_fail = round(float(allocated) / total, 4)
        else:
            placer.apply(choice[0], choice[1], cpu, mem, m, +1)
            allocated += demand[i]
        if i in marks:
            series.append([round(float(arrived) / total, 4), round(float(allocated) / total, 4),
                           round(fragmented_gpus(rn, shapes, weights) / total, 4)])
    return {"policy": policy, "mode": "fill", "pods": len(pods), "failed_pods": failed,
            "gpu_capacity": total, "allocated_frac": round(float(allocated) / total, 4),
            "allocated_frac_at_first_gpu_failure": first_fail,
            "fragmented_frac_at_end": series[-1][2] if series else None,
            "series_columns": ["arrived_demand_frac", "allocated_frac", "fragmented_frac"],
            "series": series}


def replay_timed(pods: AlibabaPods, nodes: AlibabaNodes, policy: str, *, seed: int = 0,
                 num_samples: int = 200) -> dict:
    """Pods arrive at creation_time and leave at deletion_time; unplaced pods wait FIFO.

    A deletion frees one node, so only pods that now fit *that* node can newly be placed:
    retries check the freed node only, shape by shape (head-of-line order), which keeps the
    whole trace to seconds.
    """
    run = _TimedReplay(pods, nodes, policy, seed, num_samples)
    events = [(int(t), 1, i) for i, t in enumerate(pods.creation_s)]
    events += [(int(t), 0, i) for i, t in enumerate(pods.deletion_s)]  # frees before arrivals
    heapq.heapify(events)
    while events:
        now, kind, i = heapq.heappop(events)
        run.sample_until(now)
        if kind == 1:
            run.arrive(i, now)
        else:
            run.leave(i, now)
    return run.summary(policy)


class _TimedReplay:
    """`replay_timed`'s cluster, queues and measures, as its events are applied in time
    order."""

    def __init__(self, pods: AlibabaPods, nodes: AlibabaNodes, policy: str, seed: int,
                 num_samples: int) -> None:
        self.pods = pods
        self.nodes = ReplayNodes.from_trace(nodes)
        self.placer = Placer(self.nodes, policy, np.random.default_rng(seed))
        self.shapes, self.weights = _shapes(pods)
        self.total = float(nodes.num_gpu.sum())
        self.demand = pods.num_gpu * np.minimum(pods.gpu_milli, WHOLE) / WHOLE
        self.t0 = int(pods.creation_s.min())
        self.sample_times = list(np.linspace(self.t0, int(pods.deletion_s.max()), num_samples))
        self.placed: dict[int, tuple[int, np.ndarray]] = {}  # pod -> (node, its GPUs)
        self.waiting: dict[tuple, list[int]] = {}  # shape -> FIFO of pod indices
        self.gone: set[int] = set()
        self.waits: list[int] = []
        self.allocated = 0.0
        self.series: list[list] = []

    def sample_until(self, now: int) -> None:
        """A series row for every sample time up to `now`, with the state before it."""
        while self.sample_times and self.sample_times[0] <= now:
            self.sample_times.pop(0)
            self.series.append([
                round((now - self.t0) / 86400.0, 3), round(float(self.allocated) / self.total, 4),
                round(fragmented_gpus(self.nodes, self.shapes, self.weights) / self.total, 4),
                sum(len(q) for q in self.waiting.values())])

    def _bind(self, i: int, node: int, gpus: np.ndarray, now: int) -> None:
        cpu, mem, _k, m = _request(self.pods, i)
        self.placer.apply(node, gpus, cpu, mem, m, +1)
        self.placed[i] = (node, gpus)
        self.allocated += self.demand[i]
        self.waits.append(now - int(self.pods.creation_s[i]))

    def arrive(self, i: int, now: int) -> None:
        req = _request(self.pods, i)
        choice = self.placer.place(*req)
        if choice is None:
            self.waiting.setdefault(req, []).append(i)
        else:
            self._bind(i, choice[0], choice[1], now)

    def leave(self, i: int, now: int) -> None:
        """Pod `i` is deleted: out of its queue if it never ran, else its node is freed and
        the waiting shapes that now fit it are placed there, oldest head first."""
        req = _request(self.pods, i)
        if i not in self.placed:
            self.gone.add(i)
            queue = self.waiting.get(req)
            if queue and i in queue:
                queue.remove(i)
            return
        node, gpus = self.placed.pop(i)
        self.placer.apply(node, gpus, req[0], req[1], req[3], -1)
        self.allocated -= self.demand[i]
        waiting = self.waiting
        for shape in sorted((s for s in waiting if waiting[s]), key=lambda s: waiting[s][0]):
            queue = waiting[shape]
            while queue and _fits_node(self.nodes, node, *shape):
                j = queue.pop(0)
                self._bind(j, node, self.placer._gpus(node, shape[2], shape[3]), now)

    def summary(self, policy: str) -> dict:
        pods, waits, series = self.pods, self.waits, self.series
        never = sum(1 for i in range(len(pods)) if i not in self.placed and i in self.gone)
        busy = [row for row in series if row[0] >= 116.0]  # 98.7 % of pods arrive after day 116
        return {"policy": policy, "mode": "timed", "pods": len(pods), "never_placed": never,
                "gpu_capacity": self.total,
                "wait_s_p50": float(np.percentile(waits, 50)) if waits else None,
                "wait_s_p99": float(np.percentile(waits, 99)) if waits else None,
                "mean_allocated_frac_after_day_116":
                    round(float(np.mean([r[1] for r in busy])), 4) if busy else None,
                "mean_fragmented_frac_after_day_116":
                    round(float(np.mean([r[2] for r in busy])), 4) if busy else None,
                "series_columns": ["day", "allocated_frac", "fragmented_frac", "waiting_pods"],
                "series": series}
