"""Cluster Autoscaler: expanders, scale-up simulation, GPU readiness, scale-down timers."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscale.cluster.objects import Pod
from gpuscale.provisioning.cluster_autoscaler.expanders import Option, choose, waste_score
from gpuscale.provisioning.cluster_autoscaler.params import NodeGroupParams
from gpuscale.provisioning.fit import node_utilization_frac
from gpuscale.provisioning.testing import FIXED_LATENCIES, fixed_latencies, make_harness


def _group(name, itype="p5.48xlarge", **kw):
    return NodeGroupParams(name=name, instance_type=itype, max_size=10, **kw)


def _option(name, itype, nodes, pods):
    return Option(_group(name, itype), nodes, pods)


def _pods(n, gpus=1, cpu_milli=0, memory_mib=0):
    return [Pod(f"p{i}", gpus=gpus, cpu_milli=cpu_milli, memory_mib=memory_mib) for i in range(n)]


def test_least_waste_scores_idle_cpu_and_memory_only():
    # g6.2xlarge: 8 vCPU / 32 GiB; g6e.2xlarge: 8 vCPU / 64 GiB. Same CPU, less idle memory wins.
    pods = _pods(1, cpu_milli=6000, memory_mib=24 * 1024)
    small = _option("l4", "g6.2xlarge", 1, pods)
    big = _option("l40s", "g6e.2xlarge", 1, pods)
    assert waste_score(small) == pytest.approx(0.25 + 0.25)
    assert waste_score(big) == pytest.approx(0.25 + 0.625)
    assert choose([big, small], ["least-waste"], {}, np.random.default_rng(0)) is small


def test_price_expander_prefers_cheapest_per_pod():
    pods = _pods(1)
    cheap = _option("l4", "g6.2xlarge", 1, pods)
    dear = _option("h100", "p5.4xlarge", 1, pods)
    assert choose([dear, cheap], ["price"], {}, np.random.default_rng(0)) is cheap


def test_priority_expander_highest_match_wins_and_unmatched_never_scale():
    a, b = _option("spot-h100", "p5.48xlarge", 1, _pods(1)), _option("od-h100", "p5.48xlarge",
                                                                    1, _pods(1))
    priorities = {10: ["^od-.*"], 50: ["^spot-.*"]}
    assert choose([b, a], ["priority"], priorities, np.random.default_rng(0)) is a
    assert choose([b], ["priority"], {50: ["^spot-.*"]}, np.random.default_rng(0)) is None


def test_chain_breaks_ties_and_random_covers_all_options():
    pods = _pods(1)
    x, y = _option("x", "p5.48xlarge", 1, pods), _option("y", "p5.48xlarge", 1, pods)
    picks = {choose([x, y], ["least-waste"], {}, np.random.default_rng(s)).group.name
             for s in range(20)}
    assert picks == {"x", "y"}  # equal waste: ties broken at random
    z = _option("z", "p5.48xlarge", 2, _pods(2))
    assert choose([x, z], ["least-nodes", "random"], {}, np.random.default_rng(0)) is x
    assert choose([x, z], ["most-pods"], {}, np.random.default_rng(0)) is z


def _ca(groups, **kw):
    spec = {"kind": "cluster_autoscaler", "node_groups": groups,
            "node_latencies": FIXED_LATENCIES}
    spec.update(kw)
    return make_harness(spec)


def test_scale_up_estimates_node_count_by_bin_packing():
    h = _ca([{"name": "h100", "instance_type": "p5.48xlarge", "max_size": 10}])
    h.add_pods(0, "p", 20, gpus=1)  # 20 GPUs -> 3 nodes of 8
    h.sim.run(400)
    assert len(h.all_nodes()) == 3
    assert all(p.node_name for p in h.cluster.pods.values())
    assert h.provider.summary()["events"]["scale_ups"] == 1


def test_max_size_and_expendable_pods():
    h = _ca([{"name": "h100", "instance_type": "p5.48xlarge", "max_size": 1}])
    h.add_pods(0, "p", 2, gpus=8)
    h.add_pods(0, "cheap", 1, gpus=8, priority=-20)  # below the -10 cutoff
    h.sim.run(400)
    assert len(h.all_nodes()) == 1


@pytest.mark.parametrize(("gpu_label", "expected_nodes"), [(True, 1), (False, 2)])
def test_registered_gpu_node_counts_as_upcoming_only_with_the_gpu_label(gpu_label,
                                                                       expected_nodes):
    # Registered at 90 s, GPUs allocatable at 180 s. Without the GPU label CA sees a ready node
    # that cannot host the pod during 90-180 s and scales up again (reference 2.4).
    h = _ca([{"name": "h100", "instance_type": "p5.48xlarge", "max_size": 5,
              "gpu_label": gpu_label}])
    h.add_pods(0, "p", 1, gpus=8)
    h.sim.run(170)
    assert len(h.all_nodes()) == expected_nodes


def _scale_down_run(delete_at_s, **kw):
    h = _ca([{"name": "h100", "instance_type": "p5.48xlarge", "max_size": 5}], **kw)
    h.add_pods(0, "p", 1, gpus=8)  # scale-up at t=0, node ready at 180 s
    h.delete_pods(delete_at_s, "p0")
    h.sim.run(5000)
    (node,) = h.all_nodes()
    return node.deleted_s


def test_scale_down_after_unneeded_time():
    # Empty from 1000 s (seen at the 1000 s scan); unneeded 10 min -> removed at 1600 s.
    assert _scale_down_run(1000) == 1600.0


def test_scale_down_waits_for_delay_after_add():
    # Unneeded 60 s would allow 1260 s, but the scale-up at 0 s blocks scale-down until 1800 s.
    assert _scale_down_run(1200, scale_down_unneeded_time_s=60,
                           scale_down_delay_after_add_s=1800) == 1800.0
    assert _scale_down_run(1200, scale_down_unneeded_time_s=60,
                           scale_down_delay_after_add_s=0) == 1260.0


def test_gpu_node_utilization_counts_gpus_only():
    h = _ca([{"name": "h100", "instance_type": "p5.48xlarge", "max_size": 2}])
    h.add_pods(0, "p", 1, gpus=1, cpu_milli=180_000, memory_mib=1_900_000)
    h.sim.run(300)
    (node,) = h.nodes()
    assert node_utilization_frac(node, h.cluster) == pytest.approx(1 / 8)


def test_one_drain_at_a_time_and_min_size_kept():
    h = _ca([{"name": "h100", "instance_type": "p5.48xlarge", "min_size": 1, "max_size": 5}],
            scale_down_unneeded_time_s=60, scale_down_delay_after_add_s=0)
    log = []
    h.cluster.on_pod_evicted.append(lambda pod, cause: log.append((h.sim.now_s, pod.name, cause)))
    h.add_pods(0, "p", 3, gpus=8)  # min-size node + 2 new nodes
    h.delete_pods(400, "p0", "p1", "p2")
    h.add_pods(401, "a", 1, gpus=2)
    h.add_pods(401, "b", 1, gpus=2)
    h.add_pods(401, "c", 1, gpus=2)
    h.sim.run(3000)
    # The three 2-GPU pods land on the min-size node (first-fit binder); the two empty nodes
    # are removed without any eviction and the min-size node stays.
    (kept,) = h.nodes()
    assert log == [] and kept is h.all_nodes()[0] and len(kept.pod_names) == 3
    assert sum(n.deleted_s is not None for n in h.all_nodes()) == 2


def test_busy_nodes_are_drained_one_at_a_time():
    h = _ca([{"name": "h100", "instance_type": "p5.48xlarge", "max_size": 5}],
            scale_down_unneeded_time_s=60, scale_down_delay_after_add_s=0)
    log = []
    h.cluster.on_pod_evicted.append(lambda pod, cause: log.append((h.sim.now_s, pod.name, cause)))
    h.add_pods(0, "a", 1, gpus=6)
    h.add_pods(0, "b", 1, gpus=7)
    h.add_pods(0, "c", 1, gpus=7)

    def shrink():  # b's and c's nodes keep one 1-GPU pod each; both fit in a's 2 free GPUs
        for old, new in (("b0", "x"), ("c0", "y")):
            node = h.cluster.nodes[h.cluster.pods[old].node_name]
            h.cluster.delete_pod(h.cluster.pods[old])
            h.cluster.add_pod(Pod(new, gpus=1))
            h.cluster.bind(h.cluster.pods[new], node, h.sim.now_s)
    h.at(300, shrink)
    h.sim.run(3000)
    # Both unneeded from the 300 s scan, ripe at 360 s; the second drain starts only when the
    # first one's 30 s drain has finished. (The first-fit binder re-places x on y's node, first
    # by name, so x is evicted twice: CA's simulation does not bind pods.)
    assert sorted({t for t, _, _ in log}) == [360.0, 390.0]
    assert (360.0, "x", "scale_down") in log and (390.0, "y", "scale_down") in log
    (kept,) = h.nodes()
    assert sorted(kept.pod_names) == ["a0", "x", "y"]


def test_provision_timeout_removes_node_and_backs_off_the_group():
    slow = fixed_latencies(30, 2000, 90)
    h = _ca([{"name": "h100", "instance_type": "p5.48xlarge", "max_size": 5}],
            node_latencies=slow)
    h.add_pods(0, "p", 1, gpus=8)
    h.sim.run(1190)
    first, *rest = h.all_nodes()
    assert first.deleted_s == 900.0
    assert h.provider.summary()["failures_by_cause"] == {"registration_timeout": 1}
    assert rest == []  # backed off for 5 min after the failure at 900 s
    h.sim.run(1210)
    assert len(h.all_nodes()) == 2
