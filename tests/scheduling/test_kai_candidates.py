"""KAI's per-cycle victim lists equal the per-job scans they replace, until an action acts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.cluster.groups import PodGroupSpec
from gpuscale.cluster.objects import Pod
from gpuscale.scheduling.gangs import form_gangs
from gpuscale.scheduling.kai.candidates import Candidates

# A gang: (pods, min_member, priority, bound flags of its pods, GPUs a pod)
gangs_st = st.lists(st.tuples(st.integers(1, 4), st.integers(0, 4), st.sampled_from([0, 50, 200]),
                              st.lists(st.booleans(), min_size=4, max_size=4),
                              st.integers(0, 8)), min_size=1, max_size=30)


def _pods(spec_list) -> list[Pod]:
    pods = []
    for g, (n, min_member, priority, bound, gpus) in enumerate(spec_list):
        spec = PodGroupSpec(name=f"g{g:02d}", min_member=min_member, priority=priority,
                            queue="other" if g % 3 == 0 else "default")
        for i in range(n):
            pods.append(Pod(name=f"g{g:02d}-{i}", gpus=gpus, priority=priority, group_spec=spec,
                            node_name="n0" if bound[i] else None, created_s=float(g)))
    return pods


@settings(max_examples=80, deadline=None)
@given(spec_list=gangs_st)
def test_lists_match_the_per_job_scans(spec_list):
    gangs = form_gangs(_pods(spec_list))
    candidates = Candidates(gangs)
    # What consolidation and reclaim/preemption computed for every failed job before.
    movable = sorted((g for g in gangs.values() if g.is_complete and g.spec.is_preemptible
                      and not g.pending), key=lambda g: (sum(p.gpus for p in g.bound), g.name))
    running = [g for g in gangs.values() if g.num_bound > 0 and g.spec.is_preemptible]
    assert [g.name for g in candidates.movable()] == [g.name for g in movable]
    assert [g.name for g in candidates.running()] == [g.name for g in running]
    for queue in ("default", "other"):
        for priority in (0, 50, 100, 201):
            below = sorted((g for g in running if g.spec.queue == queue
                            and g.spec.priority < priority),
                           key=lambda g: (g.spec.priority, -g.created_s, g.name))
            assert [g.name for g in candidates.preemptible_below(queue, priority)] == \
                [g.name for g in below]


def test_changed_rebuilds_after_pods_are_bound_or_evicted():
    spec = PodGroupSpec(name="job", min_member=1, priority=0)
    pod = Pod(name="job-0", gpus=1, group_spec=spec)
    candidates = Candidates(form_gangs([pod]))
    assert candidates.running() == [] and candidates.movable() == []
    pod.node_name = "n0"
    assert candidates.running() == []  # kept for the cycle until an action says it acted
    candidates.changed()
    assert [g.name for g in candidates.running()] == ["job"]
    assert [g.name for g in candidates.movable()] == ["job"]
