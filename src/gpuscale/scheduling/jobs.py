"""A job controller for GPU gangs: creates the pods, starts the run when the gang is complete,
deletes the pods when it ends. Stands in for the Job/PyTorchJob/LWS controllers.

A job runs only while at least minMember of its pods are bound (distributed training needs
its ranks; an LWS replica needs leader and workers). If an eviction drops it below minMember
the run is lost and starts again from zero when the gang is complete again (checkpoints are
not modelled). Pods bound while the gang is incomplete are what the scheduling metrics count
as idle (the 7-of-8 waste).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuscale.cluster.objects import Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, Simulation
from gpuscale.workloads.gpu_jobs import GpuJob


@dataclass(slots=True)
class JobRecord:
    job: GpuJob
    pods: list[Pod]
    bound: int = 0
    running: bool = False
    generation: int = 0
    started_s: float | None = None
    finished_s: float | None = None
    restarts: int = 0


class JobController:
    def __init__(self, sim: Simulation, cluster: ClusterState, jobs: list[GpuJob]) -> None:
        self.sim, self.cluster = sim, cluster
        self.records: dict[str, JobRecord] = {}
        for job in jobs:
            sim.schedule(job.arrival_s, Priority.LIFECYCLE, self._submit, job)
        cluster.on_pod_bound.append(self._bound)
        cluster.on_pod_evicted.append(self._evicted)

    def _submit(self, job: GpuJob) -> None:
        pods = [Pod(name=f"{job.name}-{i}", gpus=job.gpus_per_pod, cpu_milli=job.cpu_milli_per_pod,
                    memory_mib=job.memory_mib_per_pod, priority=job.priority,
                    node_selector=dict(job.node_selector), labels={"job": job.name},
                    created_s=self.sim.now_s, group=job.name, queue=job.group.queue,
                    group_spec=job.group)
                for i in range(job.num_pods)]
        self.records[job.name] = JobRecord(job, pods)
        for pod in pods:
            self.cluster.add_pod(pod)

    def _bound(self, pod: Pod) -> None:
        rec = self.records.get(pod.group or "")
        if rec is None:
            return
        rec.bound += 1
        if not rec.running and rec.bound >= max(1, rec.job.group.min_member):
            rec.running = True
            rec.generation += 1
            if rec.started_s is None:
                rec.started_s = self.sim.now_s
            if math.isfinite(rec.job.duration_s):
                self.sim.schedule(self.sim.now_s + rec.job.duration_s, Priority.LIFECYCLE,
                                  self._finish, rec.job.name, rec.generation)

    def _evicted(self, pod: Pod, cause: str) -> None:
        rec = self.records.get(pod.group or "")
        if rec is None:
            return
        rec.bound -= 1
        if rec.running and rec.bound < max(1, rec.job.group.min_member):
            rec.running = False
            rec.generation += 1  # the scheduled finish no longer applies
            rec.restarts += 1

    def _finish(self, name: str, generation: int) -> None:
        rec = self.records[name]
        if generation != rec.generation:
            return
        rec.running = False
        rec.finished_s = self.sim.now_s
        self.cluster.delete_pods(rec.pods)  # the scheduler hears of it through on_pod_deleted

    def summary(self) -> dict:
        waits = [r.started_s - r.job.arrival_s for r in self.records.values()
                 if r.started_s is not None]
        return {
            "submitted": len(self.records),
            "started": len(waits),
            "finished": sum(1 for r in self.records.values() if r.finished_s is not None),
            "restarts": sum(r.restarts for r in self.records.values()),
            "start_wait_s_p50": float(np.percentile(waits, 50)) if waits else None,
            "start_wait_s_max": float(max(waits)) if waits else None,
            "jobs": {name: {"queue": r.job.group.queue, "submitted_s": r.job.arrival_s,
                            "started_s": r.started_s, "finished_s": r.finished_s,
                            "restarts": r.restarts}
                     for name, r in self.records.items()},
        }
