"""Scheduling-only scenarios (`gpuscale schedule`): nodes, GPU jobs, and one run per scheduler.

Layer 1 is either a real node provider under `nodes:` (`static`, `karpenter`,
`cluster_autoscaler`; docs/provisioning.md) with the nodes that exist at t=0 under
`initial_nodes:`, or the legacy form: `nodes:` as a list of node groups plus an optional
`provider: {kind: stand-in}` (scheduling/standin.py). Files of the legacy form load unchanged:
their list moves to `initial_nodes`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpuscale.catalog import get_instance_type
from gpuscale.catalog.specs import known_name
from gpuscale.errors import UserInputError
from gpuscale.provisioning import NodeProviderSpec
from gpuscale.scheduling import KaiParams, KubeSchedulerParams, SchedulerSpec
from gpuscale.scheduling.standin import StandInProviderParams
from gpuscale.workloads.gpu_jobs import GpuJobSpec, MultiNodeReplicaSpec


class NodeGroupSpec(BaseModel):
    """Identical nodes Ready at t=0, some of their GPUs possibly held by pods that never end."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name_prefix: str = Field(description="Node names are `<prefix>-<i>` (unmanaged nodes).")
    instance_type: str = Field(description="Catalog instance type, e.g. g6.24xlarge.")
    count: int = Field(1, ge=1, description="Number of nodes.")
    zone: str | None = Field(None, description="Zone label; None = `zone-a` for unmanaged "
                             "nodes, the provider's choice for nodes a NodePool adopts.")
    labels: dict[str, str] = Field(default_factory=dict, description="Extra labels (topology).")
    taints: tuple[dict[str, str], ...] = ()
    busy_gpus: list[int] = Field(default_factory=list, description="GPUs already taken on each "
                                 "node at t=0 by pods that never end (length count, or empty).")
    node_pool: str | None = Field(None, description="With `nodes: {kind: karpenter}`: the "
                                  "NodePool that owns these nodes (None = the heaviest), so "
                                  "Karpenter counts and may disrupt them like its own. Other "
                                  "providers leave initial nodes unmanaged.")

    @field_validator("instance_type")
    @classmethod
    def _known(cls, name: str) -> str:
        return known_name(get_instance_type, name)

    @model_validator(mode="after")
    def _check(self) -> NodeGroupSpec:
        if self.busy_gpus and len(self.busy_gpus) != self.count:
            raise ValueError(f"busy_gpus has {len(self.busy_gpus)} entries for {self.count} nodes")
        gpus = get_instance_type(self.instance_type).num_gpus
        wrong = [b for b in self.busy_gpus if not 0 <= b <= gpus]
        if wrong:
            raise ValueError(f"busy_gpus entries must be 0-{gpus} ({self.instance_type} has {gpus} "
                             f"GPUs), got {wrong[0]}")
        return self


class PodListSpec(BaseModel):
    """GPU pods read from a CSV in the openb schema (Alibaba cluster-trace-gpu-v2023,
    `openb_pod_list_*.csv`: name, cpu_milli, memory_mib, num_gpu, gpu_milli, creation_time,
    deletion_time; ../shared/traces/README.md). Each row is a one-pod job."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path = Field(description="The CSV, relative to the scenario file.")
    format: Literal["openb"] = Field("openb", description="Column schema of the file.")
    arrivals: Literal["at_once", "trace"] = Field(
        "at_once", description="`at_once`: every pod at t=0 in file order, never ending (the "
        "FGD paper's fill); `trace`: at `creation_time` (first row = t=0), running "
        "`deletion_time - creation_time` once bound.")
    queue: str = Field("default-queue", description="KAI queue of every pod (KAI's "
                       "fresh-install leaf queue by default).")


class NodeListSpec(BaseModel):
    """Nodes Ready at t=0 read from a CSV in the openb node schema (`sn, cpu_milli,
    memory_mib, gpu, model`). Prices are unknown (0 $/h); GPU models are labels only."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path = Field(description="The CSV, relative to the scenario file.")
    format: Literal["openb"] = Field("openb", description="Column schema of the file.")
    zone: str = Field("zone-a", description="Zone label of every node.")


class ScheduleScenario(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    seed: int = Field(0, ge=0, le=2**63 - 1, strict=True,
                      description="Seeds the random streams (non-negative, 64-bit).")
    duration_s: float = Field(3600.0, gt=0, description="Simulated time, s.")
    initial_nodes: list[NodeGroupSpec] = Field(default_factory=list, description="Nodes Ready "
                                               "at t=0 (with their busy GPUs).")
    nodes: NodeProviderSpec | None = Field(None, description="Layer 1 (docs/provisioning.md); "
                                           "None = `provider` (the stand-in) or a fixed "
                                           "cluster.")
    provider: StandInProviderParams | None = Field(None, description="Legacy stand-in node "
                                                   "provider; not together with `nodes`.")
    jobs: list[GpuJobSpec] = Field(default_factory=list)
    replicas: list[MultiNodeReplicaSpec] = Field(default_factory=list)
    pod_list: PodListSpec | None = Field(None, description="GPU pods from a pod-list CSV, "
                                         "beside `jobs` and `replicas`.")
    node_list: NodeListSpec | None = Field(None, description="Nodes Ready at t=0 from a "
                                           "node-list CSV, beside `initial_nodes`.")
    schedulers: list[SchedulerSpec] = Field(
        default_factory=lambda: [KubeSchedulerParams(), KaiParams()], min_length=1,
        description="One run per entry, same inputs; default: both at their defaults.")

    @model_validator(mode="before")
    @classmethod
    def _legacy_node_list(cls, data: Any) -> Any:
        """`nodes: [groups]` (the first schema) means initial nodes and no real provider."""
        if isinstance(data, dict) and isinstance(data.get("nodes"), list):
            if "initial_nodes" in data:
                raise ValueError("`nodes` as a list is the legacy spelling of `initial_nodes`; "
                                 "give one of them")
            data = {**data, "initial_nodes": data["nodes"], "nodes": None}
        return data

    @model_validator(mode="after")
    def _check(self) -> ScheduleScenario:
        if self.nodes is not None and self.provider is not None:
            raise ValueError("give either `nodes` (a real node provider) or the legacy "
                             "`provider` (stand-in), not both")
        if not self.initial_nodes and self.nodes is None and self.node_list is None:
            raise ValueError("no nodes: give `initial_nodes`, `node_list` or a node provider "
                             "under `nodes`")
        _check_jobs_and_nodes(self)
        return self


def _check_jobs_and_nodes(scenario: ScheduleScenario) -> None:
    """The work the run would do, bounded before anything is built (a job of 10^6 pods or a
    group of 10^9 nodes never finished; scenario/cluster_limits.py), and one name per gang:
    two jobs named alike made the same pods (`pod a-0 already exists`)."""
    from gpuscale.scenario.cluster_limits import MAX_NODES, MAX_PODS, over_limit

    if (problem := over_limit({"initial_nodes": scenario.initial_nodes,
                               "nodes": scenario.nodes})):
        raise ValueError(problem)
    specs: list[GpuJobSpec | MultiNodeReplicaSpec] = [*scenario.jobs, *scenario.replicas]
    pods = sum(j.count * j.num_pods for j in scenario.jobs) + sum(
        r.count * r.replicas * r.pods_per_replica for r in scenario.replicas)
    if pods > MAX_PODS:
        raise ValueError(f"jobs and replicas make {pods:,} pods, more than the {MAX_PODS:,} of "
                         "the largest cluster Kubernetes supports (docs/input-limits.md)")
    nodes = sum(group.count for group in scenario.initial_nodes)
    if nodes > MAX_NODES:
        raise ValueError(f"initial_nodes hold {nodes:,} nodes, more than the {MAX_NODES:,} of "
                         "the largest cluster Kubernetes supports (docs/input-limits.md)")
    from gpuscale.workloads.gpu_jobs import expand_jobs

    seen: set[str] = set()
    for job in expand_jobs(specs):
        if job.name in seen:
            raise ValueError(f"two jobs or replicas are both named {job.name!r} (after `count` "
                             "and `replicas` suffixes); give each a distinct name")
        seen.add(job.name)


def load_schedule_scenario(path: Path) -> ScheduleScenario:
    # The same reader and error shape as `simulate` (file, field, what was expected).
    from gpuscale.scenario.load import load_yaml, validate_mapping

    path = path if hasattr(path, "read_text") else Path(path)  # a Path, or cli's StdinPath for -
    data = load_yaml(path)
    if isinstance(data, dict) and "model" in data:
        raise UserInputError("a serving scenario (it has `model`); run `gpuscale simulate` or "
                             "`gpuscale compare` on it", source=str(path), field="model")
    scenario = validate_mapping(ScheduleScenario, data, source=str(path))
    return _resolve_paths(scenario, path.parent)


def _resolve_paths(scenario: ScheduleScenario, base: Path) -> ScheduleScenario:
    """CSV paths are relative to the scenario file, as a trace path in `simulate` is."""
    update = {}
    for key in ("pod_list", "node_list"):
        spec = getattr(scenario, key)
        if spec is not None and not spec.path.is_absolute():
            update[key] = spec.model_copy(update={"path": base / spec.path})
    return scenario.model_copy(update=update) if update else scenario
