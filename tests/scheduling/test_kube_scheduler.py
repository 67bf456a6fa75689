"""Default kube-scheduler semantics (layer2-scheduling.md section 1)."""

from __future__ import annotations

from gpuscale.cluster.objects import Pod, Taint, Toleration
from gpuscale.scheduling.kube_scheduler import KubeScheduler, KubeSchedulerParams


def kube(**params) -> KubeScheduler:
    return KubeScheduler(KubeSchedulerParams(**params))


def add(h, pod: Pod, at_s: float = 0.0) -> Pod:
    h.sim.schedule(at_s, 0, h._add, pod)
    return pod


def test_multi_pod_job_binds_partially(h):
    for i, busy in enumerate([1, 2, 2]):
        h.node(f"n{i}", busy=busy)
    pods = h.gang("job", 8, 1)
    h.attach(kube())
    h.run(0.0)
    assert sum(p.node_name is not None for p in pods) == 7
    assert h.reports == [(0.0, ["job-7"])]


def test_gpus_are_not_scored_least_allocated_follows_cpu(h):
    # a: all 4 GPUs free but CPU mostly requested; b: 1 GPU free, CPU idle
    a, _b = h.node("a"), h.node("b", busy=3)
    cpu_hog = Pod(name="hog", gpus=0, cpu_milli=80_000)
    h.cluster.add_pod(cpu_hog)
    h.cluster.bind(cpu_hog, a, 0.0)
    pod = add(h, Pod(name="p", gpus=1, cpu_milli=1000))
    h.attach(kube())
    h.run(0.0)
    assert pod.node_name == "b"


def test_most_allocated_packs_by_cpu(h):
    a, _b = h.node("a"), h.node("b")
    hog = Pod(name="hog", gpus=0, cpu_milli=40_000)
    h.cluster.add_pod(hog)
    h.cluster.bind(hog, a, 0.0)
    pod = add(h, Pod(name="p", gpus=1, cpu_milli=1000))
    h.attach(kube(scoring_strategy="MostAllocated"))
    h.run(0.0)
    assert pod.node_name == "a"


def test_taints_and_node_selector_filter(h):
    tainted = h.node("t")
    tainted.taints = (Taint("nvidia.com/gpu", "true", "NoSchedule"),)
    h.node("plain", pool="x")
    no_tol = add(h, Pod(name="no-tol", gpus=4, node_selector={"pool": "y"}))
    tol = add(h, Pod(name="tol", gpus=4, tolerations=(Toleration("nvidia.com/gpu", "Exists"),),
                     node_selector={"kubernetes.io/hostname": "t"}))
    untolerant = add(h, Pod(name="untolerant", gpus=4))
    h.attach(kube())
    h.run(0.0)
    assert no_tol.node_name is None and tol.node_name == "t"
    assert untolerant.node_name == "plain"


def test_priority_preemption_evicts_lowest_and_respects_never(h):
    h.node("n0")
    low = Pod(name="low", gpus=4, priority=10)
    h.cluster.add_pod(low)
    h.cluster.bind(low, h.cluster.nodes["n0"], 0.0)
    polite = add(h, Pod(name="polite", gpus=4, priority=100, preemption_policy="Never"))
    sched = h.attach(kube())
    h.run(5.0)
    assert polite.node_name is None and low.node_name == "n0"
    urgent = add(h, Pod(name="urgent", gpus=4, priority=100), at_s=6.0)
    h.run(6.0)
    assert urgent.node_name == "n0" and low.node_name is None
    assert sched.summary()["preemptions"] == 1


def test_unschedulable_backoff_doubles_to_ten_seconds(h):
    h.node("n0", busy=4)
    add(h, Pod(name="p", gpus=1))
    h.attach(kube())
    h.run(40.0)
    times = [t for t, _ in h.reports]
    assert times == [0.0, 1.0, 3.0, 7.0, 15.0, 25.0, 35.0]


def test_node_ready_requeues_at_once(h):
    from gpuscale.catalog import get_instance_type
    from gpuscale.cluster.objects import Node

    h.node("n0", busy=4)
    pod = add(h, Pod(name="p", gpus=1))
    h.attach(kube())
    node = Node(name="new", instance_type=get_instance_type("g6.24xlarge"), zone="z")
    h.cluster.add_node(node)
    h.sim.schedule(4.5, 0, h.cluster.mark_node_ready, node, 4.5)
    h.run(10.0)
    assert pod.node_name == "new" and pod.bound_s == 4.5

