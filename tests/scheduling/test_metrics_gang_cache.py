"""`SchedulingMetrics.gangs` keeps `form_gangs` of the cluster's pods up to date pod by pod:
after every change it must equal a fresh `form_gangs`, or the metrics would count stale
gangs."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.catalog import get_instance_type
from gpuscale.cluster.groups import PodGroupSpec
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


# Random pod histories: the incrementally kept gangs equal a fresh `form_gangs` after every
# change, and also between the events of one multi-pod deletion (where a listener observes
# with some of the batch gone from the cluster already and others not yet announced).
_GROUPS = st.sampled_from([None, "a", "b", "c"])
_SPECS = st.sampled_from([None, PodGroupSpec(name="a", min_member=2),
                          PodGroupSpec(name="b", min_member=3, queue="q")])
_OPS = st.lists(st.tuples(st.sampled_from(["add", "add", "bind", "evict", "delete", "batch"]),
                          _GROUPS, _SPECS, st.integers(0, 50), st.integers(1, 3)),
                max_size=60)


@settings(max_examples=200, deadline=None)
@given(_OPS)
def test_incremental_gangs_equal_form_gangs(ops):
    cluster, metrics = ClusterState(), SchedulingMetrics()
    node = Node(name="n", instance_type=get_instance_type("p5.48xlarge"), zone="z")
    cluster.add_node(node)
    cluster.mark_node_ready(node, 0.0)
    checks = []
    cluster.on_pod_deleted.append(lambda pod: checks.append(_same(metrics, cluster)))
    _same(metrics, cluster)
    serial = 0
    for op, group, spec, pick, count in ops:
        pods = list(cluster.pods.values())
        if op == "add":
            serial += 1
            cluster.add_pod(Pod(name=f"p{serial}", gpus=0, group=group,
                                group_spec=spec if group is not None else None,
                                priority=pick % 3, queue="q" if pick % 2 else None))
        elif not pods:
            continue
        elif op == "bind":
            pod = pods[pick % len(pods)]
            if pod.node_name is None:
                cluster.bind(pod, node, 0.0)
        elif op == "evict":
            pod = pods[pick % len(pods)]
            if pod.node_name is not None:
                cluster.evict(pod, "test")
        elif op == "delete":
            cluster.delete_pod(pods[pick % len(pods)])
        else:  # several pods at once, as a job's pods at its end
            start = pick % len(pods)
            cluster.delete_pods(pods[start:start + count])
        _same(metrics, cluster)


def _rates_by_gang_properties(cluster: ClusterState) -> tuple[dict, float, bool]:
    """What `_recompute` derives from the gangs, through the `Gang` properties for every gang
    (no fast path): GPUs bound per queue, GPUs held by incomplete gangs, and whether a gang
    is blocked."""
    queue_rate: Counter = Counter()
    held, blocked = 0.0, False
    for gang in form_gangs(cluster.pods.values()).values():
        bound = gang.bound
        for pod in bound:
            queue_rate[gang.spec.queue] += pod.gpus
        if gang.is_complete:
            continue
        if gang.min_member > 1 and len(bound) < len(gang.pods):
            blocked = True
        held += sum(p.gpus for p in bound)
    return dict(queue_rate), held, blocked


_RATE_SPECS = st.sampled_from([None, PodGroupSpec(name="a", min_member=2),
                               PodGroupSpec(name="b", min_member=0, queue="q"),
                               PodGroupSpec(name="c", min_member=1)])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "add", "bind", "evict", "delete"]),
                          _GROUPS, _RATE_SPECS, st.integers(0, 50), st.integers(1, 3)),
                max_size=60))
def test_rates_match_the_gang_properties_after_every_change(ops):
    """`_recompute` takes a shortcut for one-pod gangs that need no gang; the rates must be
    those the general rules give every gang (queue allocation, held GPUs, blocking)."""
    cluster, metrics = ClusterState(), SchedulingMetrics()
    nodes = [Node(name=f"n{i}", instance_type=get_instance_type("p5.48xlarge"), zone="z")
             for i in range(3)]
    for node in nodes:
        cluster.add_node(node)
        cluster.mark_node_ready(node, 0.0)
    serial = 0
    for op, group, spec, pick, gpus in ops:
        pods = list(cluster.pods.values())
        if op == "add":
            serial += 1
            cluster.add_pod(Pod(name=f"p{serial}", gpus=gpus, group=group,
                                group_spec=spec if group is not None else None,
                                queue="q" if pick % 2 else None))
        elif not pods:
            continue
        elif op == "bind":
            pod = pods[pick % len(pods)]
            node = next((n for n in nodes if n.gpus_free >= pod.gpus), None)
            if pod.node_name is None and node is not None:
                cluster.bind(pod, node, 0.0)
        elif op == "evict":
            pod = pods[pick % len(pods)]
            if pod.node_name is not None:
                cluster.evict(pod, "test")
        else:
            cluster.delete_pod(pods[pick % len(pods)])
        metrics.observe(0.0, cluster)
        queue_rate, held, blocked = _rates_by_gang_properties(cluster)
        assert metrics.queue_rate == queue_rate
        assert list(metrics.queue_rate) == list(queue_rate)
        assert metrics.rates["gang_idle_gpu_s"] == held
        assert metrics.rates["free_gpu_s_while_gang_blocked"] == (
            metrics.rates["free_gpu_s"] if blocked else 0.0)
