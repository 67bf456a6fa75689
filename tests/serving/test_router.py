"""The indexed least-outstanding router picks exactly the replica the reference scan picks."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.catalog import get_gpu, get_model
from gpuscale.catalog.specs import Precision
from gpuscale.core import Simulation
from gpuscale.serving.performance import ReplicaHardware, StepCost
from gpuscale.serving.replica import EngineConfig, Replica
from gpuscale.serving.requests_table import RequestTable
from gpuscale.serving.router import LeastOutstanding, least_outstanding
from gpuscale.workloads.base import Requests

HW = ReplicaHardware(get_gpu("H100-SXM"), get_model("Llama-3.1-8B"), Precision.BF16,
                     Precision.BF16, 1)

# Each request: (gap before it, prompt, output, action on the ready list before routing it).
ops = st.lists(st.tuples(st.floats(0, 0.5, allow_nan=False), st.integers(1, 4000),
                         st.integers(1, 200), st.sampled_from(["none"] * 6 + ["add", "drain"])),
               min_size=1, max_size=120)


@settings(max_examples=150, deadline=None)
@given(ops=ops, seqs=st.integers(1, 8), timeout_s=st.sampled_from([0.01, 0.05, 1e9]),
       small_kv=st.booleans(), capacity=st.sampled_from([1, 2, 64]))
def test_index_matches_scan_through_adds_drains_drops_and_preemptions(ops, seqs, timeout_s,
                                                                      small_kv, capacity):
    arrivals = np.cumsum([gap for gap, *_ in ops])
    requests = Requests(arrivals, np.array([p for _, p, _, _ in ops]),
                        np.array([o for *_, o, _ in ops]))
    # max_model_len 3000 drops some prompts at enqueue (no load change); a small cache
    # preempts; a short timeout drops waiting requests.
    cfg = EngineConfig(max_num_seqs=seqs, max_num_batched_tokens=512, block_size=16,
                       num_blocks=600 if small_kv else 100_000, max_model_len=3000,
                       request_timeout_s=timeout_s)
    sim = Simulation()
    table = RequestTable(requests)
    cost = StepCost(HW)
    index = LeastOutstanding(capacity)  # a small tree outgrows itself (rebuilds) on the way
    ready: list[Replica] = []
    made = [0]

    def add() -> None:
        made[0] += 1
        replica = Replica(f"r{made[0]}", HW, cfg, sim, table, cost=cost)
        ready.append(replica)
        index.add(replica)

    for _ in range(3):
        add()
    picks: list[tuple[str, str]] = []

    def arrive(rid: int) -> None:
        action = ops[rid][3]
        if action == "add":
            add()
        elif action == "drain" and len(ready) > 1:
            gone = ready.pop(len(ready) // 2)
            index.remove(gone)
            gone.drain(lambda _r: None)
        table.num_arrived = rid + 1
        chosen = index(ready)
        picks.append((chosen.name, least_outstanding(ready).name))
        chosen.enqueue(rid, sim.now_s)

    for rid, t in enumerate(arrivals):
        sim.schedule(float(t), 10, arrive, rid)
    sim.run()
    assert [a for a, _ in picks] == [b for _, b in picks]


def test_index_falls_back_to_the_scan_for_a_list_it_does_not_follow():
    sim = Simulation()
    table = RequestTable(Requests(np.zeros(2), np.array([10, 10]), np.array([5, 5])))
    cfg = EngineConfig(max_num_seqs=4, max_num_batched_tokens=512, block_size=16,
                       num_blocks=1000, max_model_len=3000, request_timeout_s=1e9)
    a, b = (Replica(n, HW, cfg, sim, table) for n in ("a", "b"))
    a.enqueue(0, 0.0)
    index = LeastOutstanding()
    index.add(a)
    assert index([a, b]) is b  # b was never added: the index answers by scanning


def test_renumbering_out_of_leaves_keeps_the_ready_order_for_ties():
    # 2 leaves to start: adds beyond them renumber the live replicas (removed ranks are not
    # reused), which must keep each one's place in the ready list, the scan's tie-break.
    sim = Simulation()
    table = RequestTable(Requests(np.zeros(40), np.full(40, 10), np.full(40, 5)))
    cfg = EngineConfig(max_num_seqs=64, max_num_batched_tokens=512, block_size=16,
                       num_blocks=100_000, max_model_len=3000, request_timeout_s=1e9)
    cost = StepCost(HW)
    index = LeastOutstanding(2)
    ready: list[Replica] = []
    rid = 0
    for step in range(30):
        replica = Replica(f"r{step}", HW, cfg, sim, table, cost=cost)
        ready.append(replica)
        index.add(replica)
        if step % 3 == 2:  # drop one from the middle: its rank is never reused
            gone = ready.pop(len(ready) // 2)
            index.remove(gone)
        chosen = index(ready)
        assert chosen is least_outstanding(ready)
        if step % 4 == 0 and rid < 40:  # load the chosen one, so later ties move on
            chosen.enqueue(rid, 0.0)
            rid += 1
            assert index(ready) is least_outstanding(ready)


@settings(max_examples=200, deadline=None)
@given(capacity=st.sampled_from([2, 4, 16]),
       changes=st.lists(st.tuples(st.integers(0, 15), st.integers(0, 6) | st.just(1 << 60)),
                        max_size=80))
def test_every_node_holds_the_least_loaded_lowest_rank_of_its_subtree(capacity, changes):
    # The tree's invariant after any sequence of load changes, better and worse, ties and
    # empties included: `_set` visits only the nodes a change can move, so a node it skips
    # wrongly keeps a stale winner here.
    index = LeastOutstanding(capacity)
    for rank, load in changes:
        index._set(rank % capacity, load)
        for node in range(1, capacity):
            leaves = [node]
            while leaves[0] < capacity:
                leaves = [child for leaf in leaves for child in (2 * leaf, 2 * leaf + 1)]
            ranks = [leaf - capacity for leaf in leaves]
            loads = {r: index._nodes[capacity + r].load for r in ranks}
            assert index._nodes[node].rank == min(ranks, key=lambda r: (loads[r], r))
