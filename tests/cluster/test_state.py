"""ClusterState owns the "something changed" stamp and announces every change, deletions too."""

from __future__ import annotations

import itertools

from gpuscale.catalog import get_instance_type
from gpuscale.cluster.objects import Node, NodeState, Pod
from gpuscale.cluster.state import ClusterState


def _node(name: str = "n0") -> Node:
    return Node(name=name, instance_type=get_instance_type("g6.24xlarge"), zone="z")


def test_every_mutator_advances_the_stamp_and_tells_the_change_listeners():
    cluster = ClusterState()
    heard: list[int] = []
    cluster.on_changed.append(lambda: heard.append(cluster.stamp))
    node, pod = _node(), Pod("p", gpus=1)
    steps = [
        lambda: cluster.add_node(node),
        lambda: cluster.mark_node_ready(node, 0.0),
        lambda: cluster.add_pod(pod),
        lambda: cluster.nominate(node.name, pod.name, 0.0),
        lambda: cluster.bind(pod, node, 1.0),
        lambda: cluster.clear_nomination(pod.name),
        lambda: cluster.evict(pod, "test"),
        lambda: cluster.mark_for_deletion(node),
        lambda: cluster.unmark_for_deletion(node),
        lambda: cluster.delete_pod(pod),
        lambda: cluster.remove_node(node, 2.0, "test"),
    ]
    stamps = [cluster.stamp]
    for step in steps:
        step()
        stamps.append(cluster.stamp)
    assert all(b > a for a, b in itertools.pairwise(stamps))  # monotonic, one step each
    assert heard == stamps[1:]


def test_reads_leave_the_stamp_alone():
    cluster = ClusterState()
    cluster.add_node(_node())
    before = cluster.stamp
    cluster.pending_pods(), cluster.ready_nodes(), cluster.gpus_allocated()
    cluster.clear_nomination("nobody")  # nothing was nominated: nothing changed
    assert cluster.stamp == before


def test_deletion_is_announced_after_the_gpus_are_free():
    cluster = ClusterState()
    node = _node()
    cluster.add_node(node)
    cluster.mark_node_ready(node, 0.0)
    pod = Pod("p", gpus=4)
    cluster.add_pod(pod)
    cluster.bind(pod, node, 0.0)
    seen = []
    cluster.on_pod_deleted.append(lambda p: seen.append((p.name, node.gpus_free)))
    cluster.delete_pod(pod)
    assert seen == [("p", node.num_gpus)]


def test_removing_a_node_drops_the_nominations_to_it():
    cluster = ClusterState()
    node = _node()
    cluster.add_node(node)
    cluster.add_pod(Pod("p", gpus=1))
    cluster.nominate(node.name, "p", 5.0)
    cluster.remove_node(node, 6.0, "test")
    assert (cluster.nominated, cluster.nomination_of, cluster.nominated_at_s) == ({}, {}, {})
    assert node.state is NodeState.GONE


def test_pods_deleted_together_are_all_free_before_any_listener_hears():
    # A job's pods go at once; a listener (the scheduler's metrics) must not see the
    # zero-length states in between.
    cluster = ClusterState()
    node = _node()
    cluster.add_node(node)
    cluster.mark_node_ready(node, 0.0)
    pods = [Pod(f"p{i}", gpus=1) for i in range(3)]
    for pod in pods:
        cluster.add_pod(pod)
        cluster.bind(pod, node, 0.0)
    seen = []
    cluster.on_pod_deleted.append(
        lambda p: seen.append((p.name, node.gpus_free, len(cluster.pods)))
    )
    cluster.delete_pods(pods)
    assert seen == [(f"p{i}", node.num_gpus, 0) for i in range(3)]
