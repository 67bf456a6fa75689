"""`SchedulingMetrics.gangs` reuses `form_gangs` only while no pod was added, bound, evicted
or deleted: every such change must drop it, or the metrics would count stale gangs."""

from __future__ import annotations

from gpuscale.catalog import get_instance_type
from gpuscale.cluster.objects import Node, Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.scheduling.gangs import form_gangs
from gpuscale.scheduling.metrics import SchedulingMetrics


def _same(metrics: SchedulingMetrics, cluster: ClusterState) -> None:
    cached = metrics.gangs(cluster)
    fresh = form_gangs(cluster.pods.values())
    assert list(cached) == list(fresh)
    assert [[p.name for p in g.pods] for g in cached.values()] == \
        [[p.name for p in g.pods] for g in fresh.values()]
    assert [g.spec for g in cached.values()] == [g.spec for g in fresh.values()]


def test_gangs_follow_every_pod_change():
    cluster, metrics = ClusterState(), SchedulingMetrics()
    node = Node(name="n", instance_type=get_instance_type("p5.48xlarge"), zone="z")
    cluster.add_node(node)
    cluster.mark_node_ready(node, 0.0)
    _same(metrics, cluster)
    first = Pod(name="a-0", gpus=1, group="a")
    cluster.add_pod(first)                      # joins a gang formed from its `group`
    _same(metrics, cluster)
    second = Pod(name="a-1", gpus=1, group="a")
    cluster.add_pod(second)                     # minMember becomes 2
    _same(metrics, cluster)
    assert metrics.gangs(cluster)["a"].spec.min_member == 2
    cluster.bind(first, node, 0.0)
    _same(metrics, cluster)
    cluster.evict(first, "test")
    _same(metrics, cluster)
    cluster.delete_pod(second)                  # minMember back to 1
    _same(metrics, cluster)
    assert metrics.gangs(cluster)["a"].spec.min_member == 1
    assert metrics.gangs(cluster) is metrics.gangs(cluster)  # unchanged cluster: reused
