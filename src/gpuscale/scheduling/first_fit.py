"""`first-fit`: the default pod scheduler of a `simulate` scenario without `scheduler:`.

Binds pending pods, oldest first, to the first ready node (by name) with enough free GPUs;
what does not fit is reported unschedulable. A LeaderWorkerSet group spanning nodes (its pods
carry LWS's size annotation and share a PodGroup, sim/replica_pods.py) binds all or nothing,
as LWS's gang-scheduling integration places it, inside one
domain of its required topology label (nodes tried domain by domain, in label order); a gang
that does not fit is reported whole, as KAI reports it. One cycle per instant: every change of
one instant (pod pending, node ready, pod evicted or deleted) is batched into one cycle. It
keeps no metrics of its own, so a run with it has no `scheduling` summary. kube-scheduler and
KAI plug into the same `PodScheduler` seam.
"""

from __future__ import annotations

from gpuscale.cluster.groups import LWS_SIZE_ANNOTATION
from gpuscale.cluster.objects import Node, Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, RandomStreams, Simulation
from gpuscale.scheduling.base import UnschedulableCallback

KIND = "first-fit"


class FirstFitScheduler:
    kind = KIND

    def __init__(self) -> None:
        self._pending_cycle = False

    def attach(self, sim: Simulation, cluster: ClusterState, streams: RandomStreams,
               on_unschedulable: UnschedulableCallback) -> None:
        self.sim = sim
        self.cluster = cluster
        self.on_unschedulable = on_unschedulable
        cluster.on_pod_pending.append(lambda pod: self.request_cycle())
        cluster.on_node_ready.append(lambda node: self.request_cycle())
        cluster.on_pod_evicted.append(lambda pod, cause: self.request_cycle())
        cluster.on_pod_deleted.append(lambda pod: self.request_cycle())

    def kick(self, now_s: float) -> None:
        self.request_cycle()

    def summary(self) -> dict | None:
        return None

    def request_cycle(self) -> None:
        """Batch all changes of one instant into one scheduling cycle."""
        if not self._pending_cycle:
            self._pending_cycle = True
            self.sim.schedule(self.sim.now_s, Priority.LIFECYCLE + 1, self.cycle)

    def cycle(self) -> None:
        self._pending_cycle = False
        now_s = self.sim.now_s
        pending = sorted(self.cluster.pending_pods(), key=lambda p: (p.created_s, p.name))
        if not pending:
            return
        nodes = sorted(self.cluster.ready_nodes(), key=lambda n: n.name)
        unschedulable: list[Pod] = []
        gangs: dict[str, list[Pod]] = {}
        for pod in pending:
            spec = pod.group_spec
            if spec is not None and LWS_SIZE_ANNOTATION in pod.annotations:
                gangs.setdefault(spec.name, []).append(pod)
                continue
            node = next((n for n in nodes if n.gpus_free >= pod.gpus), None)
            if node is None:
                unschedulable.append(pod)
            else:
                self.cluster.bind(pod, node, now_s)
        for gang in gangs.values():
            placement = place_gang(gang, nodes)
            if placement is None:
                unschedulable.extend(gang)
            else:
                for pod, node in placement:
                    self.cluster.bind(pod, node, now_s)
        if unschedulable:
            self.on_unschedulable(unschedulable, now_s)


def place_gang(gang: list[Pod], nodes: list[Node]) -> list[tuple[Pod, Node]] | None:
    """First fit of every pod of a gang inside one domain of its required topology label
    (the whole cluster without one), or None when no domain holds them all."""
    spec = gang[0].group_spec
    level = spec.topology.required_level if spec is not None else ""
    domains: dict[str, list[Node]] = {}
    for node in nodes:
        value = node.labels.get(level, "") if level else "*"
        if value:  # a node without the label is in no domain of that level
            domains.setdefault(value, []).append(node)
    for value in sorted(domains):
        free = {node.name: node.gpus_free for node in domains[value]}
        placement = []
        for pod in gang:
            fit = next((n for n in domains[value] if free[n.name] >= pod.gpus), None)
            if fit is None:
                break
            free[fit.name] -= pod.gpus
            placement.append((pod, fit))
        else:
            return placement
    return None


def build(params: object = None) -> FirstFitScheduler:
    return FirstFitScheduler()
