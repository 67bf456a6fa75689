"""CapacityBuffer: virtual pods that keep warm room, in Karpenter and Cluster Autoscaler."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpuscale.cluster.objects import Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.provisioning.capacity_buffer import CapacityBufferParams, chunks
from gpuscale.provisioning.testing import (
    FIXED_LATENCIES,
    READY_AFTER_S,
    h100_pool,
    karpenter,
    make_harness,
)

ONE_NODE = {"name": "warm", "gpus_per_pod": 8, "replicas": 1}
ONLY_P5_48 = [{"key": "node.kubernetes.io/instance-type", "operator": "In",
               "values": ["p5.48xlarge"]}]


def _karpenter(buffers):
    return make_harness(karpenter(h100_pool(requirements=ONLY_P5_48),
                                  capacity_buffers=buffers))


def _ca(buffers, **kw):
    spec = {"kind": "cluster_autoscaler", "node_latencies": FIXED_LATENCIES,
            "node_groups": [{"name": "h100", "instance_type": "p5.48xlarge", "max_size": 5}],
            "capacity_buffers": buffers, "scale_down_unneeded_time_s": 60,
            "scale_down_delay_after_add_s": 0}
    spec.update(kw)
    return make_harness(spec)


def _bound_s(h, name):
    return h.cluster.pods[name].bound_s


@pytest.mark.parametrize("make", [_karpenter, _ca], ids=["karpenter", "cluster-autoscaler"])
def test_buffer_node_is_warm_at_start_and_a_burst_pod_binds_at_once(make):
    with_buffer, without = make([ONE_NODE]), make([])
    for h in (with_buffer, without):
        h.add_pods(600, "burst", 1, gpus=8)
        h.sim.run(1200)
    assert _bound_s(with_buffer, "burst0") <= 601.0  # the binder's next 1 s cycle
    assert _bound_s(without, "burst0") >= 600 + READY_AFTER_S


@pytest.mark.parametrize("make", [_karpenter, _ca], ids=["karpenter", "cluster-autoscaler"])
def test_displaced_buffer_is_provisioned_again(make):
    h = make([ONE_NODE])
    h.add_pods(600, "burst", 1, gpus=8)
    h.sim.run(1200)
    assert len(h.nodes()) == 2  # the real pod's node and a fresh buffer node
    spare = [n for n in h.nodes() if not n.pod_names]
    assert len(spare) == 1 and 600 <= spare[0].created_s <= 620


@pytest.mark.parametrize("make", [_karpenter, _ca], ids=["karpenter", "cluster-autoscaler"])
def test_buffer_room_is_not_empty_to_scale_down(make):
    h = make([ONE_NODE])
    h.sim.run(4 * 3600)
    (node,) = h.nodes()
    assert node.deleted_s is None and node.billed_s(h.sim.now_s) == 4 * 3600
    empty = make([])
    empty.add_pods(0, "p", 1, gpus=8)
    empty.delete_pods(600, "p0")
    empty.sim.run(4 * 3600)
    assert empty.nodes() == []  # the same empty node without a buffer goes


def test_karpenter_consolidation_keeps_buffer_room():
    """Two half-full nodes would consolidate into one; with a buffer of 4 GPUs the room the
    merge would take is the buffer's, so consolidation evicts nothing."""
    def evictions(buffers):
        h = _karpenter(buffers)
        log = []
        h.cluster.on_pod_evicted.append(lambda pod, cause: log.append(cause))
        h.add_pods(0, "a", 1, gpus=8)
        h.add_pods(0, "b", 1, gpus=8)

        def shrink():  # each node keeps one 4-GPU pod: together they fit on one node
            for old, new in (("a0", "c"), ("b0", "d")):
                node = h.cluster.nodes[h.cluster.pods[old].node_name]
                h.cluster.delete_pod(h.cluster.pods[old])
                h.cluster.add_pod(Pod(new, gpus=4))
                h.cluster.bind(h.cluster.pods[new], node, h.sim.now_s)
        h.at(900, shrink)
        h.sim.run(4 * 3600)
        return log
    assert evictions([]) == ["consolidation"]
    assert evictions([{"name": "half", "gpus_per_pod": 4, "replicas": 1}]) == []


def _cluster_with(pods: int, labels: dict) -> ClusterState:
    cluster = ClusterState()
    for i in range(pods):
        cluster.add_pod(Pod(f"p{i}", gpus=8, labels=dict(labels)))
    cluster.add_pod(Pod("other", gpus=8, labels={"app": "other"}))
    return cluster


@pytest.mark.parametrize(("spec", "expected"), [
    ({"replicas": 2}, 2),
    ({"percentage": 20, "scalable_labels": {"app": "vllm"}}, 2),  # ceil(0.2 * 6)
    ({"percentage": 1, "scalable_labels": {"app": "vllm"}}, 1),  # at least 1
    ({"percentage": 0, "scalable_labels": {"app": "vllm"}}, 0),
    ({"percentage": 50, "replicas": 1, "scalable_labels": {"app": "vllm"}}, 3),  # the larger
    ({"replicas": 5, "limits_gpus": 24}, 3),  # capped by limits
    ({"limits_gpus": 17}, 2),  # limits alone: as many as fit
])
def test_chunks_follow_the_api(spec, expected):
    buffer = CapacityBufferParams(name="b", gpus_per_pod=8, **spec)
    assert chunks(buffer, _cluster_with(6, {"app": "vllm"})) == expected


def test_percentage_of_a_workload_with_no_pods_is_nothing():
    buffer = CapacityBufferParams(name="b", gpus_per_pod=8, percentage=50,
                                  scalable_labels={"app": "vllm"})
    assert chunks(buffer, _cluster_with(0, {"app": "vllm"})) == 0


@pytest.mark.parametrize(("spec", "message"), [
    ({}, "set replicas, percentage or limits_gpus"),
    ({"percentage": 10}, "percentage needs scalable_labels"),
    ({"replicas": 1, "provisioning_strategy": "buffer.x-k8s.io/standby"}, "literal_error"),
])
def test_refused_buffer_shapes(spec, message):
    with pytest.raises(ValidationError, match=message):
        CapacityBufferParams(name="b", gpus_per_pod=8, **spec)


def test_duplicate_buffer_names_are_refused():
    with pytest.raises(ValidationError, match="duplicate capacity buffer names: warm"):
        _karpenter([ONE_NODE, ONE_NODE])
