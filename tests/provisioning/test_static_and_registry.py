"""The static provider and the node-provider registry."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from gpuscale.cluster.objects import NodeState
from gpuscale.errors import UserInputError
from gpuscale.provisioning import NODE_PROVIDERS, NodeProviderSpec, build_node_provider
from gpuscale.provisioning.cluster_autoscaler import ClusterAutoscalerProvider
from gpuscale.provisioning.karpenter import KarpenterProvider
from gpuscale.provisioning.static import StaticProvider
from gpuscale.provisioning.testing import make_harness


def test_static_nodes_ready_now_and_later_and_never_scale():
    spec = {"kind": "static", "nodes": [
        {"instance_type": "p5.48xlarge", "count": 2},
        {"instance_type": "g6.2xlarge", "count": 1, "ready_after_s": 600, "pool": "late",
         "taints": [{"key": "nvidia.com/gpu"}]}]}
    h = make_harness(spec)
    h.add_pods(0, "p", 3, gpus=8)
    states = []
    h.at(599, lambda: states.append(sorted(n.state.value for n in h.nodes())))
    h.sim.run(1000)
    assert states == [["ready", "ready", "registered"]]  # joined, GPUs not yet advertised
    assert all(n.state is NodeState.READY for n in h.nodes())
    assert len(h.all_nodes()) == 3
    assert sum(p.node_name is None for p in h.cluster.pods.values()) == 1
    assert h.nodes()[0].taints[0].key == "nvidia.com/gpu"  # "late-1-0" sorts first


def test_registry_builds_each_kind():
    adapter = TypeAdapter(NodeProviderSpec)
    pool = {"name": "gpu"}
    group = {"name": "g", "instance_type": "p5.48xlarge", "max_size": 2}
    assert set(NODE_PROVIDERS) == {"static", "karpenter", "cluster_autoscaler"}
    assert isinstance(build_node_provider(adapter.validate_python({"kind": "static"})),
                      StaticProvider)
    assert isinstance(build_node_provider(adapter.validate_python(
        {"kind": "karpenter", "node_pools": [pool]})), KarpenterProvider)
    assert isinstance(build_node_provider(adapter.validate_python(
        {"kind": "cluster_autoscaler", "node_groups": [group]})), ClusterAutoscalerProvider)


def test_unknown_kind_is_a_validation_error_naming_the_known_ones():
    with pytest.raises(ValidationError) as info:
        TypeAdapter(NodeProviderSpec).validate_python({"kind": "karpentr"})
    assert "karpenter" in str(info.value)

    class Fake:
        kind = "karpentr"
    with pytest.raises(UserInputError, match="did you mean 'karpenter'"):
        build_node_provider(Fake())


def test_nodepool_accepts_crd_camel_case_and_rejects_unknown_fields():
    adapter = TypeAdapter(NodeProviderSpec)
    params = adapter.validate_python({"kind": "karpenter", "node_pools": [{
        "name": "gpu", "expireAfter": "Never",
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m"}}]})
    pool = params.node_pools[0]
    assert pool.expire_after_s == float("inf")
    assert pool.disruption.consolidate_after_s == 300
    with pytest.raises(ValidationError):
        adapter.validate_python({"kind": "karpenter", "node_pools": [{"name": "a", "x": 1}]})
    with pytest.raises(ValidationError):
        adapter.validate_python({"kind": "karpenter", "node_pools": [
            {"name": "a", "disruption": {"consolidateAfter": "5 minutes"}}]})


def test_pods_deleted_while_pending_are_forgotten():
    from gpuscale.provisioning.testing import h100_pool, karpenter

    h = make_harness(karpenter(h100_pool(limits={"nvidia.com/gpu": 8})))
    h.add_pods(0, "p", 2, gpus=8)  # the second never fits under the limit
    h.sim.run(300)
    assert set(h.provider.metrics.unschedulable_since_s) == {"p1"}
    h.delete_pods(300, "p1")
    h.sim.run(320)
    assert h.provider.metrics.unschedulable_since_s == {}


def test_a_nodepool_whose_requirements_match_no_instance_type_is_refused():
    import pytest
    from pydantic import TypeAdapter, ValidationError

    from gpuscale.provisioning import NodeProviderSpec

    spec = {"kind": "karpenter", "node_pools": [{"name": "gpu", "requirements": [
        {"key": "node.kubernetes.io/instance-type", "operator": "In",
         "values": ["g6e.99xlarge"]}]}]}
    with pytest.raises(ValidationError, match="NodePool gpu: requirements match no instance"):
        TypeAdapter(NodeProviderSpec).validate_python(spec)
