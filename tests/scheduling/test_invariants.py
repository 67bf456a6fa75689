"""Properties that hold for any cluster and any set of gangs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.scheduling.kai import KaiParams, KaiScheduler
from gpuscale.scheduling.kube_scheduler import KubeScheduler, KubeSchedulerParams

from .sched_harness import Harness

gangs = st.lists(st.tuples(st.integers(1, 4), st.sampled_from([1, 2, 4]), st.integers(0, 30),
                           st.sampled_from([50, 75, 125])), min_size=1, max_size=8)


def _run(scheduler, busy, jobs, spread=False):
    h = Harness()
    for i, b in enumerate(busy):
        h.node(f"n{i}", busy=b)
    pods = {}
    for j, (n, gpus, at_s, prio) in enumerate(jobs):
        pods[f"j{j}"] = h.gang(f"j{j}", n, gpus, at_s=float(at_s), priority=prio)
    h.attach(scheduler)
    h.run(60.0)
    return h, pods


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=4), gangs, st.booleans())
def test_kai_never_leaves_a_partial_gang_and_never_overcommits(busy, jobs, spread):
    params = KaiParams(placement_strategy="spread" if spread else "binpack")
    h, pods = _run(KaiScheduler(params), busy, jobs)
    for node in h.cluster.nodes.values():
        assert 0 <= node.gpus_allocated <= node.num_gpus
    for members in pods.values():
        n_bound = sum(p.node_name is not None for p in members)
        assert n_bound in (0, len(members))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=4), gangs)
def test_kube_never_overcommits_and_reports_only_pending_pods(busy, jobs):
    h, _pods = _run(KubeScheduler(KubeSchedulerParams()), busy, jobs)
    for node in h.cluster.nodes.values():
        assert 0 <= node.gpus_allocated <= node.num_gpus
        assert node.gpus_allocated == sum(h.cluster.pods[n].gpus for n in node.pod_names)
    if h.reports:
        last_t, names = h.reports[-1]
        assert all(h.cluster.pods[n].node_name is None or h.cluster.pods[n].bound_s > last_t
                   for n in names)
