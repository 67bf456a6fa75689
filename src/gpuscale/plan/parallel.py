"""The search's simulations in parallel: `--workers N` processes or `--backend ray`, as `sweep`.

Each candidate is a scenario mapping simulated on its own (deterministic: same scenario and
seed, same bytes), so running them in other processes changes no result; answers come back
in the order the candidates were given. One worker runs them in this process (a debugger or
profiler sees them). The user's catalog entries (`--catalog`) travel with each job, since a
worker starts without them.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from gpuscale.errors import UserInputError
from gpuscale.plan.model import EvidenceRow

BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class Job:
    scenario: dict
    base_dir: str
    ttft_slo_s: float
    goodput_frac: float
    user_catalog: tuple


def run_job(job: Job) -> EvidenceRow:
    from gpuscale.catalog.specs import set_user_entries
    from gpuscale.plan.warm_pool import simulate_candidate

    set_user_entries(*job.user_catalog)
    return simulate_candidate(job.scenario, Path(job.base_dir), job.ttft_slo_s, job.goodput_frac)


@dataclass
class Runner:
    """Where the search's simulations run; `on_done` is called once per finished one."""

    workers: int = 1
    backend: str = "local"
    on_done: Callable[[str], None] | None = None

    def run(self, scenarios: Sequence[dict], labels: Sequence[str], base_dir: Path,
            ttft_slo_s: float, goodput_frac: float) -> list[EvidenceRow]:
        from gpuscale.catalog.specs import user_entries

        jobs = [Job(s, str(base_dir), ttft_slo_s, goodput_frac, user_entries())
                for s in scenarios]
        if self.backend == "ray":
            rows = self._ray(jobs)
        elif self.workers <= 1 or len(jobs) <= 1:
            rows = []
            for job, label in zip(jobs, labels, strict=True):
                rows.append(run_job(job))
                self._done(label)
            return rows
        else:
            rows = self._processes(jobs)
        for label in labels:
            self._done(label)
        return rows

    def _done(self, label: str) -> None:
        if self.on_done is not None:
            self.on_done(label)

    def _processes(self, jobs: list[Job]) -> list[EvidenceRow]:
        # forkserver, not fork (as sweep): forking a process with threads can deadlock
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["gpuscale.plan.parallel", "gpuscale.sim"])
        with ProcessPoolExecutor(max_workers=min(self.workers, len(jobs), os.cpu_count() or 1),
                                 mp_context=context) as pool:
            return list(pool.map(run_job, jobs))

    @staticmethod
    def _ray(jobs: list[Job]) -> list[EvidenceRow]:
        try:
            import ray
        except ImportError:
            raise UserInputError("--backend ray needs Ray: pip install 'gpuscale[ray]'") from None
        if not ray.is_initialized():
            ray.init(include_dashboard=False, log_to_driver=False)
        remote = ray.remote(num_cpus=1)(run_job)
        return list(ray.get([remote.remote(job) for job in jobs]))
