"""Spot interruptions: two-minute notice, cordon and drain, reclaim, replacement, cost."""

from __future__ import annotations

import pytest

from gpuscale.catalog import get_instance_type
from gpuscale.cluster.objects import NodeState
from gpuscale.provisioning.testing import (
    cluster_autoscaler_spec,
    h100_pool,
    karpenter,
    make_harness,
)

SPOT = [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]


def _spot_harness(**spot):
    h = make_harness(karpenter(h100_pool(requirements=SPOT), spot=spot))
    log = []
    h.cluster.on_pod_evicted.append(lambda pod, cause: log.append((h.sim.now_s, pod.name, cause)))
    h.add_pods(0, "p", 1, gpus=8)
    return h, log


def test_handled_notice_drains_at_once_and_a_replacement_follows():
    h, log = _spot_harness(interruptions={"p5.48xlarge": {"times_s": [1000.0]}})
    states = []
    h.at(1010, lambda: states.append(h.all_nodes()[0].state))
    h.sim.run(2000)
    first, second = h.all_nodes()
    assert log == [(1000.0, "p0", "spot_interruption")]
    assert states == [NodeState.DRAINING]  # cordoned during the drain
    assert first.deleted_s == 1030.0  # 30 s termination grace, within the 120 s notice
    assert second.created_s > 1000 and h.cluster.pods["p0"].node_name == second.name
    assert h.provider.summary()["events"]["spot_interruption_notices"] == 1


def test_unhandled_notice_loses_pods_at_reclaim():
    h, log = _spot_harness(interruptions={"*": {"times_s": [1000.0]}}, notice_handled=False)
    states = []
    h.at(1100, lambda: states.append(h.all_nodes()[0].state))
    h.sim.run(1500)
    assert states == [NodeState.READY]  # still serving during the notice
    assert log == [(1120.0, "p0", "spot_interruption")]
    assert h.all_nodes()[0].deleted_s == 1120.0


def test_rate_based_interruptions_are_seeded():
    def times(seed):
        h = make_harness(karpenter(h100_pool(requirements=SPOT),
                                   spot={"interruptions": {"*": {"rate_per_node_hour": 2.0}}}),
                         seed=seed)
        h.add_pods(0, "p", 1, gpus=8)
        h.sim.run(6 * 3600)
        return [n.deleted_s for n in h.all_nodes()]
    assert times(3) == times(3)
    assert times(3) != times(4)
    assert len(times(3)) > 3  # about 2 per node-hour over 6 h


def test_cost_by_capacity_type_uses_spot_price():
    h, _ = _spot_harness()
    h.sim.run(3601.0)
    summary = h.provider.summary()
    price = get_instance_type("p5.48xlarge").spot_usd_per_hour
    assert summary["cost_usd_by_capacity_type"]["spot"] == pytest.approx(price, rel=1e-6)
    assert summary["gpu_hours_by_capacity_type"] == {"spot": pytest.approx(8.0)}


def test_warm_spot_nodes_are_interrupted_like_launched_ones():
    """Nodes that exist at t=0 (Karpenter's adopted warm floor, a CA group's min_size) are spot
    instances too; they once never drew an interruption, which made a spot floor look safe."""
    rate = {"interruptions": {"*": {"rate_per_node_hour": 6.0}}}
    h = make_harness(karpenter(h100_pool(requirements=SPOT), spot=rate))
    warm = h.provider.adopt_ready_nodes(3, get_instance_type("p5.48xlarge"), "spot")
    h.add_pods(0, "p", 3, gpus=8)  # busy, so emptiness does not remove them first
    ca = make_harness(cluster_autoscaler_spec(spot=rate, node_groups=[
        {"name": "h100", "instance_type": "p5.48xlarge", "capacity_type": "spot",
         "min_size": 3, "max_size": 3}]))
    ca_warm = list(ca.cluster.nodes.values())
    for harness in (h, ca):
        harness.sim.run(3 * 3600)
        assert harness.provider.summary()["events"]["spot_interruption_notices"] >= 3
    # Every warm node is gone within 3 h at 6 per node-hour (each survives with p ~ 1e-8).
    assert all(n.deleted_s is not None for n in warm)
    assert all(n.deleted_s is not None for n in ca_warm)
    # On-demand warm nodes are never drawn.
    od = make_harness(karpenter(h100_pool(), spot=rate))
    od_warm = od.provider.adopt_ready_nodes(2, get_instance_type("p5.48xlarge"), "on-demand")
    od.add_pods(0, "p", 2, gpus=8)
    od.sim.run(3 * 3600)
    assert all(n.deleted_s is None for n in od_warm)
