"""The analytical replica agrees with a step-by-step reference and keeps its invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.catalog import get_gpu, get_model
from gpuscale.catalog.specs import Precision
from gpuscale.core import Simulation
from gpuscale.serving.performance import ReplicaHardware, StepCost
from gpuscale.serving.replica import EngineConfig, Replica
from gpuscale.serving.requests_table import COMPLETED, RequestTable
from gpuscale.serving.waiting_queue import WaitingQueue
from gpuscale.workloads.base import Requests

from .reference_engine import run_reference

HW = ReplicaHardware(get_gpu("H100-SXM"), get_model("Llama-3.1-8B"), Precision.BF16,
                     Precision.BF16, 1)


def _cfg(num_blocks: int = 100_000, budget: int = 2048, seqs: int = 64) -> EngineConfig:
    return EngineConfig(max_num_seqs=seqs, max_num_batched_tokens=budget, block_size=16,
                        num_blocks=num_blocks, max_model_len=100_000, request_timeout_s=1e9)


def _replica_fed(cfg: EngineConfig, arrivals, prompts, outputs
                 ) -> tuple[Simulation, RequestTable, Replica]:
    """One replica with every request's arrival scheduled, not run yet."""
    requests = Requests(np.asarray(arrivals, float), np.asarray(prompts), np.asarray(outputs))
    sim = Simulation()
    table = RequestTable(requests)
    replica = Replica("r0", HW, cfg, sim, table)
    for rid, t in enumerate(arrivals):
        sim.schedule(t, 10, replica.enqueue, rid, t)
    return sim, table, replica


def _run_replica(cfg: EngineConfig, arrivals, prompts, outputs) -> RequestTable:
    sim, table, _replica = _replica_fed(cfg, arrivals, prompts, outputs)
    sim.run()
    return table


def workloads_of(requests: tuple[int, int], last_arrival_s: float, prompt_max: int,
                 output_max: int) -> st.SearchStrategy:
    """(sorted arrivals, prompts, outputs) of a number of requests in `requests`."""
    return st.integers(*requests).flatmap(lambda n: st.tuples(
        st.lists(st.floats(0, last_arrival_s, allow_nan=False), min_size=n, max_size=n)
        .map(sorted),
        st.lists(st.integers(1, prompt_max), min_size=n, max_size=n),
        st.lists(st.integers(1, output_max), min_size=n, max_size=n),
    ))


workloads = workloads_of((1, 25), 5, 3000, 300)


@settings(max_examples=60, deadline=None)
@given(workload=workloads, small_kv=st.booleans())
def test_analytical_replica_matches_step_by_step_reference(workload, small_kv):
    arrivals, prompts, outputs = workload
    # A small cache forces preemptions, but must still hold the largest request alone.
    blocks = max(math.ceil((p + o) / 16) + 2 for p, o in zip(prompts, outputs, strict=True)) + 40 \
        if small_kv else 100_000
    cfg = _cfg(num_blocks=blocks)
    table = _run_replica(cfg, arrivals, prompts, outputs)
    first, finish = run_reference(StepCost(HW), cfg, arrivals, prompts, outputs)
    assert table.first_token_s == pytest.approx(first, rel=1e-9, abs=1e-9)
    assert table.finish_s == pytest.approx(finish, rel=1e-9, abs=1e-9)
    assert (table.columns().status == COMPLETED).all()


def test_one_request_alone_has_prefill_then_decode_timing():
    cost = StepCost(HW)
    table = _run_replica(_cfg(), [0.0], [1000], [11])
    prefill = cost.step_s(0, 0, ((1000, 0),))
    assert table.first_token_s[0] == pytest.approx(prefill)
    decode = sum(cost.step_s(1, 1001 + k) for k in range(10))
    assert table.finish_s[0] == pytest.approx(prefill + decode)


def test_budget_chunks_a_long_prompt_over_several_steps():
    cost = StepCost(HW)
    table = _run_replica(_cfg(budget=512), [0.0], [1200], [1])
    expected = (cost.step_s(0, 0, ((512, 0),)) + cost.step_s(0, 0, ((512, 512),))
                + cost.step_s(0, 0, ((176, 1024),)))
    assert table.finish_s[0] == pytest.approx(expected)


def test_request_larger_than_the_whole_cache_is_dropped_not_stuck():
    table = _run_replica(_cfg(num_blocks=10), [0.0], [1000], [10])
    assert table.drop_reasons == {"exceeds_kv_cache": 1}


def test_kv_pressure_preempts_newest_first_and_everyone_still_finishes():
    table = _run_replica(_cfg(num_blocks=140), [0.0, 0.01, 0.02], [600, 600, 600], [300, 300, 300])
    assert sum(table.num_preemptions) > 0
    assert table.num_preemptions[0] == 0  # the oldest is never the victim
    assert (table.columns().status == COMPLETED).all()


def test_duty_cycle_saturates_with_1_or_100_requests_in_flight():
    """The DCGM trap: busy time covers the whole window whatever the batch size."""
    for concurrency in (1, 100):
        n = concurrency
        requests = Requests(np.zeros(n), np.full(n, 500), np.full(n, 5000))
        sim = Simulation()
        table = RequestTable(requests)
        replica = Replica("r0", HW, _cfg(seqs=256), sim, table)
        for rid in range(n):
            sim.schedule(0.0, 10, replica.enqueue, rid, 0.0)
        sim.run(until_s=20.0)
        busy_frac = replica.busy_s(20.0) / 20.0
        assert busy_frac >= 0.95, (concurrency, busy_frac)
        assert replica.num_running == concurrency  # what vllm:num_requests_running shows


def test_prefill_first_runs_whole_prompts_in_prefill_only_steps():
    """vLLM V0 / Vidur `vllm`: a newcomer's prompt runs alone (decodes wait), in one step."""
    cfg = EngineConfig(max_num_seqs=64, max_num_batched_tokens=4096, block_size=16,
                       num_blocks=100_000, max_model_len=100_000, request_timeout_s=1e9,
                       batching="prefill_first")
    cost = StepCost(HW)
    # Request 0 decodes 200 tokens; request 1 (3000-token prompt) arrives meanwhile.
    table = _run_replica(cfg, [0.0, 0.5], [100, 3000], [200, 2])
    prefill_1 = cost.step_s(0, 0.0, [(3000, 0)])
    # Its first token comes one whole-prompt prefill step after the step in progress ends:
    # no decode tokens ride along, so that step costs exactly the prefill-only step.
    ttft_1 = table.first_token_s[1] - 0.5
    step_0 = cost.decode_step_s(1, 150)
    assert prefill_1 <= ttft_1 <= prefill_1 + 2 * step_0
    chunked = _run_replica(_cfg(budget=4096), [0.0, 0.5], [100, 3000], [200, 2])
    # Chunked: the same prompt shares its step with request 0's decode (one more token, more
    # time); prefill-first: request 0 stalls for the prefill, so it finishes later.
    assert table.finish_s[0] > chunked.finish_s[0] - 1e-9
    assert all(np.asarray(table.columns().status) == COMPLETED)


def test_prefill_first_does_not_split_a_prompt_over_steps():
    cfg = EngineConfig(max_num_seqs=64, max_num_batched_tokens=1000, block_size=16,
                       num_blocks=100_000, max_model_len=100_000, request_timeout_s=1e9,
                       batching="prefill_first")
    table = _run_replica(cfg, [0.0, 0.0], [800, 800], [1, 1])
    cost = StepCost(HW)
    one = cost.step_s(0, 0.0, [(800, 0)])
    # Two prompts of 800 do not fit 1000 together: two prefill steps, whole prompts each.
    assert table.first_token_s[0] == pytest.approx(one)
    assert table.first_token_s[1] == pytest.approx(2 * one)


def test_guaranteed_no_evict_reserves_whole_lengths_and_never_preempts():
    """TensorRT-LLM's default capacity scheduler: admission reserves prompt + output."""
    # 100 blocks of 16 tokens = 1,600 tokens; each request is 100 + 500 = 600 tokens long.
    def run(admission):
        cfg = EngineConfig(max_num_seqs=64, max_num_batched_tokens=4096, block_size=16,
                           num_blocks=100, max_model_len=100_000, request_timeout_s=1e9,
                           admission=admission)
        return _run_replica(cfg, [0.0] * 6, [100] * 6, [500] * 6)

    no_evict, max_util = run("guaranteed_no_evict"), run("max_utilization")
    assert sum(no_evict.num_preemptions) == 0
    assert sum(max_util.num_preemptions) > 0  # admits all six, then runs out and recomputes
    # Only two whole lengths fit at once (2 x 600 + half-blocks <= 1,600; three do not): the
    # third request's first token waits for the first two to finish.
    first = np.asarray(no_evict.first_token_s)
    finish = np.asarray(no_evict.finish_s)
    assert first[2] >= min(finish[0], finish[1]) - 1e-9
    assert all(np.asarray(no_evict.columns().status) == COMPLETED)


def test_prefill_first_runs_a_prompt_longer_than_the_budget_alone():
    """Not starved behind decodes: a prompt over the budget gets a prefill step to itself."""
    cfg = EngineConfig(max_num_seqs=64, max_num_batched_tokens=512, block_size=16,
                       num_blocks=100_000, max_model_len=100_000, request_timeout_s=1e9,
                       batching="prefill_first")
    table = _run_replica(cfg, [0.0, 0.01], [100, 2000], [400, 2])
    long_prefill = StepCost(HW).step_s(0, 0.0, [(2000, 0)])
    # Request 0 is still decoding (400 tokens take far longer than one step) when request 1's
    # long prompt runs: its first token comes before request 0 finishes.
    assert table.first_token_s[1] < table.finish_s[0]
    assert table.first_token_s[1] - 0.01 <= long_prefill + 2 * StepCost(HW).decode_step_s(1, 500)


@settings(max_examples=40, deadline=None)
@given(workload=workloads, timeout_s=st.sampled_from([0.05, 1e9]))
def test_waiting_prompt_tokens_is_the_sum_over_the_waiting_queue(workload, timeout_s):
    # The scrape's prefill-tokens-waiting reads this running sum instead of walking the
    # queue: it must equal the walk after every event, through preemptions (a small cache
    # puts requests back at the head) and timeouts (drops from the head).
    arrivals, prompts, outputs = workload
    blocks = max(math.ceil((p + o) / 16) + 2 for p, o in zip(prompts, outputs, strict=True)) + 40
    cfg = EngineConfig(max_num_seqs=8, max_num_batched_tokens=512, block_size=16,
                       num_blocks=blocks, max_model_len=100_000, request_timeout_s=timeout_s)
    sim, _table, replica = _replica_fed(cfg, arrivals, prompts, outputs)
    while sim.peek_s() < math.inf:
        sim.run(until_s=sim.peek_s())
        assert replica.queue.prompt_tokens == sum(prompts[rid] for rid in replica.waiting_rids())
    replica.evict()
    assert replica.queue.prompt_tokens == 0


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["append", "pop", "pop", "front"]), min_size=150, max_size=400))
def test_the_waiting_queue_is_a_deque(ops):
    # rids[head:] with its consumed prefix dropped now and then must read as a deque through
    # appends, pops from the head and preempted requests put back at the head, and its prompt
    # token sum must follow it.
    from collections import deque

    queue = WaitingQueue()
    model: deque[int] = deque()
    for i, op in enumerate(ops):
        if op == "append":
            queue.append(i, i % 7, False)
            model.append(i)
        elif op == "front":
            queue.push_front(i, i % 7, 0)
            model.appendleft(i)
        elif model:
            queue.pop_first(model.popleft() % 7)
        assert queue.in_order() == list(model)
        assert queue.count() == len(model)
        assert queue.prompt_tokens == sum(rid % 7 for rid in model)


many_short = workloads_of((70, 160), 3, 600, 30)


@settings(max_examples=40, deadline=None)
@given(workload=many_short, small_kv=st.booleans())
def test_the_running_list_holds_exactly_the_admitted_unfinished_requests(workload, small_kv):
    # `running` keeps finished entries until they are half the list: after every event its
    # live entries must be exactly the requests admitted and not finished (nor put back in the
    # waiting queue by a preemption), counted by num_running, and the list must stay within
    # its compaction bound; enough requests pass through 8 seats to compact it several times.
    arrivals, prompts, outputs = workload
    blocks = (max(math.ceil((p + o) / 16) + 2 for p, o in zip(prompts, outputs, strict=True))
              + 4) if small_kv else 100_000
    cfg = EngineConfig(max_num_seqs=8, max_num_batched_tokens=512, block_size=16,
                       num_blocks=blocks, max_model_len=100_000, request_timeout_s=1e9)
    sim, table, replica = _replica_fed(cfg, arrivals, prompts, outputs)
    compacted = False
    while sim.peek_s() < math.inf:
        before = len(replica.running.rids)
        sim.run(until_s=sim.peek_s())
        compacted |= len(replica.running.rids) < before - 1
        finish_s = table.columns().finish_s
        waiting = set(replica.waiting_rids())
        expected = {rid for rid, arrival_s in enumerate(arrivals)
                    if arrival_s <= sim.now_s and np.isnan(finish_s[rid]) and rid not in waiting}
        assert set(replica.running_rids()) == expected
        assert replica.num_running == len(expected)
        assert len(replica.running.rids) < 2 * replica.num_running + 64
        assert set(replica.running.prefilling) <= expected
    assert compacted or len(arrivals) < 80
    assert replica.num_running == 0 and (table.columns().status == COMPLETED).all()
