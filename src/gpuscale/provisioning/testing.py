"""A tiny first-fit binder standing in for layer 2 in layer-1 tests and examples.

Each pass binds pending pods (largest first) to ready nodes with room and reports the rest to
the node provider as unschedulable, as kube-scheduler would by setting
PodScheduled=False/Unschedulable. It is not the real scheduler (see `gpuscale.scheduling`).
"""

from __future__ import annotations

from gpuscale.cluster.objects import NodeState
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, Simulation
from gpuscale.provisioning.base import NodeProvider
from gpuscale.provisioning.fit import node_bin, pod_priority_order


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
        bins = {n.name: node_bin(n, self.cluster) for n in nodes}
        unschedulable = []
        for pod in pending:
            node = next((n for n in nodes if bins[n.name].try_add(pod)), None)
            if node is None:
                unschedulable.append(pod)
            else:
                self.cluster.bind(pod, node, now_s)
        if unschedulable:
            self.provider.notify_unschedulable(unschedulable, now_s)
