"""`router: prefix_aware`: llm-d's weighted scorers (cached prefix share 3, short queue 2, free
KV cache 2), the best total wins, load breaks the tie."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.serving.prefix_cache import PrefixCache
from gpuscale.serving.requests_table import RequestTable
from gpuscale.serving.router import ROUTERS, PrefixAwareRouter, make_router
from gpuscale.workloads.base import Requests
from gpuscale.workloads.prefix_blocks import ChainInterner


def _table() -> RequestTable:
    chains = ChainInterner()
    rows = [[1, 2, 3, 8], [4, 5], [1, 2, 3, 8], [4, 9], [7]]
    for row in rows:
        chains.add(row)
    n = len(rows)
    return RequestTable(Requests(np.zeros(n), np.full(n, 2048, np.int64),
                                 np.ones(n, np.int64), chains.build(512)))


def _replica(table: RequestTable, served: list[int], waiting: int = 0, running: int = 0,
             kv: float = 0.0):
    cache = PrefixCache(table, 16, 10**6)
    for rid in served:
        cache.acquire(rid, 2048, 0.0)
        cache.scheduled(rid, 2048)
        cache.release(rid, 0.0)
    return SimpleNamespace(prefix_cache=cache, num_waiting=lambda: waiting,
                           outstanding=lambda: waiting + running, kv_usage_frac=lambda _now: kv,
                           sim=SimpleNamespace(now_s=0.0))


def test_a_cached_prefix_wins_between_equally_loaded_replicas():
    table = _table()
    idle, holder_of_1, holder_of_0 = (_replica(table, []), _replica(table, [1]),
                                      _replica(table, [0]))
    router = ROUTERS["prefix_aware"]()
    assert router.pick([idle, holder_of_1, holder_of_0], 2) is holder_of_0  # 4 of 4 units
    assert router.pick([idle, holder_of_1, holder_of_0], 3) is holder_of_1  # 1 of 4 ([4])


def test_a_whole_prefix_hit_does_not_outweigh_the_longest_queue_and_a_full_cache():
    """Issue 28: the old router sent every request of a conversation to the replica holding
    its prefix however busy (0 % SLO, half the requests dropped on a long-prompt trace)."""
    table = _table()
    swamped_holder = _replica(table, [0], waiting=40, running=60, kv=1.0)
    idle = _replica(table, [], waiting=0, running=0, kv=0.0)
    assert ROUTERS["prefix_aware"]().pick([swamped_holder, idle], 2) is idle
    # Half-loaded, the hit wins again: 3 x 1 + 2 x 0 + 2 x 0.5 = 4 > 0 + 2 + 2 x 0.6.
    busy_holder = _replica(table, [0], waiting=10, running=20, kv=0.5)
    light = _replica(table, [], waiting=0, running=5, kv=0.4)
    assert ROUTERS["prefix_aware"]().pick([busy_holder, light], 2) is busy_holder


def test_no_cached_prefix_anywhere_goes_by_queue_and_kv_then_outstanding():
    table = _table()
    busy = _replica(table, [0], waiting=4, kv=0.5)
    light = _replica(table, [], waiting=2, kv=0.5)
    lighter = _replica(table, [1], waiting=1, kv=0.5)
    router = ROUTERS["prefix_aware"]()
    assert router.pick([busy, light, lighter], 4) is lighter
    assert router([busy, light, lighter]) is lighter  # without the request: load only
    same_a, same_b = _replica(table, [], running=3), _replica(table, [], running=1)
    assert router.pick([same_a, same_b], 4) is same_b  # equal scores: fewer outstanding


def test_replicas_without_a_cache_count_as_no_match():
    table = _table()
    plain = SimpleNamespace(prefix_cache=None, num_waiting=lambda: 0, outstanding=lambda: 0,
                            kv_usage_frac=lambda _now: 0.0, sim=SimpleNamespace(now_s=0.0))
    holder = _replica(table, [0])
    assert ROUTERS["prefix_aware"]().pick([plain, holder], 2) is holder
    assert ROUTERS["prefix_aware"]().pick([plain, holder], 4) is plain


def test_weights_are_the_knob():
    table = _table()
    holder = _replica(table, [0], waiting=5, kv=0.5)
    idle = _replica(table, [])
    assert make_router("prefix_aware").pick([holder, idle], 2) is idle  # 3+0+1 < 0+2+2
    prefix_only = make_router("prefix_aware", (1.0, 0.0, 0.0))
    assert isinstance(prefix_only, PrefixAwareRouter)
    assert prefix_only.pick([holder, idle], 2) is holder
    assert make_router("prefix_aware", (0.0, 1.0, 1.0)).pick([holder, idle], 2) is idle


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50),
                          st.floats(0, 1, allow_nan=False)), min_size=2, max_size=8))
def test_without_cached_prefixes_the_pick_is_never_more_loaded_on_both_signals(loads):
    """Never worse than load balancing where there is nothing to hit: the chosen replica is
    not beaten on both its queue and its KV usage by another one."""
    table = _table()
    replicas = [_replica(table, [], waiting=w, running=r, kv=kv) for w, r, kv in loads]
    chosen = ROUTERS["prefix_aware"]().pick(replicas, 4)
    for other in replicas:
        dominated = other.num_waiting() < chosen.num_waiting() and \
            other.kv_usage_frac(0) < chosen.kv_usage_frac(0)
        assert not dominated


def test_match_frac_counts_the_prompts_blocks_a_trailing_partial_one_included():
    table = _table()
    cache = _replica(table, [0]).prefix_cache
    assert cache.match_frac(2) == pytest.approx(1.0)  # 4 cached units of 2,048 / 512
    assert cache.match_frac(4) == 0.0
