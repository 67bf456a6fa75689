"""A tiny cluster + simulation for scheduling tests (nodes, gangs, reports)."""

from __future__ import annotations

from gpuscale.catalog import get_instance_type
from gpuscale.cluster.groups import PodGroupSpec
from gpuscale.cluster.objects import Node, Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import RandomStreams, Simulation


class Harness:
    def __init__(self) -> None:
        self.sim = Simulation()
        self.cluster = ClusterState()
        self.reports: list[tuple[float, list[str]]] = []

    def node(self, name: str, itype: str = "g6.24xlarge", busy: int = 0, **labels) -> Node:
        node = Node(name=name, instance_type=get_instance_type(itype), zone="z",
                    labels={"kubernetes.io/hostname": name, **labels})
        self.cluster.add_node(node)
        self.cluster.mark_node_ready(node, 0.0)
        if busy:
            pod = Pod(name=f"busy-{name}", gpus=busy, priority=1000, queue="system")
            self.cluster.add_pod(pod)
            self.cluster.bind(pod, node, 0.0)
        return node

    def gang(self, name: str, num_pods: int, gpus: int, *, at_s: float = 0.0, **spec) -> list[Pod]:
        group = PodGroupSpec(name=name, **{"min_member": num_pods, **spec})
        pods = [Pod(name=f"{name}-{i}", gpus=gpus, priority=group.priority, group=name,
                    queue=group.queue, group_spec=group, created_s=at_s)
                for i in range(num_pods)]
        for pod in pods:
            self.sim.schedule(at_s, 0, self._add, pod)
        return pods

    def _add(self, pod: Pod) -> None:
        pod.created_s = self.sim.now_s
        self.cluster.add_pod(pod)

    def attach(self, scheduler, seed: int = 0):
        scheduler.attach(self.sim, self.cluster, RandomStreams(seed), self._report)
        return scheduler

    def _report(self, pods, now_s):
        self.reports.append((now_s, sorted(p.name for p in pods)))

    def run(self, until_s: float) -> None:
        self.sim.run(until_s=until_s)
