"""PodDisruptionBudgets: allowed disruptions, and how Karpenter and Cluster Autoscaler honour
them in voluntary disruption."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpuscale.catalog import get_instance_type
from gpuscale.cluster.objects import Node, NodeState, Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.provisioning.disruption_budget import (
    PodDisruptionBudgetParams,
    allowed_disruptions,
)
from gpuscale.provisioning.testing import FIXED_LATENCIES, h100_pool, karpenter, make_harness

ONLY_P5_48 = [{"key": "node.kubernetes.io/instance-type", "operator": "In",
               "values": ["p5.48xlarge"]}]
SERVING = {"app": "vllm"}


def _cluster(bound: int, pending: int) -> ClusterState:
    cluster = ClusterState()
    node = Node("n", get_instance_type("p5.48xlarge"), "z", state=NodeState.READY)
    cluster.add_node(node)
    for i in range(bound + pending):
        pod = Pod(f"p{i}", gpus=1, labels=dict(SERVING))
        cluster.add_pod(pod)
        if i < bound:
            cluster.bind(pod, node, 0.0)
    cluster.add_pod(Pod("other", gpus=1, labels={"app": "other"}))
    return cluster


@pytest.mark.parametrize(("field", "value", "bound", "pending", "allowed"), [
    ("min_available", 2, 4, 0, 2),
    ("min_available", 4, 4, 0, 0),
    ("min_available", "50%", 3, 0, 1),  # ceil(1.5) = 2 must stay
    ("max_unavailable", 1, 4, 0, 1),
    ("max_unavailable", 1, 3, 1, 0),  # one already down
    ("max_unavailable", "25%", 5, 0, 2),  # ceil(1.25) = 2
    ("max_unavailable", 0, 4, 0, 0),
])
def test_allowed_disruptions_follow_the_disruption_controller(field, value, bound, pending,
                                                              allowed):
    pdb = PodDisruptionBudgetParams(name="b", match_labels=SERVING, **{field: value})
    assert allowed_disruptions(pdb, _cluster(bound, pending)) == allowed


@pytest.mark.parametrize(("spec", "message"), [
    ({}, "exactly one of min_available and max_unavailable"),
    ({"min_available": 1, "max_unavailable": 1}, "exactly one"),
    ({"max_unavailable": "half"}, "expected an integer or a percentage"),
    ({"min_available": -1}, "expected a count >= 0"),
])
def test_refused_pdb_shapes(spec, message):
    with pytest.raises(ValidationError, match=message):
        PodDisruptionBudgetParams(name="b", **spec)


def _record_evictions(h):
    log = []
    h.cluster.on_pod_evicted.append(lambda pod, cause: log.append((h.sim.now_s, pod.name, cause)))
    return log


def _karpenter_trap(pdbs, policy="WhenEmptyOrUnderutilized"):
    """Node 1 ends 7/8 full; node 2 hosts q1, a 1-GPU serving pod that fits on node 1."""
    pool = h100_pool(requirements=ONLY_P5_48,
                     disruption={"consolidationPolicy": policy, "consolidateAfter": "0s"})
    h = make_harness(karpenter(pool, pod_disruption_budgets=pdbs))
    h.add_pods(0, "p", 7)
    h.add_pods(300, "q0", 1, labels=dict(SERVING))
    h.add_pods(300, "q1", 1, labels=dict(SERVING))
    h.delete_pods(800, "p0")
    return h


@pytest.mark.parametrize("policy", ["WhenEmptyOrUnderutilized", "Balanced"])
def test_karpenter_consolidation_skips_a_node_a_pdb_protects(policy):
    free = _karpenter_trap([], policy)
    log = _record_evictions(free)
    free.sim.run(2000)
    assert [name for _, name, _ in log] == ["q10"]
    blocked = _karpenter_trap([{"name": "vllm", "match_labels": SERVING,
                                "max_unavailable": 0}], policy)
    log = _record_evictions(blocked)
    blocked.sim.run(4 * 3600)
    assert log == [] and len(blocked.nodes()) == 2


def test_karpenter_consolidation_proceeds_when_the_pdb_allows_one():
    h = _karpenter_trap([{"name": "vllm", "match_labels": SERVING, "min_available": 1}])
    log = _record_evictions(h)
    h.sim.run(2000)
    assert [name for _, name, _ in log] == ["q10"]


def test_karpenter_expiry_drain_waits_on_the_pdb_until_the_grace_period():
    pool = h100_pool(expire_after="1h", termination_grace_period="10m")
    h = make_harness(karpenter(pool, pod_disruption_budgets=[
        {"name": "vllm", "match_labels": SERVING, "min_available": 1}]))
    log = _record_evictions(h)
    h.add_pods(0, "s", 1, gpus=4, labels=dict(SERVING))
    h.sim.run(4300)
    # Expired at 3601 s; the only serving pod may not go, so the eviction waits for the
    # terminationGracePeriod (first tick after 3601 + 600).
    assert [(t, name) for t, name, _ in log] == [(4210.0, "s0")]


def _ca(pdbs):
    spec = {"kind": "cluster_autoscaler", "node_latencies": FIXED_LATENCIES,
            "node_groups": [{"name": "h100", "instance_type": "p5.48xlarge", "max_size": 5}],
            "scale_down_unneeded_time_s": 60, "scale_down_delay_after_add_s": 0,
            "pod_disruption_budgets": pdbs}
    h = make_harness(spec)
    h.add_pods(0, "a", 1, gpus=6)
    h.add_pods(0, "b", 1, gpus=8)

    def shrink():  # b's node keeps one 1-GPU serving pod, which fits in a's 2 free GPUs
        node = h.cluster.nodes[h.cluster.pods["b0"].node_name]
        h.cluster.delete_pod(h.cluster.pods["b0"])
        h.cluster.add_pod(Pod("x", gpus=1, labels=dict(SERVING)))
        h.cluster.bind(h.cluster.pods["x"], node, h.sim.now_s)
    h.at(300, shrink)
    return h


def test_cluster_autoscaler_scale_down_honours_pdbs():
    free = _ca([])
    log = _record_evictions(free)
    free.sim.run(3000)
    assert [name for _, name, _ in log][:1] == ["x"] and len(free.nodes()) == 1
    blocked = _ca([{"name": "vllm", "match_labels": SERVING, "max_unavailable": 0}])
    log = _record_evictions(blocked)
    blocked.sim.run(3000)
    assert log == [] and len(blocked.nodes()) == 2


def test_duplicate_pdb_names_are_refused():
    pdb = {"name": "vllm", "match_labels": SERVING, "max_unavailable": 1}
    with pytest.raises(ValidationError, match="duplicate PodDisruptionBudget names: vllm"):
        make_harness(karpenter(h100_pool(), pod_disruption_budgets=[pdb, pdb]))
