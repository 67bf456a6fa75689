"""KAI waits for a change instead of retrying pods that cannot fit every second, and decides
exactly as the every-second cycle did."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscale.scenario.schedule import load_schedule_scenario
from gpuscale.scheduling.kai import KaiParams, KaiScheduler
from gpuscale.sim.schedule import build_run, node_summary

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class EverySecond(KaiScheduler):
    """The former behaviour: while pods wait, a cycle every `schedule_period_s`."""

    def _wait(self, since_s: float) -> float:
        super()._wait(since_s)
        return since_s + self.params.schedule_period_s


def _run(example: str, every_second: bool):
    scenario = load_schedule_scenario(EXAMPLES / example)
    spec = next(s for s in scenario.schedulers if s.kind == "kai")
    if every_second:
        import gpuscale.sim.schedule as schedule_module
        original = schedule_module.build_scheduler
        schedule_module.build_scheduler = lambda spec: EverySecond(spec)
        try:
            run = build_run(scenario, spec)
        finally:
            schedule_module.build_scheduler = original
    else:
        run = build_run(scenario, spec)
    log: list[tuple] = []
    run.cluster.on_pod_bound.append(
        lambda p: log.append((run.sim.now_s, "bind", p.name, p.node_name)))
    run.cluster.on_pod_evicted.append(
        lambda p, cause: log.append((run.sim.now_s, "evict", p.name, cause))
    )
    cycles = []
    cycle = run.scheduler.cycle
    run.scheduler.cycle = lambda now_s, quiet: (cycles.append(now_s), cycle(now_s, quiet))[1]
    run.sim.run(until_s=scenario.duration_s)
    summary = run.scheduler.summary()
    reports = summary.pop("unschedulable_reports")
    provider = node_summary(run)
    return log, summary, provider, run.jobs.summary(), len(cycles), reports


@pytest.mark.parametrize(
    "example",
    [
        "seven-of-eight/scenario.yaml",
        "seven-of-eight/karpenter.yaml",
        "gang-partial-launch/karpenter.yaml",
        "gang-partial-launch/karpenter-ice.yaml",
        "gang-partial-launch/cluster-autoscaler.yaml",
        "two-teams/scenario.yaml",
    ],
)
def test_waiting_for_a_change_decides_as_a_cycle_every_second(example):
    log, summary, provider, jobs, cycles, reports = _run(example, every_second=False)
    old_log, old_summary, old_provider, old_jobs, old_cycles, old_reports = _run(example, True)
    assert log and log == old_log  # every bind and eviction, at the same instant
    assert (summary, provider, jobs) == (old_summary, old_provider, old_jobs)
    assert cycles < old_cycles and reports <= old_reports


def test_a_gang_that_cannot_fit_is_not_retried_until_the_cluster_changes(h):
    h.node("a")  # 4 GPUs
    pods = h.gang("big", 2, 4)  # needs 8: never fits
    sched = h.attach(KaiScheduler(KaiParams(preempt=False, reclaim=False)))
    cycles = []
    cycle = sched.cycle
    sched.cycle = lambda now_s, quiet: (cycles.append(now_s), cycle(now_s, quiet))[1]
    h.run(100.0)
    assert cycles == [0.0]
    h.node("b")  # a change at 100 s: the next 1 s cycle after it places the gang
    h.run(100.0)
    assert cycles == [0.0, 100.0] and all(p.node_name for p in pods)
