"""The vectorised filters of `Snapshot` select exactly the nodes `passes_filters` does.

kube-scheduler filters on the snapshot's arrays (one numpy pass per pod); the per-node
`passes_filters` stays the definition. Checked on random clusters and after trial placements
(assume/forget), including the "fits nowhere" memo that `forget` must clear.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.catalog import get_instance_type
from gpuscale.cluster.objects import Node, Pod, Taint, Toleration
from gpuscale.cluster.state import ClusterState
from gpuscale.scheduling.snapshot import Snapshot, passes_filters

TYPES = ("g6.24xlarge", "p5.48xlarge", "g6e.2xlarge")
TAINT = Taint("nvidia.com/gpu", "true", "NoSchedule")
TOLERATE = (Toleration("nvidia.com/gpu", "Exists"),)


def _cluster(shapes: list[tuple[int, bool, int, bool]]) -> ClusterState:
    cluster = ClusterState()
    for i, (type_index, tainted, busy_gpus, pool_a) in enumerate(shapes):
        itype = get_instance_type(TYPES[type_index])
        node = Node(name=f"n{i}", instance_type=itype, zone="z",
                    labels={"pool": "a" if pool_a else "b"}, taints=(TAINT,) if tainted else ())
        cluster.add_node(node)
        cluster.mark_node_ready(node, 0.0)
        busy = min(busy_gpus, itype.num_gpus)
        if busy:
            pod = Pod(name=f"busy{i}", gpus=busy, cpu_milli=1000 * busy, memory_mib=4096 * busy)
            cluster.add_pod(pod)
            cluster.bind(pod, node, 0.0)
    return cluster


node_shapes = st.lists(st.tuples(st.integers(0, 2), st.booleans(), st.integers(0, 8),
                                 st.booleans()), min_size=1, max_size=12)
pod_shapes = st.lists(st.tuples(st.integers(0, 8), st.integers(0, 200_000),
                                st.integers(0, 2_000_000), st.booleans(),
                                st.sampled_from([None, "a", "b"])), min_size=1, max_size=20)


def _pod(i: int, gpus: int, cpu: int, mem: int, tolerates: bool, pool: str | None) -> Pod:
    return Pod(name=f"p{i}", gpus=gpus, cpu_milli=cpu, memory_mib=mem,
               tolerations=TOLERATE if tolerates else (),
               node_selector={"pool": pool} if pool else {})


@settings(max_examples=60, deadline=None)
@given(node_shapes, pod_shapes, st.lists(st.booleans(), max_size=20))
def test_vectorised_filters_match_per_node_filters(nodes, pods, place):
    snap = Snapshot(_cluster(nodes))
    assumed = []
    for i, shape in enumerate(pods):
        pod = _pod(i, *shape)
        expected = [nf for nf in snap.nodes if passes_filters(pod, nf)]
        assert snap.feasible(pod) == expected
        if expected and i < len(place) and place[i]:
            snap.assume(pod, expected[0])       # capacity taken: later pods see less
            assumed.append((pod, expected[0]))
        elif assumed and i % 3 == 0:
            snap.forget(*assumed.pop())         # capacity given back: memo must not stick
        a = snap.arrays()
        assert np.array_equal(a[0], [nf.gpus for nf in snap.nodes])
        assert np.array_equal(a[1], [nf.cpu_milli for nf in snap.nodes])


def test_a_shape_that_fit_nowhere_fits_again_after_forget():
    cluster = _cluster([(0, False, 0, True)])  # one g6.24xlarge, 4 GPUs free
    snap = Snapshot(cluster)
    holder, nf = Pod(name="h", gpus=4), snap.nodes[0]
    snap.assume(holder, nf)
    assert snap.feasible(Pod(name="x", gpus=1)) == []
    snap.forget(holder, nf)
    assert snap.feasible(Pod(name="y", gpus=1)) == [nf]


@settings(max_examples=60, deadline=None)
@given(node_shapes, pod_shapes, st.sampled_from(["binpack", "spread"]))
def test_best_fit_is_kais_pick_without_topology(nodes, pods, strategy):
    from gpuscale.scheduling.kai import KaiParams, KaiScheduler

    kai = KaiScheduler(KaiParams(placement_strategy=strategy))
    snap = Snapshot(_cluster(nodes))
    for i, shape in enumerate(pods):
        pod = _pod(i, *shape)
        expected = kai._pick(pod, snap.nodes, {})
        assert snap.best_fit(pod, kai.binpack) is expected
        if expected is not None:
            snap.assume(pod, expected)
