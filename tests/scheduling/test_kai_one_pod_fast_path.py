"""The KAI cycle's one-pod-gang shortcuts (`_need_gpus`, `try_place`'s split, `QueueBook`'s
sums) give what the general multi-pod code gives, for every shape of one-pod gang."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.cluster.groups import PodGroupSpec, Queue
from gpuscale.cluster.objects import Pod
from gpuscale.scheduling.gangs import Gang
from gpuscale.scheduling.kai.book import QueueBook
from gpuscale.scheduling.kai.scheduler import _need_gpus
from gpuscale.scheduling.queues import fair_shares


def _need_gpus_general(gang: Gang) -> float:
    need = max(0, gang.min_member - gang.num_bound)
    return sum(p.gpus for p in sorted(gang.pending, key=lambda p: p.name)[:need])


pod_shapes = st.tuples(st.integers(0, 8), st.booleans(), st.integers(0, 3),
                       st.sampled_from(["default-queue", "q1", "q2"]))


def _gang(i: int, gpus: int, bound: bool, min_member: int, queue: str) -> Gang:
    pod = Pod(name=f"p{i}", gpus=gpus, node_name="n0" if bound else None)
    return Gang(PodGroupSpec(name=f"g{i}", min_member=min_member, queue=queue), [pod])


@settings(max_examples=200, deadline=None)
@given(shape=pod_shapes)
def test_need_gpus_of_a_one_pod_gang(shape):
    gang = _gang(0, *shape)
    fast, general = _need_gpus(gang), _need_gpus_general(gang)
    assert fast == general and type(fast) is type(general)


@settings(max_examples=100, deadline=None)
@given(shapes=st.lists(pod_shapes, max_size=8), total_gpus=st.sampled_from([0.0, 16.0, 64.0]))
def test_queue_book_of_one_pod_gangs(shapes, total_gpus):
    gangs = {f"g{i}": _gang(i, *s) for i, s in enumerate(shapes)}
    queues = {"q1": Queue("q1", quota_gpus=8.0)}
    book = QueueBook(queues, gangs, total_gpus)
    # The general sums over `Gang.bound` and `Gang.pods`, by hand.
    alloc: Counter = Counter()
    requested: Counter = Counter()
    known = dict(queues)
    for gang in gangs.values():
        known.setdefault(gang.spec.queue, Queue(gang.spec.queue))
    for gang in gangs.values():
        for q in book.chain(gang.spec.queue):
            alloc[q.name] += sum(p.gpus for p in gang.bound)
        requested[gang.spec.queue] += sum(p.gpus for p in gang.pods)
    assert {k: v for k, v in book.alloc.items()} == dict(alloc)
    assert book.fair == fair_shares(known, dict(requested), total_gpus)


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(["a", "b"]), queue=st.sampled_from([None, "", "q1"]),
       priority=st.sampled_from([0, 1, 50, 100, 1.0]))
def test_owner_less_pods_gang_spec_is_the_fresh_spec(name, queue, priority):
    """The memoised PodGroup of an owner-less pod equals, field by field and in type, the one
    `form_gangs` built anew for it at every cycle."""
    from gpuscale.cluster.groups import DEFAULT_QUEUE
    from gpuscale.scheduling.gangs import form_gangs

    pod = Pod(name=name, gpus=1, queue=queue, priority=priority)
    spec = form_gangs([pod])[name].spec
    fresh = PodGroupSpec(name=name, min_member=1, queue=queue or DEFAULT_QUEUE,
                         priority=priority)
    assert spec == fresh
    assert type(spec.priority) is type(fresh.priority)
