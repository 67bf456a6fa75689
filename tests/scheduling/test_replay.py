"""The Alibaba replay on tiny hand-made clusters, plus a smoke run on the real files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuscale.scheduling.replay import (
    Placer,
    ReplayNodes,
    fragmented_gpus,
    replay_fill,
    replay_timed,
)
from gpuscale.workloads.gpu_jobs import (
    AlibabaNodes,
    AlibabaPods,
    read_alibaba_nodes,
    read_alibaba_pods,
)

TRACE = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces" / "alibaba_gpu_v2023"


def nodes(gpus, cpu=64000, mem=262144) -> AlibabaNodes:
    n = len(gpus)
    return AlibabaNodes(np.array([f"n{i}" for i in range(n)]), np.full(n, cpu), np.full(n, mem),
                        np.array(gpus), np.array(["T4"] * n))


def pods(rows) -> AlibabaPods:
    """rows: (num_gpu, gpu_milli, cpu_milli, creation_s, deletion_s)."""
    a = np.array(rows, dtype=np.int64)
    return AlibabaPods(np.array([f"p{i}" for i in range(len(a))]), a[:, 2], np.full(len(a), 1024),
                       a[:, 0], a[:, 1], a[:, 3], a[:, 4])


def test_binpack_shares_one_gpu_spread_uses_two_nodes():
    for policy, expect_same_gpu in (("kai-binpack", True), ("kai-spread", False)):
        rn = ReplayNodes.from_trace(nodes([2, 2]))
        placer = Placer(rn, policy, None)
        where = []
        for _ in range(2):
            node, gpus = placer.place(1000, 1024, 1, 400)
            placer.apply(node, gpus, 1000, 1024, 400, +1)
            where.append((node, int(gpus[0])))
        assert (where[0] == where[1]) is expect_same_gpu


def test_whole_gpu_pod_needs_untouched_gpus():
    rn = ReplayNodes.from_trace(nodes([2]))
    rn.gpu_free[0] = [600, 1000]  # one GPU partly used
    assert rn.fit_mask(0, 0, 1, 1000)[0] and not rn.fit_mask(0, 0, 2, 1000)[0]
    rn.gpu_free[0] = [600, 0]
    assert rn.fit_mask(0, 0, 1, 600)[0] and not rn.fit_mask(0, 0, 1, 700)[0]


def test_fragmentation_by_hand():
    rn = ReplayNodes.from_trace(nodes([2, 2]))
    rn.gpu_free[0] = [300, 1000]  # node 0: 0.3 left on GPU 0, one GPU whole
    rn.gpu_free[1] = [0, 0]
    # shapes: whole-GPU pod (weight 0.5) cannot use the 0.3; a 500-milli pod (weight 0.5)
    # cannot use the 0.3 either; both fit node 0; node 1 has nothing free.
    shapes = np.array([[1, 1000, 0, 0], [1, 500, 0, 0]], float)
    assert fragmented_gpus(rn, shapes, np.array([0.5, 0.5])) == pytest.approx(0.3)
    # a 2-GPU shape cannot fit node 0 at all: all 1.3 free GPUs are fragmented for it
    shapes = np.array([[2, 1000, 0, 0]], float)
    assert fragmented_gpus(rn, shapes, np.array([1.0])) == pytest.approx(1.3)


def test_fill_counts_failures_and_timed_frees_capacity():
    trace = pods([(2, 1000, 1000, 0, 10), (1, 1000, 1000, 1, 20), (2, 1000, 1000, 2, 30)])
    fill = replay_fill(trace, nodes([2, 1]), "kai-binpack")
    assert fill["failed_pods"] == 1 and fill["allocated_frac"] == pytest.approx(1.0)
    timed = replay_timed(trace, nodes([2, 1]), "kai-binpack")
    # the third pod waits from t=2 until the first leaves at t=10
    assert timed["never_placed"] == 0 and timed["wait_s_p99"] == pytest.approx(8, abs=0.5)


def test_real_trace_reads_and_replays():
    if not (TRACE / "openb_pod_list_default.csv").exists():
        pytest.skip("shared Alibaba trace not present")
    trace = read_alibaba_pods(TRACE / "openb_pod_list_default.csv")
    cluster = read_alibaba_nodes(TRACE / "openb_node_list_gpu_node.csv")
    assert len(trace) == 8152 and len(cluster) == 1213 and int(cluster.num_gpu.sum()) == 6212
    assert int(((trace.num_gpu == 1) & (trace.gpu_milli < 1000)).sum()) == 3078
    result = replay_fill(trace, cluster, "kai-binpack", num_samples=5)
    assert 0.5 < result["allocated_frac"] <= 1.0
