"""Scheduling-only scenarios: a fixed set of nodes, GPU jobs, a stand-in node provider, and
one run per scheduler on the same inputs. Used by `gpuscale schedule` and the examples.

The full simulator wires the real layer 1 and the serving engine instead; this runner exists
so layer 2 can be studied (and tested) alone.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gpuscale.catalog import get_instance_type
from gpuscale.cluster.objects import Node, Pod, Taint
from gpuscale.cluster.state import ClusterState
from gpuscale.core import RandomStreams, Simulation
from gpuscale.errors import UserInputError
from gpuscale.scheduling import SchedulerSpec, build_scheduler, ignore_unschedulable
from gpuscale.scheduling.jobs import JobController
from gpuscale.scheduling.kai import KaiParams
from gpuscale.scheduling.kube_scheduler import KubeSchedulerParams
from gpuscale.scheduling.standin import (HOSTNAME_LABEL, ZONE_LABEL, StandInProvider,
                                         StandInProviderParams)
from gpuscale.workloads.gpu_jobs import GpuJobSpec, MultiNodeReplicaSpec, expand_jobs

SYSTEM_PRIORITY = 1000  # pods that pre-occupy GPUs must not be preempted by the jobs studied


class NodeGroupSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name_prefix: str
    instance_type: str
    count: int = Field(1, ge=1)
    zone: str = "zone-a"
    labels: dict[str, str] = Field(default_factory=dict, description="Extra labels (topology).")
    taints: tuple[dict[str, str], ...] = ()
    busy_gpus: list[int] = Field(default_factory=list, description="GPUs already taken on each "
                                 "node at t=0 by pods that never end (length count, or empty).")

    @model_validator(mode="after")
    def _check(self) -> "NodeGroupSpec":
        if self.busy_gpus and len(self.busy_gpus) != self.count:
            raise ValueError(f"busy_gpus has {len(self.busy_gpus)} entries for {self.count} nodes")
        return self


class ScheduleScenario(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    seed: int = 0
    duration_s: float = Field(3600.0, gt=0, description="Simulated time, s.")
    nodes: list[NodeGroupSpec]
    jobs: list[GpuJobSpec] = Field(default_factory=list)
    replicas: list[MultiNodeReplicaSpec] = Field(default_factory=list)
    provider: StandInProviderParams | None = Field(None, description="None = static cluster.")
    schedulers: list[SchedulerSpec] = Field(
        default_factory=lambda: [KubeSchedulerParams(), KaiParams()],
        description="One run per entry, same inputs; default: both at their defaults.")


def load_scenario(path: Path) -> ScheduleScenario:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise UserInputError(str(exc), source=str(path)) from None
    try:
        return ScheduleScenario.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise UserInputError(err["msg"], source=str(path), field=field) from None


def build_cluster(scenario: ScheduleScenario) -> ClusterState:
    cluster = ClusterState()
    for group in scenario.nodes:
        itype = get_instance_type(group.instance_type)
        for i in range(group.count):
            name = f"{group.name_prefix}-{i}"
            labels = {HOSTNAME_LABEL: name, ZONE_LABEL: group.zone, **group.labels}
            taints = tuple(Taint(**t) for t in group.taints)
            node = Node(name=name, instance_type=itype, zone=group.zone, labels=labels,
                        taints=taints, pool=group.name_prefix)
            cluster.add_node(node)
            cluster.mark_node_ready(node, 0.0)
            busy = group.busy_gpus[i] if group.busy_gpus else 0
            if busy:
                pod = Pod(name=f"busy-{name}", gpus=busy, priority=SYSTEM_PRIORITY,
                          queue="system", group=f"busy-{name}")
                cluster.add_pod(pod)
                cluster.bind(pod, node, 0.0)
    return cluster


def scheduler_label(spec) -> str:
    if spec.kind == "kai":
        return f"kai/{spec.placement_strategy}"
    return f"kube-scheduler/{spec.scoring_strategy}"


def run_one(scenario: ScheduleScenario, spec) -> dict:
    sim = Simulation()
    cluster = build_cluster(scenario)
    scheduler = build_scheduler(spec)
    provider = (StandInProvider(scenario.provider, sim, cluster) if scenario.provider else None)
    notify = provider.notify_unschedulable if provider else ignore_unschedulable
    jobs = JobController(sim, cluster, expand_jobs([*scenario.jobs, *scenario.replicas]),
                         scheduler.kick)
    scheduler.attach(sim, cluster, RandomStreams(scenario.seed), notify)
    sim.run(until_s=scenario.duration_s)
    nodes = list(cluster.nodes.values()) + cluster.gone_nodes
    return {
        "scheduler": scheduler_label(spec),
        "scheduling": scheduler.summary(),
        "jobs": jobs.summary(),
        "nodes": {
            "launched_by_provider": provider.launched if provider else 0,
            "gpu_hours_billed": round(sum(n.num_gpus * n.billed_s(sim.now_s) for n in nodes)
                                      / 3600.0, 4),
            "usd_billed": round(sum(n.price_usd_per_hour * n.billed_s(sim.now_s) for n in nodes)
                                / 3600.0, 4),
        },
    }


def run_scenario(scenario: ScheduleScenario) -> dict:
    return {"scenario": scenario.name,
            "runs": [run_one(scenario, spec) for spec in scenario.schedulers]}
