"""Karpenter disruption: consolidation policies, consolidateAfter, budgets, do-not-disrupt,
expiration, replacement."""

from __future__ import annotations

import pytest

from gpuscale.provisioning.fit import DO_NOT_DISRUPT
from gpuscale.provisioning.testing import h100_pool, karpenter, make_harness

ONLY_P5_48 = [{"key": "node.kubernetes.io/instance-type", "operator": "In",
               "values": ["p5.48xlarge"]}]


def _record_evictions(h):
    log = []
    h.cluster.on_pod_evicted.append(lambda pod, cause: log.append((h.sim.now_s, pod.name, cause)))
    return log


def _trap(policy: str, after: str, q0_annotations=None, q1_annotations=None):
    """Node 1 ends 7/8 full (p1..p6, q0); node 2 hosts q1, a 1-GPU replica that would fit on
    node 1. (Node 1's seven pods would also fit on node 2, so protecting q1 alone would just
    move the eviction to node 1's seven pods.)"""
    pool = h100_pool(requirements=ONLY_P5_48,
                     disruption={"consolidationPolicy": policy, "consolidateAfter": after})
    h = make_harness(karpenter(pool))
    h.add_pods(0, "p", 7)
    h.add_pods(300, "q0", 1, annotations=dict(q0_annotations or {}))
    h.add_pods(300, "q1", 1, annotations=dict(q1_annotations or {}))
    h.delete_pods(800, "p0")
    return h


def test_underutilized_node_is_consolidated_when_its_replica_fits_elsewhere():
    h = _trap("WhenEmptyOrUnderutilized", "0s")
    log = _record_evictions(h)
    h.sim.run(2000)
    assert log == [(815.0, "q10", "consolidation")]  # decided at the 800 s tick, +15 s check
    assert h.provider.summary()["evictions_by_cause"] == {"consolidation": 1}
    (node,) = h.nodes()
    assert sorted(node.pod_names) == ["p1", "p2", "p3", "p4", "p5", "p6", "q00", "q10"]


def test_when_empty_with_long_consolidate_after_evicts_no_running_pod():
    h = _trap("WhenEmpty", "1h")
    log = _record_evictions(h)
    h.sim.run(4 * 3600)
    assert log == []
    assert len(h.nodes()) == 2


def test_pod_do_not_disrupt_true_blocks_consolidation():
    protect = {DO_NOT_DISRUPT: "true"}
    h = _trap("WhenEmptyOrUnderutilized", "0s", protect, protect)
    log = _record_evictions(h)
    h.sim.run(4 * 3600)
    assert log == [] and len(h.nodes()) == 2


def test_pod_do_not_disrupt_duration_protects_until_the_pod_has_run_that_long():
    h = _trap("WhenEmptyOrUnderutilized", "0s", {DO_NOT_DISRUPT: "true"},
              {DO_NOT_DISRUPT: "30m"})
    log = _record_evictions(h)
    h.sim.run(4 * 3600)
    bound_s = 481.0  # q1's node: claim at 301, ready 180 s later
    ((time_s, name, cause),) = log
    assert name == "q10" and cause == "consolidation"
    assert bound_s + 1800 <= time_s <= bound_s + 1800 + 10 + 15


def test_invalid_do_not_disrupt_value_is_ignored():
    h = _trap("WhenEmptyOrUnderutilized", "0s", {DO_NOT_DISRUPT: "true"},
              {DO_NOT_DISRUPT: "soon"})
    log = _record_evictions(h)
    h.sim.run(2000)
    assert [entry[1:] for entry in log] == [("q10", "consolidation")]


def test_node_do_not_disrupt_annotation_keeps_an_empty_node():
    h = make_harness(karpenter(h100_pool()))
    h.add_pods(0, "p", 1, gpus=8)
    h.delete_pods(300, "p0")
    h.at(200, lambda: h.nodes()[0].annotations.__setitem__(DO_NOT_DISRUPT, "true"))
    h.sim.run(3600)
    assert len(h.nodes()) == 1


def _empty_node_deleted_at(consolidate_after: str, actions) -> float:
    h = make_harness(karpenter(h100_pool(disruption={"consolidateAfter": consolidate_after})))
    h.add_pods(0, "p", 1, gpus=8)  # node ready and pod bound at 181 s
    h.delete_pods(400, "p0")
    actions(h)
    h.sim.run(5000)
    (node,) = h.all_nodes()
    return node.deleted_s


def test_consolidate_after_counts_from_the_last_pod_event():
    # Empty from 400 s: consolidatable at 700 s (a tick), deleted after the 15 s re-check.
    assert _empty_node_deleted_at("300s", lambda h: None) == 715.0


def test_consolidate_after_restarts_when_the_nodes_pods_change():
    def churn(h):
        h.add_pods(600, "x", 1, gpus=1)  # binds at 600 s
        h.delete_pods(650, "x0")  # leaves at 650 s: the quiet period starts again
    assert _empty_node_deleted_at("300s", churn) == 965.0


def test_consolidate_after_never_disables_emptiness():
    assert _empty_node_deleted_at("Never", lambda h: None) is None


def _empty_fleet(budgets, count=10):
    pool = h100_pool(requirements=ONLY_P5_48, disruption={"budgets": budgets})
    h = make_harness(karpenter(pool))
    h.add_pods(0, "p", count, gpus=8)
    h.delete_pods(300, *(f"p{i}" for i in range(count)))
    return h


@pytest.mark.parametrize(("nodes", "first_wave"), [("10%", 1), ("20%", 2), ("15%", 2), ("3", 3)])
def test_budget_limits_how_many_empty_nodes_go_at_once(nodes, first_wave):
    h = _empty_fleet([{"nodes": nodes}])
    h.sim.run(316)
    gone = [n for n in h.all_nodes() if n.deleted_s is not None]
    assert len(gone) == first_wave and {n.deleted_s for n in gone} == {315.0}


def test_default_budget_is_ten_percent():
    pool = h100_pool(requirements=ONLY_P5_48)
    h = make_harness(karpenter(pool))
    h.add_pods(0, "p", 10, gpus=8)
    h.delete_pods(300, *(f"p{i}" for i in range(10)))
    h.sim.run(316)
    assert sum(n.deleted_s is not None for n in h.all_nodes()) == 1


def test_scheduled_zero_budget_blocks_disruption_in_its_window():
    budgets = [{"nodes": "10"}, {"nodes": "0", "schedule": "@daily", "duration": "1h"}]
    h = _empty_fleet(budgets, count=1)
    h.sim.run(5000)
    (node,) = h.all_nodes()
    assert node.deleted_s == 3615.0  # window [00:00, 01:00) from start_utc midnight


def test_budget_reasons_only_limit_their_reason():
    budgets = [{"nodes": "0", "reasons": ["Underutilized"]}]
    h = _empty_fleet(budgets, count=1)
    h.sim.run(400)
    assert h.all_nodes()[0].deleted_s == 315.0  # Empty is not limited


def test_replace_with_one_cheaper_node_after_it_is_ready():
    pool = h100_pool()  # p5.4xlarge (1 GPU) and p5.48xlarge (8 GPUs) both allowed
    h = make_harness(karpenter(pool))
    log = _record_evictions(h)
    h.add_pods(0, "p", 4, gpus=2)  # one p5.48xlarge
    h.delete_pods(300, "p0", "p1", "p2")
    h.sim.run(1000)
    # p3 needs 2 GPUs: no single cheaper H100 type fits it (p5.4xlarge has 1 GPU), and
    # 1 -> many replacement is never done, so nothing happens.
    assert log == [] and [n.instance_type.name for n in h.nodes()] == ["p5.48xlarge"]

    h = make_harness(karpenter(pool))
    log = _record_evictions(h)
    h.add_pods(0, "p", 8, gpus=1)
    h.delete_pods(300, *(f"p{i}" for i in range(1, 8)))
    h.sim.run(1000)
    (node,) = h.nodes()
    assert node.instance_type.name == "p5.4xlarge" and node.pod_names == ["p0"]
    # command at 300, executed at 315: replacement launched then, ready 180 s later,
    # and only then is the old node drained.
    assert log == [(495.0, "p0", "consolidation")]


def test_spot_to_spot_replacement_needs_the_feature_gate():
    reqs = [{"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["h100"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]
    for gate, expected in ((False, "p5.48xlarge"), (True, "p5.4xlarge")):
        h = make_harness(karpenter(h100_pool(requirements=reqs), spot_to_spot_consolidation=gate))
        h.add_pods(0, "p", 8, gpus=1)
        h.delete_pods(300, *(f"p{i}" for i in range(1, 8)))
        h.sim.run(1000)
        assert [n.instance_type.name for n in h.nodes()] == [expected]


def test_expiration_is_forceful_and_waits_for_protected_pods_up_to_grace_period():
    pool = h100_pool(expire_after="1h", termination_grace_period="10m")
    h = make_harness(karpenter(pool))
    log = _record_evictions(h)
    h.add_pods(0, "free", 1, gpus=4)
    h.add_pods(0, "kept", 1, gpus=4, annotations={DO_NOT_DISRUPT: "true"})
    h.sim.run(4300)
    first = h.all_nodes()[0]
    assert (3601.0, "free0", "expiration") in log  # created at 1 s, expires at 3601 s
    kept = [entry for entry in log if entry[1] == "kept0"]
    assert kept == [(4210.0, "kept0", "expiration")]  # first tick after 3601 + 600
    assert first.deleted_s == 4210.0


def test_a_pod_deletion_restarts_consolidate_after_when_it_happens():
    # ClusterState announces the deletion; the controller no longer finds it by comparing
    # pod sets at its next 10 s tick, so consolidateAfter counts from the deletion itself.
    h = _trap("WhenEmptyOrUnderutilized", "1h")
    h.delete_pods(805, "p1")
    h.sim.run(806)
    (node,) = [n for n in h.nodes() if "p2" in n.pod_names]
    assert h.provider.disruption.last_pod_event_s[node.name] == 805.0


def test_evaluating_consolidation_does_not_shift_later_launch_choices():
    # The replacement's price check used to shuffle tied offerings with the launch stream, so
    # every evaluation moved the zone later launches picked (gpu-00002 went from us-east-1a to
    # us-east-1b after five evaluations). It draws nothing now.
    from gpuscale.catalog import get_instance_type

    p5 = [{"key": "node.kubernetes.io/instance-type", "operator": "In",
           "values": ["p5.48xlarge", "p5.4xlarge"]}]

    def launched(evaluations: int):
        pool = h100_pool(requirements=p5, disruption={"consolidationPolicy": "WhenEmpty"})
        h = make_harness(karpenter(pool), seed=3)
        (node,) = h.provider.adopt_ready_nodes(1, get_instance_type("p5.48xlarge"))
        h.add_pods(1.0, "small", 1, gpus=1)
        h.sim.run(5.0)
        for _ in range(evaluations):  # 1 GPU on an 8-GPU node: a p5.4xlarge would replace it
            command = h.provider.disruption.consolidation.compute([node], 5.0)
            assert command is not None and command.replacement is not None
        h.add_pods(6.0, "big", 4, gpus=8)
        h.sim.run(600.0)
        return [(n.name, n.zone) for n in h.provider.metrics.nodes]

    assert len(launched(0)) == 5 and launched(0) == launched(5)
