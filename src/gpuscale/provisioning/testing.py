"""A tiny first-fit binder standing in for layer 2 in layer-1 tests and examples.

Each pass binds pending pods (largest first) to ready nodes with room and reports the rest to
the node provider as unschedulable, as kube-scheduler would by setting
PodScheduled=False/Unschedulable. It is not the real scheduler (see `gpuscale.scheduling`).
`make_harness` wires a simulation, a cluster, one provider and this binder for tests and doc
examples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from gpuscale.cluster.objects import NodeState, Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, RandomStreams, Simulation
from gpuscale.provisioning.base import NodeProvider
from gpuscale.provisioning.fit import Bin, node_bin, pod_priority_order


class FirstFitBinder:
    def __init__(self, sim: Simulation, cluster: ClusterState, provider: NodeProvider,
                 period_s: float = 1.0) -> None:
        self.sim, self.cluster, self.provider = sim, cluster, provider
        sim.every(period_s, Priority.CONTROLLER - 1, self.run_once)

    def run_once(self, now_s: float) -> None:
        pending = pod_priority_order(self.cluster.pending_pods())
        if not pending:
            return
        nodes = sorted((n for n in self.cluster.nodes.values() if n.state is NodeState.READY),
                       key=lambda n: n.name)
        bins: dict[str, Bin] = {}  # built on first use: most nodes are full most of the time

        def fits(node, pod) -> bool:
            if pod.gpus > node.gpus_free:
                return False
            if node.name not in bins:
                bins[node.name] = node_bin(node, self.cluster)
            return bins[node.name].try_add(pod)

        unschedulable = []
        for pod in pending:
            node = next((n for n in nodes if fits(n, pod)), None)
            if node is None:
                unschedulable.append(pod)
            else:
                self.cluster.bind(pod, node, now_s)
        if unschedulable:
            self.provider.notify_unschedulable(unschedulable, now_s)

def fixed_latencies(launch_s: float, registration_s: float, initialization_s: float) -> dict:
    """`node_latencies` YAML with fixed phase durations."""
    return {name: {"dist": "fixed", "median_s": value} for name, value in
            (("launch", launch_s), ("registration", registration_s),
             ("initialization", initialization_s))}


# 30 s launch, 60 s registration, 90 s initialization: a node is ready 180 s after its claim.
FIXED_LATENCIES = fixed_latencies(30, 60, 90)
READY_AFTER_S = 180.0


@dataclass
class Harness:
    sim: Simulation
    cluster: ClusterState
    provider: Any

    def at(self, time_s: float, fn, *args) -> None:
        self.sim.schedule(time_s, Priority.ARRIVAL, fn, *args)

    def add_pods(self, time_s: float, prefix: str, count: int, gpus: int = 1, **kw) -> None:
        def add() -> None:
            for i in range(count):
                self.cluster.add_pod(Pod(f"{prefix}{i}", gpus=gpus, created_s=time_s, **kw))
        self.at(time_s, add)

    def delete_pods(self, time_s: float, *names: str) -> None:
        def delete() -> None:
            for name in names:
                self.cluster.delete_pod(self.cluster.pods[name])
        self.at(time_s, delete)

    def nodes(self):
        return sorted(self.cluster.nodes.values(), key=lambda n: n.name)

    def all_nodes(self):
        return self.provider.metrics.nodes


def make_harness(spec: dict, seed: int = 1, binder: bool = True) -> Harness:
    from gpuscale.provisioning import NodeProviderSpec, build_node_provider

    params = TypeAdapter(NodeProviderSpec).validate_python(spec)
    provider = build_node_provider(params)
    sim, cluster = Simulation(), ClusterState()
    provider.attach(sim, cluster, RandomStreams(seed))
    if binder:
        FirstFitBinder(sim, cluster, provider)
    return Harness(sim, cluster, provider)


def h100_pool(**overrides) -> dict:
    """A NodePool that launches H100 nodes only, on-demand."""
    pool = {"name": "gpu", "requirements": [
        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["h100"]}]}
    pool.update(overrides)
    return pool


def karpenter(*pools: dict, **overrides) -> dict:
    spec = {"kind": "karpenter", "node_pools": list(pools), "node_latencies": FIXED_LATENCIES}
    spec.update(overrides)
    return spec


def cluster_autoscaler_spec(**overrides) -> dict:
    """One on-demand H100 node group (p5.48xlarge, 0..20 nodes) with fixed latencies."""
    spec = {"kind": "cluster_autoscaler", "node_latencies": FIXED_LATENCIES, "node_groups": [
        {"name": "h100", "instance_type": "p5.48xlarge", "max_size": 20}]}
    spec.update(overrides)
    return spec
