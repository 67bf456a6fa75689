"""GPU jobs: multi-pod training/batch jobs, multi-node inference replicas, the Alibaba trace.

Specs are pydantic (scenario YAML); `expand_jobs` turns them into frozen `GpuJob` rows sorted
by arrival. The Alibaba reader returns columnar arrays (one row per pod), as other readers do.
Nothing here creates Kubernetes objects: the job controller in `gpuscale.scheduling.jobs` does.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuscale.cluster.groups import (
    DEFAULT_QUEUE,
    DEFAULT_STALENESS_GRACE_S,
    PRIORITY_INFERENCE,
    PRIORITY_TRAIN,
    PodGroupSpec,
    TopologyConstraint,
)
from gpuscale.errors import UserInputError


class _JobBase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    arrival_s: float = Field(0.0, ge=0, description="Submission time, s from the run start.")
    count: int = Field(1, ge=1, description="Identical jobs submitted, `interval_s` apart.")
    interval_s: float = Field(0.0, ge=0, description="Gap between the `count` submissions, s.")
    gpus_per_pod: int = Field(1, ge=1, description="nvidia.com/gpu per pod (whole GPUs; a job "
                              "without GPUs is not a GPU scheduling question).")
    cpu_milli_per_pod: int = Field(0, ge=0, description="CPU request per pod, millicores.")
    memory_mib_per_pod: int = Field(0, ge=0, description="Memory request per pod, MiB.")
    queue: str = Field(DEFAULT_QUEUE, description="KAI queue (label kai.scheduler/queue).")
    required_topology: str = Field("", description="Topology level all pods must share.")
    preferred_topology: str = Field("", description="Topology level tried first.")
    preemption_delay_s: float = Field(0.0, ge=0, description="kai.scheduler/preemption-delay, s; "
                                      "0 = evict at once (KAI default).")
    staleness_grace_s: float = Field(DEFAULT_STALENESS_GRACE_S, description="Stale-gang grace, s "
                                     "(KAI default 60; negative = never evict).")
    node_selector: dict[str, str] = Field(default_factory=dict)


class GpuJobSpec(_JobBase):
    """A training or batch job: `num_pods` pods that all run for `duration_s` once started."""

    num_pods: int = Field(1, ge=1, description="Pods in the gang (ranks).")
    min_member: int | None = Field(None, ge=1, description="PodGroup minMember; None = all pods "
                                   "(pod-grouper default for PyTorchJob/MPIJob).")
    duration_s: float = Field(3600.0, gt=0, description="Run time once the gang is complete, s.")
    priority: int = Field(PRIORITY_TRAIN, description="Priority value; KAI `train` = 50.")

    @model_validator(mode="after")
    def _check(self) -> GpuJobSpec:
        if self.min_member is not None and self.min_member > self.num_pods:
            raise ValueError(f"min_member {self.min_member} > num_pods {self.num_pods}")
        return self


class MultiNodeReplicaSpec(_JobBase):
    """A LeaderWorkerSet-style inference replica: one leader + workers, all-or-nothing
    (e.g. a 70B model over 2 nodes x 4 GPUs). Serves until the run ends unless `duration_s`."""

    replicas: int = Field(1, ge=1, description="LWS replicas; each is its own gang.")
    pods_per_replica: int = Field(2, ge=1, description="LWS size: leader + workers.")
    duration_s: float = Field(math.inf, gt=0, description="Lifetime, s; inf = whole run.")
    priority: int = Field(PRIORITY_INFERENCE, description="KAI `inference` = 125, non-preemptible.")


@dataclass(frozen=True)
class GpuJob:
    """One gang to submit: pods named `<name>-<i>`, all sharing `group`."""

    name: str
    arrival_s: float
    num_pods: int
    gpus_per_pod: int
    cpu_milli_per_pod: int
    memory_mib_per_pod: int
    duration_s: float
    priority: int
    group: PodGroupSpec
    node_selector: tuple[tuple[str, str], ...] = ()


def _job(spec: GpuJobSpec | MultiNodeReplicaSpec, name: str, arrival_s: float, num_pods: int,
         min_member: int, duration_s: float) -> GpuJob:
    topo = TopologyConstraint(spec.required_topology, spec.preferred_topology)
    group = PodGroupSpec(name=name, min_member=min_member, queue=spec.queue, priority=spec.priority,
                         topology=topo, preemption_delay_s=spec.preemption_delay_s,
                         staleness_grace_s=spec.staleness_grace_s)
    return GpuJob(name, arrival_s, num_pods, spec.gpus_per_pod, spec.cpu_milli_per_pod,
                  spec.memory_mib_per_pod, duration_s, spec.priority, group,
                  tuple(sorted(spec.node_selector.items())))


def expand_jobs(specs: list[GpuJobSpec | MultiNodeReplicaSpec]) -> list[GpuJob]:
    """All gangs, sorted by (arrival, name) so equal arrivals keep a stable order."""
    jobs = []
    for spec in specs:
        for k in range(spec.count):
            arrival = spec.arrival_s + k * spec.interval_s
            base = spec.name if spec.count == 1 else f"{spec.name}-{k}"
            if isinstance(spec, MultiNodeReplicaSpec):
                for r in range(spec.replicas):
                    name = base if spec.replicas == 1 else f"{base}-r{r}"
                    jobs.append(_job(spec, name, arrival, spec.pods_per_replica,
                                     spec.pods_per_replica, spec.duration_s))
            else:
                jobs.append(_job(spec, base, arrival, spec.num_pods,
                                 spec.min_member or spec.num_pods, spec.duration_s))
    return sorted(jobs, key=lambda j: (j.arrival_s, j.name))


# -- Alibaba cluster-trace-gpu-v2023 (openb) ------------------------------------------------
# Schema: ../shared/traces/README.md, section alibaba_gpu_v2023.

@dataclass(frozen=True)
class AlibabaPods:
    """Columnar pod list, in file order (sorted by creation_time)."""

    name: np.ndarray  # str
    cpu_milli: np.ndarray  # int64
    memory_mib: np.ndarray  # int64
    num_gpu: np.ndarray  # int64, 0..8
    gpu_milli: np.ndarray  # int64, per-GPU share; 1000 whole GPU, 0 for CPU pods
    creation_s: np.ndarray  # int64
    deletion_s: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.name)


@dataclass(frozen=True)
class AlibabaNodes:
    name: np.ndarray
    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    num_gpu: np.ndarray
    model: np.ndarray  # GPU model code (G1/G2/G3 undisclosed, T4, P100, V100M16, ...)

    def __len__(self) -> int:
        return len(self.name)


def _read_csv(path: Path, columns: dict[str, type]) -> dict[str, np.ndarray]:
    if not path.exists():
        raise UserInputError("file not found", source=str(path))
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        missing = set(columns) - set(reader.fieldnames or ())
        if missing:
            raise UserInputError(f"missing columns {sorted(missing)}", source=str(path))
        rows = list(reader)
    out = {}
    for col, typ in columns.items():
        values = [r[col] for r in rows]
        try:
            out[col] = (np.array(values, dtype=object).astype(str) if typ is str
                        else np.array([int(v or 0) for v in values], dtype=np.int64))
        except ValueError as exc:
            raise UserInputError(f"column {col}: {exc}", source=str(path)) from None
    return out


def read_alibaba_pods(path: Path) -> AlibabaPods:
    c = _read_csv(Path(path), {"name": str, "cpu_milli": int, "memory_mib": int, "num_gpu": int,
                               "gpu_milli": int, "creation_time": int, "deletion_time": int})
    return AlibabaPods(c["name"], c["cpu_milli"], c["memory_mib"], c["num_gpu"], c["gpu_milli"],
                       c["creation_time"], c["deletion_time"])


def read_alibaba_nodes(path: Path) -> AlibabaNodes:
    c = _read_csv(Path(path), {"sn": str, "cpu_milli": int, "memory_mib": int, "gpu": int,
                               "model": str})
    return AlibabaNodes(c["sn"], c["cpu_milli"], c["memory_mib"], c["gpu"], c["model"])


def openb_jobs(pods: AlibabaPods, *, at_once: bool, queue: str = DEFAULT_QUEUE) -> list[GpuJob]:
    """One single-pod job per row of an openb pod list, in file order.

    `at_once`: every pod is submitted at t=0 in file order and never ends (how the FGD paper
    fills a cluster with the list); otherwise a pod arrives at its `creation_time` (shifted so
    the first row is t=0) and runs `deletion_time - creation_time` once bound.
    Approximation: a GPU-sharing pod (`num_gpu` 1, `gpu_milli` < 1000) takes one whole GPU,
    because the cluster model and kube-scheduler allocate whole GPUs (the device plugin's
    unit); `scheduling/replay.py` is the fractional-GPU replay of the same list.
    """
    first_s = int(pods.creation_s.min()) if len(pods) else 0
    jobs = []
    for i in range(len(pods)):
        name = str(pods.name[i])
        arrival_s = 0.0 if at_once else float(pods.creation_s[i] - first_s)
        lifetime_s = math.inf if at_once else float(max(1, pods.deletion_s[i] - pods.creation_s[i]))
        group = PodGroupSpec(name=name, min_member=1, queue=queue, priority=PRIORITY_TRAIN)
        jobs.append(GpuJob(name, arrival_s, 1, int(pods.num_gpu[i]), int(pods.cpu_milli[i]),
                           int(pods.memory_mib[i]), lifetime_s, PRIORITY_TRAIN, group))
    # Stable on (arrival, file order): names are unique and in file order already.
    return sorted(jobs, key=lambda j: j.arrival_s)
