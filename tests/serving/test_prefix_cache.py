"""The prefix cache inside the KV pool: vLLM V1's chained hits, LRU of free blocks, last block
recomputed; and the replica skipping the prefill it saves."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.catalog import get_gpu, get_model
from gpuscale.catalog.specs import Precision
from gpuscale.core import Simulation
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.serving.prefix_cache import PrefixCache, PrefixCacheStats
from gpuscale.serving.replica import EngineConfig, Replica
from gpuscale.serving.requests_table import RequestTable
from gpuscale.workloads.base import Requests
from gpuscale.workloads.prefix_blocks import ChainInterner

UNIT = 512  # Mooncake's hashed block, tokens
BLOCK = 16  # engine block, tokens: one unit = 32 engine blocks


def _table(prompts: list[int], hashes: list[list[int]], arrivals: list[float] | None = None,
           outputs: list[int] | None = None) -> RequestTable:
    chains = ChainInterner()
    for row in hashes:
        chains.add(row)
    n = len(prompts)
    requests = Requests(np.asarray(arrivals if arrivals is not None else [0.0] * n, float),
                        np.asarray(prompts, np.int64),
                        np.asarray(outputs if outputs is not None else [1] * n, np.int64),
                        chains.build(UNIT))
    return RequestTable(requests)


def _serve(cache: PrefixCache, rid: int, num_tokens: int, used_blocks: float = 0.0) -> int:
    """Admit, compute the whole prompt, finish: the cache's view of one request's life, with
    `used_blocks` held by other requests throughout."""
    hit = cache.acquire(rid, num_tokens, used_blocks=used_blocks + num_tokens / BLOCK)
    cache.scheduled(rid, num_tokens)
    cache.release(rid, used_blocks=used_blocks)
    return hit


def test_lru_evicts_the_least_recently_freed_unit_tail_first():
    # A pool of 7 units' worth of blocks (224). A frees [a0, a1] tail first (a1 is older);
    # B runs, and when it ends other requests hold 4 units' worth (128 blocks): room for 3
    # free units. B frees [b0, b1]: 4 units for 3 places, so a1 goes and a0 stays.
    table = _table([1025, 1025, 1025], [[1, 2], [3, 4], [1, 2]])
    cache = PrefixCache(table, BLOCK, num_blocks=7 * UNIT // BLOCK)
    assert _serve(cache, 0, 1025) == 0
    assert len(cache.free) == 2
    assert cache.acquire(1, 1025, used_blocks=1025 / BLOCK) == 0
    cache.scheduled(1, 1025)
    assert len(cache.free) == 2
    cache.release(1, used_blocks=4 * UNIT // BLOCK)
    assert len(cache.free) == 3
    assert cache.match_units(2) == 1  # a0 hits, a1 was evicted
    # A new allocation that needs the room evicts whatever does not fit beside it.
    assert cache.acquire(2, 1025, used_blocks=7 * UNIT // BLOCK - 1.5 * UNIT / BLOCK) == UNIT
    assert len(cache.free) == 1


def test_an_allocation_evicts_free_units_it_needs_the_room_of():
    table = _table([1025, 1025], [[1, 2], [3, 4]])
    cache = PrefixCache(table, BLOCK, num_blocks=3 * UNIT // BLOCK)
    _serve(cache, 0, 1025)
    assert len(cache.free) == 2
    cache.acquire(1, 1025, used_blocks=1025 / BLOCK)  # 65 of 96 blocks: 0.97 units left
    assert len(cache.free) == 0


def test_a_hit_moves_a_unit_to_the_recently_used_end():
    table = _table([513, 513, 513, 513, 513], [[1], [2], [1], [3], [2]])
    # 97 blocks, 33 in use whenever the cache looks: room for 2 free units throughout.
    cache = PrefixCache(table, BLOCK, num_blocks=97)

    def serve(rid: int) -> int:
        hit = cache.acquire(rid, 513, used_blocks=33)
        cache.scheduled(rid, 513)
        cache.release(rid, used_blocks=33)
        return hit

    serve(0)  # free: [1]
    serve(1)  # free: [1, 2]
    assert serve(2) == UNIT  # 1 hits and becomes the newest: [2, 1]
    serve(3)  # 3 arrives, the oldest (2) is evicted: [1, 3]
    assert serve(4) == 0


def test_block_i_hits_only_if_blocks_before_it_hit():
    # Same trace hash at position 1, different block 0: chained ids differ, no hit. A request
    # sharing only block 0 hits that block alone.
    table = _table([2048, 2048, 2048], [[10, 11, 12, 13], [20, 11, 12, 13], [10, 99, 12, 13]])
    cache = PrefixCache(table, BLOCK, num_blocks=10**6)
    _serve(cache, 0, 2048)
    assert cache.match_units(1) == 0
    assert cache.match_units(2) == 1
    assert _serve(cache, 2, 2048) == UNIT


def test_a_whole_prompt_hit_still_computes_its_last_block():
    # vLLM caps the hit at num_tokens - 1 in whole engine blocks (kv_cache_manager.py
    # get_computed_blocks): a 1024-token prompt that hits entirely computes its last 16.
    table = _table([1024, 1024], [[1, 2], [1, 2]])
    cache = PrefixCache(table, BLOCK, num_blocks=10**6)
    _serve(cache, 0, 1024)
    assert cache.match_units(1) == 2
    assert _serve(cache, 1, 1024) == 1024 - BLOCK
    # With 1-token blocks exactly one token is recomputed.
    one = PrefixCache(table, 1, num_blocks=10**7)
    _serve(one, 0, 1024)
    assert _serve(one, 1, 1024) == 1023


def test_a_trailing_partial_unit_is_never_cached():
    table = _table([700, 700], [[1, 2], [1, 2]])  # the second unit holds only 188 tokens
    cache = PrefixCache(table, BLOCK, num_blocks=10**6)
    _serve(cache, 0, 700)
    assert len(cache) == 1 and _serve(cache, 1, 700) == UNIT


def test_blocks_are_hits_once_scheduled_and_held_ones_are_never_evicted():
    table = _table([2048, 2048], [[1, 2, 3, 4], [1, 2, 3, 4]])
    cache = PrefixCache(table, BLOCK, num_blocks=4 * UNIT // BLOCK)
    cache.acquire(0, 2048, used_blocks=2048 / BLOCK)
    cache.scheduled(0, 1024)  # the first chunk: 2 units cached, held by request 0
    assert cache.match_units(1) == 2
    cache.release(0, used_blocks=10**6)  # the pool is full: its freed units go at once
    assert len(cache) == 0


def test_counters_are_tokens_as_vllm_counts_them():
    totals = PrefixCacheStats()
    table = _table([1024, 1536], [[1, 2], [1, 2, 3]])
    cache = PrefixCache(table, BLOCK, num_blocks=10**6, totals=totals)
    _serve(cache, 0, 1024)
    _serve(cache, 1, 1536)
    assert (cache.stats.queries_tokens, cache.stats.hits_tokens) == (2560, 1024)
    assert (totals.queries_tokens, totals.hits_tokens) == (2560, 1024)
    assert totals.hit_rate == 1024 / 2560
    assert PrefixCacheStats().hit_rate is None


ops = st.lists(st.tuples(st.sampled_from(["admit", "chunk", "release"]),
                         st.integers(0, 5), st.integers(1, 4000), st.floats(0, 400)),
               max_size=60)


@settings(max_examples=150, deadline=None)
@given(ops=ops, num_blocks=st.integers(0, 300),
       rows=st.lists(st.lists(st.integers(0, 3), max_size=8), min_size=6, max_size=6))
def test_free_units_fit_the_pool_and_hits_never_exceed_queries(ops, num_blocks, rows):
    """Invariants: after every admission or release the free cached units fit beside the
    blocks in use; a hit is at most num_tokens - 1; hits <= queries; reference counts equal
    the holders."""
    prompts = [max(1, 512 * len(r) + 100) for r in rows]
    cache = PrefixCache(_table(prompts, rows), BLOCK, num_blocks=num_blocks)
    held: set[int] = set()
    for op, rid, tokens, used in ops:
        if op == "admit" and rid not in held:
            hit = cache.acquire(rid, tokens, used_blocks=used)
            assert 0 <= hit <= tokens - 1
            held.add(rid)
        elif op == "chunk" and rid in held:
            cache.scheduled(rid, tokens)
            continue
        elif op == "release":
            cache.release(rid, used_blocks=used)
            held.discard(rid)
        else:
            continue
        assert len(cache.free) * UNIT / BLOCK <= max(0.0, num_blocks - used) + 1e-9
        assert cache.stats.hits_tokens <= cache.stats.queries_tokens
        assert sum(cache.ref.values()) == sum(cache.held.values())
        assert not set(cache.ref) & set(cache.free)


# -- the replica -------------------------------------------------------------------------------
HW = ReplicaHardware(get_gpu("H100-SXM"), get_model("Llama-3.1-8B"), Precision.BF16,
                     Precision.BF16, 1)
CFG = EngineConfig(max_num_seqs=64, max_num_batched_tokens=2048, block_size=BLOCK,
                   num_blocks=100_000, max_model_len=100_000, request_timeout_s=1e9)


def _replay(table: RequestTable, cached: bool) -> tuple[RequestTable, Replica]:
    sim = Simulation()
    replica = Replica("r0", HW, CFG, sim, table)
    if cached:
        replica.prefix_cache = PrefixCache(table, CFG.block_size, CFG.num_blocks)
    for rid, t in enumerate(table.arrival_s):
        sim.schedule(t, 10, replica.enqueue, rid, t)
    sim.run()
    return table, replica


def test_a_cached_prefix_is_not_prefilled_again():
    def trace():
        return _table([8192, 8192], [list(range(16)), list(range(16))], arrivals=[0.0, 30.0],
                      outputs=[4, 4])

    cold, _ = _replay(trace(), cached=False)
    warm, replica = _replay(trace(), cached=True)
    ttft = [warm.first_token_s[i] - warm.arrival_s[i] for i in (0, 1)]
    cold_ttft = cold.first_token_s[1] - cold.arrival_s[1]
    assert ttft[0] == cold.first_token_s[0] - cold.arrival_s[0]  # the first one computes all
    assert ttft[1] < 0.2 * cold_ttft  # 8176 of 8192 tokens come from the cache
    assert replica.prefix_cache is not None
    assert replica.prefix_cache.stats.hits_tokens == 8192 - BLOCK
    assert not replica.prefix_cache.held  # everything finished: every unit is free, cached
    assert len(replica.prefix_cache.free) == 16


def test_a_preempted_requests_lookup_is_counted_apart_as_vllm_does():
    table = _table([1024, 1024], [[1, 2], [1, 2]])
    cache = PrefixCache(table, BLOCK, num_blocks=10**6)
    _serve(cache, 0, 1024)
    table.num_preemptions[1] = 1  # it was preempted once: vLLM's `preempted` lookup
    _serve(cache, 1, 1100)
    stats = cache.stats
    assert (stats.queries_tokens, stats.hits_tokens) == (1024, 0)
    assert (stats.preempted_queries_tokens, stats.preempted_hits_tokens) == (1100, 1024)
    assert stats.hit_rate == 0.0


class _CheckedCache(PrefixCache):
    """Checks, every time it makes room, that free cached units fit beside the KV in use."""

    __slots__ = ()

    def _trim(self, used_blocks: float) -> None:
        super()._trim(used_blocks)
        assert len(self.free) * self.blocks_per_unit <= max(0.0, self.num_blocks - used_blocks)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 20), st.integers(1, 6), st.integers(0, 2),
                          st.integers(1, 300)), min_size=1, max_size=25),
       st.integers(200, 1200))
def test_a_replica_under_kv_pressure_keeps_the_cache_inside_its_pool(reqs, num_blocks):
    """Through admissions, chunks, preemptions and completions of a real replica: free cached
    units always fit beside the KV in use, every request finishes, and nothing stays held."""
    reqs = sorted(reqs)
    prompts = [512 * units + 7 for _, units, _, _ in reqs]
    rows = [[family * 100 + i for i in range(units)] for _, units, family, _ in reqs]
    table = _table(prompts, rows, arrivals=[t for t, *_ in reqs], outputs=[o for *_, o in reqs])
    cfg = EngineConfig(max_num_seqs=16, max_num_batched_tokens=1024, block_size=BLOCK,
                       num_blocks=num_blocks, max_model_len=100_000, request_timeout_s=1e9)
    sim = Simulation()
    replica = Replica("r0", HW, cfg, sim, table)
    cache = _CheckedCache(table, BLOCK, num_blocks)
    replica.prefix_cache = cache
    for rid, t in enumerate(table.arrival_s):
        sim.schedule(t, 10, replica.enqueue, rid, t)
    sim.run()
    assert table.num_completed + table.num_dropped == len(table)
    assert not cache.held and not cache.ref
    assert cache.stats.hits_tokens <= cache.stats.queries_tokens
