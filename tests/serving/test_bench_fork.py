"""The oracle probe's forked once-and-twice replay gives exactly what two separate runs give."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.catalog import get_gpu, get_model
from gpuscale.catalog.specs import Precision
from gpuscale.core import Simulation
from gpuscale.core.fork import attribute_names, copy_attributes, fork_sim
from gpuscale.serving import bench
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.serving.replica import EngineConfig, Replica
from gpuscale.serving.requests_table import RequestColumns, RequestTable
from gpuscale.workloads.base import Requests

HW = ReplicaHardware(get_gpu("H100-SXM"), get_model("Llama-3.1-8B"), Precision.BF16,
                     Precision.BF16, 1)
_COLUMNS = ("arrival_s", "prompt_tokens", "output_tokens", "first_token_s", "finish_s",
            "status", "num_preemptions", "num_retries")


def _assert_same(got: RequestColumns, want: RequestColumns) -> None:
    for name in _COLUMNS:
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), name
    assert got.num_arrived == want.num_arrived


def _separate(cfg: EngineConfig, prompts: np.ndarray, outputs: np.ndarray
              ) -> tuple[RequestColumns, RequestColumns]:
    once = bench.run_table(HW, cfg, np.zeros(len(prompts)), prompts, outputs).columns()
    twice = bench.run_table(HW, cfg, np.zeros(2 * len(prompts)), np.concatenate([prompts] * 2),
                            np.concatenate([outputs] * 2)).columns()
    return once, twice


def _counting_forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    taken: list[int] = []
    fork = bench._fork

    def counted(*args):
        taken.append(1)
        return fork(*args)

    monkeypatch.setattr(bench, "_fork", counted)
    return taken


mixes = st.integers(1, 80).flatmap(lambda n: st.tuples(
    st.lists(st.integers(1, 4000), min_size=n, max_size=n),
    st.lists(st.integers(1, 400), min_size=n, max_size=n),
))
configs = st.builds(
    lambda seqs, budget, blocks, batching, admission, max_len: EngineConfig(
        max_num_seqs=seqs, max_num_batched_tokens=budget, block_size=16, num_blocks=blocks,
        max_model_len=max_len, request_timeout_s=math.inf, batching=batching,
        admission=admission),
    st.integers(1, 48), st.sampled_from([64, 512, 2048, 8192]),
    # Small caches preempt (recompute) and drop what never fits; large ones seat-bound.
    st.sampled_from([40, 120, 400, 100_000]),
    st.sampled_from(["chunked", "prefill_first", "whole_prompt"]),
    st.sampled_from(["max_utilization", "guaranteed_no_evict"]),
    # Prompts at or over max_model_len are dropped when they arrive (never queued).
    st.sampled_from([3000, 100_000]),
)


@settings(max_examples=120, deadline=None)
@given(mix=mixes, cfg=configs, from_template=st.booleans())
def test_fork_matches_two_separate_runs(mix, cfg, from_template):
    prompts, outputs = (np.asarray(column, np.int64) for column in mix)
    template = bench.twice_queued_table(prompts, outputs) if from_template else None
    once, twice = bench.offline_once_and_twice(HW, cfg, prompts, outputs, template=template)
    want_once, want_twice = _separate(cfg, prompts, outputs)
    _assert_same(once, want_once)
    _assert_same(twice, want_twice)
    if template is not None:  # copied, never run: the next config gets the same start
        _assert_same(template.columns(),
                     bench.twice_queued_table(prompts, outputs).columns())
        assert template.decode_g0 == bench.twice_queued_table(prompts, outputs).decode_g0


def test_a_template_of_another_mix_or_already_run_is_refused():
    cfg = EngineConfig(8, 512, 16, 1000, 100_000, math.inf)
    prompts, outputs = np.array([10, 20]), np.array([3, 4])
    with pytest.raises(ValueError, match="template"):
        bench.offline_once_and_twice(HW, cfg, prompts, outputs,
                                     template=bench.twice_queued_table(prompts[:1], outputs[:1]))
    used = bench.twice_queued_table(prompts, outputs)
    used.num_arrived = 1
    with pytest.raises(ValueError, match="template"):
        bench.offline_once_and_twice(HW, cfg, prompts, outputs, template=used)


@pytest.mark.parametrize("blocks", [300, 100_000])  # with preemptions, and seat-bound
def test_fork_is_taken_and_exact_on_a_long_mix(monkeypatch, blocks):
    rng = np.random.default_rng(7)
    prompts = rng.integers(1, 3000, 600)
    outputs = rng.integers(1, 400, 600)
    cfg = EngineConfig(max_num_seqs=32, max_num_batched_tokens=2048, block_size=16,
                       num_blocks=blocks, max_model_len=100_000, request_timeout_s=math.inf)
    forks = _counting_forks(monkeypatch)
    once, twice = bench.offline_once_and_twice(HW, cfg, prompts, outputs)
    assert 1 <= len(forks) <= 2  # the once run came from a fork, not a rerun
    want_once, want_twice = _separate(cfg, prompts, outputs)
    if blocks == 300:
        assert want_twice.num_preemptions.sum() > 0
    _assert_same(once, want_once)
    _assert_same(twice, want_twice)


def test_everything_admitted_at_once_runs_the_once_mix_on_its_own(monkeypatch):
    cfg = EngineConfig(max_num_seqs=64, max_num_batched_tokens=8192, block_size=16,
                       num_blocks=100_000, max_model_len=100_000, request_timeout_s=math.inf)
    prompts, outputs = np.array([10, 20, 30]), np.array([5, 50, 2])
    forks = _counting_forks(monkeypatch)
    once, twice = bench.offline_once_and_twice(HW, cfg, prompts, outputs)
    assert forks == []  # the second copy joined the first step: nothing shared to fork
    want_once, want_twice = _separate(cfg, prompts, outputs)
    _assert_same(once, want_once)
    _assert_same(twice, want_twice)


def test_a_forked_table_writes_its_own_columns():
    table = RequestTable(Requests(np.zeros(3), np.array([1, 2, 3]), np.array([4, 5, 6])))
    twin = RequestTable(bench._NO_REQUESTS)
    memo: dict[int, object] = {}
    copy_attributes(table, twin, memo)
    twin.complete(1, 2.5)
    assert twin.finish_s[1] == 2.5 and math.isnan(table.finish_s[1])
    assert twin.columns().status[1] == 1 and table.columns().status[1] == 0
    twin.decode_g0[0] = 7
    assert table.decode_g0[0] != 7
    assert set(attribute_names(RequestTable)) >= {"finish_s", "finish_s_view", "decode_g0"}


def test_fork_sim_refuses_pending_events_and_remaps_timer_owners():
    sim = Simulation()
    sim.schedule(1.0, 10, print)
    with pytest.raises(ValueError, match="pending events"):
        fork_sim(sim, Simulation(), {})
    sim = Simulation()
    table = RequestTable(Requests(np.zeros(1), np.array([100]), np.array([3])))
    replica = Replica("r0", HW, EngineConfig(8, 512, 16, 1000, 100_000, math.inf), sim, table)
    replica.enqueue(0, 0.0)  # plans a step: the replica's timer is pending
    twin_sim = Simulation(indexed_timers=sim._timers is not None)
    twin_table = RequestTable(bench._NO_REQUESTS)
    twin = Replica("r0", HW, replica.cfg, twin_sim, twin_table)
    memo: dict[int, object] = {id(sim): twin_sim, id(table): twin_table, id(replica): twin}
    copy_attributes(table, twin_table, memo)
    copy_attributes(replica, twin, memo)
    fork_sim(sim, twin_sim, memo)
    twin_sim.run()
    assert twin_table.num_completed == 1 and table.num_completed == 0
    sim.run()
    assert table.finish_s[0] == twin_table.finish_s[0]


def test_a_forked_replica_owns_its_parts():
    # The replica's queues, finish heap, KV budget and batch formation are objects of their
    # own: a fork copies each one (through its `fork_blank`), or the twin's steps would move
    # the original's.
    sim = Simulation()
    table = RequestTable(Requests(np.zeros(4), np.array([100, 200, 300, 400]),
                                  np.array([30, 3, 8, 5])))
    replica = Replica("r0", HW, EngineConfig(2, 512, 16, 1000, 100_000, math.inf), sim, table)
    for rid in range(4):
        replica.enqueue(rid, 0.0)
    sim.run(until_s=sim.peek_s())  # the first step is done: two decode, two wait
    twin_sim, twin_table, twin = bench._fork(sim, table, replica)
    parts = [name for name in attribute_names(Replica)
             if hasattr(getattr(replica, name, None), "fork_blank")]
    assert "finishes" in parts
    for name in parts:
        assert getattr(twin, name) is not getattr(replica, name), name
    assert twin.finishes.decode_g0 is twin_table.decode_g0
    # The batch formation works on its own replica's parts, the twin's on the twin's.
    formation = twin.formation
    assert formation.replica is twin and formation.table is twin_table
    assert formation.queue is twin.queue and formation.running is twin.running
    assert formation.kv is twin.kv and formation.step is twin.step
    assert formation.admission.kv is twin.kv
    twin_sim.run()
    assert twin_table.num_completed == 4 and table.num_completed == 0
    sim.run()
    assert np.array_equal(table.columns().finish_s, twin_table.columns().finish_s)
