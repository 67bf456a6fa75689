"""Replicas spanning nodes (issue 28): simulated as LeaderWorkerSet groups placed as gangs, not
refused; every pod of the group counts for billing and GPU-hours; a lost pod restarts the
group."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscale.catalog import get_instance_type
from gpuscale.cluster.groups import LWS_SIZE_ANNOTATION, PodGroupSpec, TopologyConstraint
from gpuscale.cluster.objects import Node, NodeState, Pod
from gpuscale.core import Priority
from gpuscale.errors import UserInputError
from gpuscale.provisioning.fit import ZONE_LABEL
from gpuscale.scenario import scenario_from_dict
from gpuscale.scheduling.first_fit import place_gang
from gpuscale.sim import simulate_scenario
from gpuscale.sim.replica_setup import replica_hardware
from gpuscale.sim.run import _Run, scenario_requests


def _deepseek_on_h100(**cluster) -> dict:
    return {
        "name": "ds-two-nodes", "seed": 3, "duration_s": 60.0, "drain_s": 240.0,
        "model": {"name": "DeepSeek-V3", "precision": "fp8", "tp": 16, "ep": 16,
                  "dp_attention": True},
        "engine": {"kind": "sglang"},
        "cluster": {"instance_type": "p5.48xlarge", "ready_nodes": 2, "max_nodes": 4,
                    **cluster},
        "workload": {"kind": "poisson", "rate_per_s": 2.0, "duration_s": 60.0,
                     "prompt_tokens": {"kind": "fixed", "value": 1000},
                     "output_tokens": {"kind": "fixed", "value": 100}},
        "strategies": [{"name": "fixed", "autoscaler": {"kind": "fixed", "replicas": 1}}],
    }


def test_deepseek_v3_on_two_h100_nodes_is_simulated_not_refused():
    """DeepSeek-V3 FP8 (~625 GiB of weights) does not fit one 8 x 80 GiB node: one replica is
    two p5.48xlarge nodes, a LeaderWorkerSet group of two 8-GPU pods."""
    scenario = scenario_from_dict(_deepseek_on_h100())
    hw = replica_hardware(scenario)
    assert (hw.tp, hw.layout.nodes, hw.layout.ep, hw.layout.attention_dp) == (16, 2, 16, 16)
    result, _ = simulate_scenario(scenario, Path("."))
    run = result.runs[0]
    assert run.summary.requests.completed == run.summary.requests.total > 0
    # Both nodes' 16 GPUs bill for the whole run (they are the warm floor): the traffic's
    # 60 s window as gpu_hours, the 240 s drain apart (issue 27's window accounting).
    assert run.summary.gpu_hours == pytest.approx(16 * 60.0 / 3600, abs=1e-6)  # 6 decimals
    assert run.summary.drain_gpu_hours == pytest.approx(16 * 240.0 / 3600, abs=1e-6)


def _run(scenario_dict: dict) -> _Run:
    scenario = scenario_from_dict(scenario_dict)
    return _Run(scenario, scenario.strategies[0], scenario_requests(scenario, Path(".")), None)


def test_a_group_binds_all_or_nothing_once_every_node_is_ready():
    """One warm node, the second launched on demand: no pod of the group binds before both
    nodes are ready (first fit holds the gang), then both bind at once."""
    run = _run(_deepseek_on_h100(ready_nodes=1,
                                 node_launch={"kind": "fixed", "value_s": 120.0}))
    run.run()
    fleet = run.fleets["serve"]
    bound = []
    for slot in fleet.slots.values():
        bound = [pod.bound_s for pod in (slot.pod, *slot.workers)]
    assert len(bound) == 2 and bound[0] == bound[1] == pytest.approx(120.0)
    assert len({pod.node_name for pod in run.cluster.pods.values()}) == 2


def test_a_lost_pod_restarts_the_whole_group():
    """LeaderWorkerSet's default restart policy: the worker's node is lost, so the leader
    leaves its node too and the group is placed and started again."""
    run = _run(_deepseek_on_h100(ready_nodes=3))
    fleet = run.fleets["serve"]

    def lose_worker() -> None:
        (slot,) = fleet.slots.values()
        run.cluster.evict(slot.workers[0], "spot")

    run.sim.schedule(30.0, Priority.LIFECYCLE, lose_worker)
    result = run.run()
    (slot,) = fleet.slots.values()
    assert run.cluster.evictions_by_cause["spot"] == 1
    assert run.cluster.evictions_by_cause["lws-group-restart"] == 1
    assert slot.all_bound() and slot.pod.bound_s == slot.workers[0].bound_s >= 30.0
    assert ("eviction" in [kind for _t, kind, _d in fleet.markers])
    assert result.summary.requests.total > 0


def _node(name: str, zone: str, gpus_free: int = 8) -> Node:
    node = Node(name=name, instance_type=get_instance_type("p5.48xlarge"), zone=zone,
                labels={ZONE_LABEL: zone}, state=NodeState.READY)
    node.gpus_allocated = 8 - gpus_free
    return node


def _gang(size: int) -> list[Pod]:
    spec = PodGroupSpec(name="g", min_member=size,
                        topology=TopologyConstraint(required_level=ZONE_LABEL))
    return [Pod(name=f"g-{i}", gpus=8, group_spec=spec,
                annotations={LWS_SIZE_ANNOTATION: str(size)}) for i in range(size)]


def test_a_gang_stays_inside_one_zone():
    nodes = [_node("a1", "us-east-1a"), _node("b1", "us-east-1b"), _node("b2", "us-east-1b")]
    placement = place_gang(_gang(2), nodes)
    assert placement is not None and {node.name for _p, node in placement} == {"b1", "b2"}
    assert place_gang(_gang(2), nodes[:2]) is None  # one free node per zone: nothing binds


def test_a_replica_must_fill_whole_nodes():
    with pytest.raises(UserInputError, match="whole nodes"):
        replica_hardware(scenario_from_dict({**_deepseek_on_h100(),
                                             "model": {"name": "DeepSeek-V3", "precision": "fp8",
                                                       "tp": 12, "ep": 4,
                                                       "dp_attention": True}}))


def test_resolved_states_the_budget_one_attention_rank_was_configured_with():
    """With DP attention the engine holds each rank's budget (16 ranks here); `resolved`
    names the configured one, as it does per pipeline micro-batch."""
    from gpuscale.importer.resolved import resolved_for

    data = _deepseek_on_h100()
    data["engine"] = {"kind": "sglang", "max_num_batched_tokens": 2048}
    scenario = scenario_from_dict(data)
    resolved = resolved_for(scenario, scenario.strategies[0])
    assert resolved["engine"]["max_num_batched_tokens"] == 2048
    assert (resolved["model"]["attention_dp"], resolved["model"]["nodes_per_replica"]) == (16, 2)


def test_every_gpu_of_the_group_is_exported_as_dcgm_reports_it():
    """DCGM's exporter runs on every node: the worker pod's 8 GPUs report as the leader's do
    (the group runs each step together), so a GPU count or sum over DCGM series sees 16."""
    from gpuscale.promql import labels as lbl
    from gpuscale.sim.run import run_strategy

    scenario = scenario_from_dict(_deepseek_on_h100())
    run = run_strategy(scenario, scenario.strategies[0], scenario_requests(scenario, Path(".")),
                       export_series=True)
    for family in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"):
        labels = run.prometheus.store.families[family].labels
        gpus = {(lbl.get(ls, "Hostname"), lbl.get(ls, "gpu")) for ls in labels}
        pods = {lbl.get(ls, "pod") for ls in labels}
        assert len(gpus) == 16 and len(pods) == 2
    phases = run.prometheus.store.families["kube_pod_status_phase"].labels
    assert len({lbl.get(ls, "pod") for ls in phases}) == 2


def test_a_warm_floor_of_two_node_replicas_under_karpenter_runs_every_replica():
    """The t=0 nodes Karpenter adopts take the zones in turn, a group's nodes together: two
    2-node replicas on four warm nodes both run. Spread node by node (a, b, c, a), the second
    group found one free node in each of two zones, could never be placed, and the NodePool's
    GPU limit kept Karpenter from launching more: a plan's replay ran on half its fleet."""
    pool = {"name": "gpu", "limits": {"nvidia.com/gpu": 4},
            "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                              "values": ["g6e.2xlarge"]}]}
    data = {
        "name": "pp2-warm", "seed": 0, "duration_s": 120.0, "drain_s": 300.0,
        "model": {"name": "Llama-3.1-70B", "precision": "fp8", "tp": 1, "pp": 2},
        "cluster": {"instance_type": "g6e.2xlarge", "ready_nodes": 4, "max_nodes": 4},
        "initial_replicas": 2,
        "workload": {"kind": "poisson", "rate_per_s": 1.0, "duration_s": 120.0,
                     "prompt_tokens": {"kind": "fixed", "value": 500},
                     "output_tokens": {"kind": "fixed", "value": 50}},
        "strategies": [{"name": "fixed", "autoscaler": {"kind": "fixed", "replicas": 2},
                        "nodes": {"kind": "karpenter", "node_pools": [pool]}}],
    }
    run = _run(data)
    run.run()
    fleet = run.fleets["serve"]
    assert len(fleet.slots) == 2 and all(slot.all_bound() for slot in fleet.slots.values())
    zones = {pod.name: run.cluster.nodes[pod.node_name].zone
             for pod in run.cluster.pods.values()}
    assert len(zones) == 4 and len(set(zones.values())) == 2  # each group in its own zone
    # a NodePool of one zone (a plan's, for groups spanning nodes) holds its warm floor there
    pool["requirements"].append({"key": "topology.kubernetes.io/zone", "operator": "In",
                                 "values": ["us-east-1b"]})
    run = _run(data)
    run.run()
    assert {node.zone for node in run.cluster.nodes.values()} == {"us-east-1b"}
