"""Scheduling-only runs (`gpuscale schedule`): one scheduler, one node provider, GPU jobs.

No serving engine and no replica autoscaler: layer 2 and its interplay with layer 1 alone.
Each scheduler of a `ScheduleScenario` gets a fresh simulation on the same inputs. Layer 1 is
the scenario's real node provider (`nodes:`), the legacy stand-in (`provider:`), or nothing
(a fixed cluster); the nodes Ready at t=0 come from `initial_nodes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuscale.catalog import get_instance_type
from gpuscale.catalog.specs import InstanceType
from gpuscale.cluster.objects import Node, Pod, Taint
from gpuscale.cluster.state import ClusterState
from gpuscale.core import RandomStreams, Simulation
from gpuscale.errors import UserInputError
from gpuscale.metrics import billing
from gpuscale.provisioning import NodeProvider, build_node_provider
from gpuscale.scenario.schedule import NodeGroupSpec, NodeListSpec, ScheduleScenario
from gpuscale.scheduling import build_scheduler, ignore_unschedulable
from gpuscale.scheduling.jobs import JobController
from gpuscale.scheduling.standin import HOSTNAME_LABEL, ZONE_LABEL, StandInProvider
from gpuscale.units import SECONDS_PER_HOUR
from gpuscale.workloads.gpu_jobs import (
    GpuJob,
    expand_jobs,
    openb_jobs,
    read_alibaba_nodes,
    read_alibaba_pods,
)

MIB_PER_GIB = 1024

SYSTEM_PRIORITY = 1000  # pods that pre-occupy GPUs must not be preempted by the jobs studied
DEFAULT_ZONE = "zone-a"  # zone label of unmanaged initial nodes that name none


@dataclass
class ScheduleRun:
    """The live objects of one run, kept so tests can look past the summary."""

    sim: Simulation
    cluster: ClusterState
    scheduler: Any
    provider: NodeProvider | None  # None: a fixed cluster
    jobs: JobController
    initial_nodes: frozenset[str]


def _occupy(cluster: ClusterState, node: Node, gpus: int) -> None:
    if gpus:
        pod = Pod(name=f"busy-{node.name}", gpus=gpus, priority=SYSTEM_PRIORITY,
                  queue="system", group=f"busy-{node.name}")
        cluster.add_pod(pod)
        cluster.bind(pod, node, 0.0)


def _add_unmanaged(cluster: ClusterState, group: NodeGroupSpec) -> list[Node]:
    itype = get_instance_type(group.instance_type)
    zone = group.zone or DEFAULT_ZONE
    nodes = []
    for i in range(group.count):
        name = f"{group.name_prefix}-{i}"
        node = Node(name=name, instance_type=itype, zone=zone,
                    labels={HOSTNAME_LABEL: name, ZONE_LABEL: zone, **group.labels},
                    taints=tuple(Taint(**t) for t in group.taints), pool=group.name_prefix)
        cluster.add_node(node)
        cluster.mark_node_ready(node, 0.0)
        nodes.append(node)
    return nodes


def _adopt(provider: NodeProvider, group: NodeGroupSpec) -> list[Node]:
    """Provider-owned nodes at t=0 (Karpenter's: none for a provider that adopts none), with
    the group's zone, labels and taints on top of the NodePool's (the pool launched them
    earlier, as it would have)."""
    nodes = provider.adopt_ready_nodes(group.count, get_instance_type(group.instance_type),
                                       "on-demand", group.node_pool)
    for node in nodes:
        if group.zone:
            node.zone = group.zone
            node.labels[ZONE_LABEL] = group.zone
        node.labels.update(group.labels)
        node.taints = node.taints + tuple(Taint(**t) for t in group.taints)
    return nodes


def _openb_instance_type(cpu_milli: int, memory_mib: int, gpus: int, model: str) -> InstanceType:
    """A node shape of an openb node list as an instance type: capacity only, no price (the
    trace gives none), GPU model as a name (G1-G3 are undisclosed codes)."""
    model = model or "none"
    return InstanceType(name=f"openb-{model}x{gpus}-{cpu_milli // 1000}c-{memory_mib}Mi",
                        gpu=model, num_gpus=gpus, vcpus=cpu_milli // 1000,
                        memory_gib=memory_mib / MIB_PER_GIB, on_demand_usd_per_hour=0.0,
                        nvlink_domain_gpus=0, zones=(), source="openb node list",
                        verified=False)


def _add_node_list(cluster: ClusterState, spec: NodeListSpec) -> None:
    nodes = read_alibaba_nodes(spec.path)
    shapes: dict[tuple, InstanceType] = {}
    for i in range(len(nodes)):
        key = (int(nodes.cpu_milli[i]), int(nodes.memory_mib[i]), int(nodes.num_gpu[i]),
               str(nodes.model[i]))
        itype = shapes.get(key) or shapes.setdefault(key, _openb_instance_type(*key))
        name = str(nodes.name[i])
        if name in cluster.nodes:
            raise UserInputError(f"node {name} appears twice", source=str(spec.path), field="sn")
        node = Node(name=name, instance_type=itype, zone=spec.zone,
                    labels={HOSTNAME_LABEL: name, ZONE_LABEL: spec.zone,
                            "gpuscale/openb-gpu-model": key[3]}, pool="openb")
        cluster.add_node(node)
        cluster.mark_node_ready(node, 0.0)


def scenario_jobs(scenario: ScheduleScenario) -> list[GpuJob]:
    """Every gang of the scenario: its `jobs` and `replicas`, then its pod list, by arrival."""
    jobs = expand_jobs([*scenario.jobs, *scenario.replicas])
    if scenario.pod_list is not None:
        spec = scenario.pod_list
        pods = read_alibaba_pods(spec.path)
        jobs = sorted(jobs + openb_jobs(pods, at_once=spec.arrivals == "at_once",
                                        queue=spec.queue), key=lambda j: j.arrival_s)
    return jobs


def build_cluster(scenario: ScheduleScenario, cluster: ClusterState | None = None,
                  provider: NodeProvider | None = None) -> ClusterState:
    """The cluster at t=0: initial nodes (adopted by `provider` when it can, unmanaged
    otherwise) and busy pods."""
    cluster = cluster if cluster is not None else ClusterState()
    if scenario.node_list is not None:
        _add_node_list(cluster, scenario.node_list)
    for group in scenario.initial_nodes:
        nodes = _adopt(provider, group) if provider is not None else []
        if not nodes:
            nodes = _add_unmanaged(cluster, group)
        for i, node in enumerate(nodes):
            _occupy(cluster, node, group.busy_gpus[i] if group.busy_gpus else 0)
    return cluster


def scheduler_label(spec) -> str:
    if spec.kind == "kai":
        return f"kai/{spec.placement_strategy}"
    return f"kube-scheduler/{spec.scoring_strategy}"


def build_run(scenario: ScheduleScenario, spec) -> ScheduleRun:
    sim, streams = Simulation(), RandomStreams(scenario.seed)
    provider: NodeProvider | None = None
    cluster = ClusterState()
    if scenario.nodes is not None:
        provider = build_node_provider(scenario.nodes)
    elif scenario.provider is not None:
        provider = StandInProvider(scenario.provider)
    if provider is not None:
        provider.attach(sim, cluster, streams)
    build_cluster(scenario, cluster, provider)
    initial = frozenset(cluster.nodes)
    scheduler = build_scheduler(spec)
    jobs = JobController(sim, cluster, scenario_jobs(scenario))
    notify = provider.notify_unschedulable if provider is not None else ignore_unschedulable
    scheduler.attach(sim, cluster, streams, notify)
    return ScheduleRun(sim, cluster, scheduler, provider, jobs, initial)


def node_summary(run: ScheduleRun) -> dict[str, Any]:
    now_s = run.sim.now_s
    nodes = billing.all_nodes(run.cluster)
    launched = sorted((n for n in nodes if n.name not in run.initial_nodes),
                      key=lambda n: (n.created_s, n.name))
    out: dict[str, Any] = {
        "launched_by_provider": len(launched),
        "gpu_hours_billed": round(billing.gpu_s(run.cluster, now_s) / SECONDS_PER_HOUR, 4),
        "usd_billed": round(billing.cost_usd(run.cluster, now_s), 4),
        "launched": [{"name": n.name, "instance_type": n.instance_type.name,
                      "zone": n.zone, "created_s": round(n.created_s, 3),
                      "ready_s": None if n.ready_s is None else round(n.ready_s, 3),
                      "deleted_s": None if n.deleted_s is None else round(n.deleted_s, 3)}
                     for n in launched],
    }
    provider = run.provider.summary() if run.provider is not None else {}
    if provider:
        out["provider"] = provider
    return out


def run_one(scenario: ScheduleScenario, spec) -> dict:
    run = build_run(scenario, spec)
    run.sim.run(until_s=scenario.duration_s)
    return {
        "scheduler": scheduler_label(spec),
        "scheduling": run.scheduler.summary(),
        "jobs": run.jobs.summary(),
        "nodes": node_summary(run),
    }


def run_scenario(scenario: ScheduleScenario) -> dict:
    return {"scenario": scenario.name,
            "runs": [run_one(scenario, spec) for spec in scenario.schedulers]}
