"""Karpenter provisioning: batching windows, packing, offering choice, NodeClaim lifecycle."""

from __future__ import annotations

import pytest

from gpuscale.cluster.objects import NodeState, Pod
from gpuscale.provisioning.testing import (
    READY_AFTER_S,
    fixed_latencies,
    h100_pool,
    karpenter,
    make_harness,
)


def _notify_at(h, times, gpus=8):
    """Make one 8-GPU pod unschedulable at each time (each needs its own node)."""
    for i, t in enumerate(times):
        def go(i=i, t=t):
            pod = Pod(f"p{i}", gpus=gpus, created_s=t)
            h.cluster.add_pod(pod)
            h.provider.notify_unschedulable([pod], t)
        h.at(t, go)


def _claim_times(h):
    return sorted(n.created_s for n in h.all_nodes())


def test_batch_closes_one_idle_second_after_the_last_pod():
    h = make_harness(karpenter(h100_pool()), binder=False)
    _notify_at(h, [0.0, 0.5, 1.2])
    h.sim.run(100)
    assert _claim_times(h) == [2.2, 2.2, 2.2]
    assert h.provider.metrics.events["batches"] == 1


def test_batch_closes_at_max_duration_under_steady_arrivals():
    h = make_harness(karpenter(h100_pool()), binder=False)
    _notify_at(h, [0.5 * k for k in range(41)])  # a pod every 0.5 s for 20 s
    h.sim.run(100)
    times = _claim_times(h)
    assert times[0] == 10.0 and times.count(10.0) == 21  # pods at 0.0 .. 10.0
    assert h.provider.metrics.events["batches"] == 2
    assert times[-1] == 20.5  # second window opened at 10.5: its max (20.5) beats idle (21.0)


def test_a_gap_longer_than_idle_starts_a_new_batch():
    h = make_harness(karpenter(h100_pool()), binder=False)
    _notify_at(h, [0.0, 1.5])
    h.sim.run(100)
    assert _claim_times(h) == [1.0, 2.5]


def test_custom_batch_windows_are_honoured():
    h = make_harness(karpenter(h100_pool(), batch_idle_s=5, batch_max_s=6), binder=False)
    _notify_at(h, [0.0, 4.0])
    h.sim.run(100)
    assert _claim_times(h) == [6.0, 6.0]


def test_nodeclaim_phases_and_gpus_only_after_initialization():
    h = make_harness(karpenter(h100_pool()))
    h.add_pods(0, "p", 1, gpus=8)
    states = {}
    for t in (50, 100, 179, 181):
        h.at(t, lambda t=t: states.__setitem__(t, h.nodes()[0].state))
    h.sim.run(300)
    assert states == {50: NodeState.LAUNCHING, 100: NodeState.REGISTERED,
                      179: NodeState.REGISTERED, 181: NodeState.READY}
    node = h.nodes()[0]
    # binder reports at t=0, batch closes at 1.0, ready 180 s later, binder binds at next tick
    assert node.ready_s == 1.0 + READY_AFTER_S
    assert h.cluster.pods["p0"].bound_s == 181.0  # binder runs after lifecycle events
    wait = h.provider.summary()["provisioning_wait_s"]
    assert wait["count"] == 1 and wait["p50"] == pytest.approx(181.0)


def test_largest_pods_first():
    # Largest first: 4 + 4 fill one 8-GPU claim, the 1-GPU pod gets the cheap 1-GPU type.
    # Smallest first would have packed 1 + 4 and then needed a second 8-GPU node.
    h = make_harness(karpenter(h100_pool()))
    h.add_pods(0, "small", 1, gpus=1)
    h.add_pods(0, "big", 2, gpus=4)
    h.sim.run(170)
    assert sorted(n.instance_type.name for n in h.all_nodes()) == ["p5.48xlarge", "p5.4xlarge"]


def test_in_flight_nodes_are_reused():
    h = make_harness(karpenter(h100_pool()))
    h.add_pods(0, "big", 1, gpus=7)
    h.add_pods(60, "late", 1, gpus=1)  # arrives while big's 8-GPU node is in flight
    h.sim.run(400)
    (node,) = h.all_nodes()
    assert sorted(node.pod_names) == ["big0", "late0"]


def test_spot_preferred_over_on_demand_when_allowed():
    pool = h100_pool(requirements=[
        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["h100"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}])
    h = make_harness(karpenter(pool))
    h.add_pods(0, "p", 1, gpus=8)
    h.sim.run(300)
    assert h.nodes()[0].capacity_type == "spot"


def test_pool_without_capacity_type_requirement_is_on_demand_only():
    h = make_harness(karpenter(h100_pool()))
    h.add_pods(0, "p", 1, gpus=1)
    h.sim.run(300)
    node = h.nodes()[0]
    assert node.capacity_type == "on-demand" and node.instance_type.name == "p5.4xlarge"


def test_heavier_pool_is_tried_first():
    l4 = {"name": "a-l4", "weight": 50, "requirements": [
        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["l4"]}]}
    h = make_harness(karpenter(h100_pool(weight=10), l4))
    h.add_pods(0, "p", 1, gpus=1)
    h.sim.run(300)
    assert h.nodes()[0].pool == "a-l4"


def test_node_selector_and_taints_steer_pods():
    tainted = h100_pool(taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}])
    h = make_harness(karpenter(tainted))
    h.add_pods(0, "p", 1, gpus=1)  # no toleration: no pool can host it
    h.sim.run(300)
    assert h.all_nodes() == []
    assert h.provider.metrics.events["pods_unplaceable"] >= 1


def test_limits_cap_the_pool():
    h = make_harness(karpenter(h100_pool(limits={"nvidia.com/gpu": 8})))
    h.add_pods(0, "p", 2, gpus=8)
    h.sim.run(600)
    assert len(h.all_nodes()) == 1
    assert sum(p.node_name is None for p in h.cluster.pods.values()) == 1


def test_insufficient_capacity_blocks_offering_and_falls_through():
    outage = {"instance_type": "p5.48xlarge", "capacity_type": "on-demand", "end_s": 1e9}
    pool = h100_pool(requirements=[{"key": "karpenter.k8s.aws/instance-gpu-name",
                                    "operator": "In", "values": ["h100", "h200"]}])
    h = make_harness(karpenter(pool, capacity_outages=[outage]))
    h.add_pods(0, "p", 1, gpus=8)
    h.sim.run(150)  # before the block lapses (later, consolidation would try p5.48xlarge)
    assert [n.instance_type.name for n in h.nodes()] == ["p5en.48xlarge"]
    assert h.provider.metrics.failures["insufficient_capacity"] == 3  # one per zone
    blocked = h.provider.blocked_until_s
    assert blocked[("p5.48xlarge", "us-east-1a", "on-demand")] == pytest.approx(1.0 + 180)


def test_all_offerings_blocked_retries_after_the_ttl():
    outage = {"instance_type": "*", "start_s": 0, "end_s": 100}
    h = make_harness(karpenter(h100_pool(), capacity_outages=[outage]))
    h.add_pods(0, "p", 1, gpus=8)
    h.sim.run(1000)
    (node,) = h.nodes()
    # blocked at 1.0 for 180 s; at 181 the pods re-trigger a batch that closes 1 s later
    assert node.created_s == pytest.approx(182.0)


def _first_claim(latencies: dict, until_s: float):
    h = make_harness(karpenter(h100_pool(), node_latencies=latencies))
    h.add_pods(0, "p", 1, gpus=8)
    h.sim.run(until_s)
    return h, h.all_nodes()[0]


def test_launch_timeout_deletes_claim_bills_nothing_and_retries():
    h, first = _first_claim(fixed_latencies(400, 60, 90), 700)
    assert first.state is NodeState.GONE and first.deleted_s == pytest.approx(301.0)
    assert first.billed_s(700) == 0
    assert h.provider.metrics.failures["launch_timeout"] == 2  # the retry times out too
    assert len(h.all_nodes()) == 3


def test_registration_timeout_is_measured_from_creation():
    _, first = _first_claim(fixed_latencies(100, 850, 1), 950)
    assert first.deleted_s == pytest.approx(901.0)
    assert first.billed_s(950) == pytest.approx(900.0)


def test_nomination_to_a_ready_node_lapses_and_the_pod_is_planned_again():
    # If the scheduler never binds a pod where Karpenter nominated it, the nomination lapses
    # (2 x batch_max_s after the node is ready and the pod nominated) and the pod is planned
    # again, instead of blocking provisioning for it forever.
    h = make_harness(karpenter(h100_pool()), binder=False)
    _notify_at(h, [0.0], gpus=4)  # one p5.48xlarge, ready at 181 s, with 4 GPUs to spare
    late = Pod("late", gpus=4, created_s=300)
    h.at(300, lambda: (h.cluster.add_pod(late), h.provider.notify_unschedulable([late], 300)))
    h.sim.run(310)
    node = h.all_nodes()[0]
    assert h.provider.nomination_of["late"] == node.name
    assert h.provider.nominated_at_s["late"] == 301.0
    h.sim.run(325)
    assert h.provider.nominated_at_s["late"] == 301.0  # window runs to 321 s
    h.sim.run(335)
    assert h.provider.nominated_at_s["late"] == 331.0  # lapsed at the 330 s tick, re-batched
    assert len(h.all_nodes()) == 1  # it still fits there: no new node


def test_outage_with_nodes_available_lets_the_first_claims_of_a_batch_launch():
    """Two 8-GPU pods, one batch, one offering (zone us-east-1a) with one instance left: the
    first claim launches at 1 s, the second gets insufficient capacity and waits out the
    outage (all offerings blocked -> retry when the 180 s block lapses)."""
    pool = h100_pool(requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}])
    outage = {"instance_type": "p5.48xlarge", "zone": "us-east-1a", "end_s": 300,
              "nodes_available": 1}
    h = make_harness(karpenter(pool, capacity_outages=[outage]), binder=False)
    h.add_pods(0, "p", 2, gpus=8)
    h.at(0.5, lambda: h.provider.notify_unschedulable(list(h.cluster.pods.values()), 0.5))
    h.sim.run(1000)
    created = sorted(n.created_s for n in h.all_nodes())
    # blocked 1.5 -> 181.5, retry batch closes at 182.5: still inside the outage, blocked
    # again to 362.5; the batch at 363.5 is after the outage and launches
    assert created == [pytest.approx(1.5), pytest.approx(363.5)]
    assert h.provider.metrics.failures["insufficient_capacity"] == 2
