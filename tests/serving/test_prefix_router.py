"""`router: prefix_aware`: the longest cached prefix wins, load breaks the tie."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from gpuscale.serving.prefix_cache import PrefixCache
from gpuscale.serving.requests_table import RequestTable
from gpuscale.serving.router import ROUTERS
from gpuscale.workloads.base import Requests
from gpuscale.workloads.prefix_blocks import ChainInterner


def _table() -> RequestTable:
    chains = ChainInterner()
    rows = [[1, 2, 3], [4, 5], [1, 2, 3], [4, 9], [7]]
    for row in rows:
        chains.add(row)
    n = len(rows)
    return RequestTable(Requests(np.zeros(n), np.full(n, 2000, np.int64),
                                 np.ones(n, np.int64), chains.build(512)))


def _replica(table: RequestTable, load: int, served: list[int]):
    cache = PrefixCache(table, 16, 10**6)
    for rid in served:
        cache.acquire(rid, 2000, 0.0)
        cache.scheduled(rid, 2000)
        cache.release(rid, 0.0)
    return SimpleNamespace(prefix_cache=cache, outstanding=lambda: load)


def test_the_replica_with_the_longest_cached_prefix_wins_over_a_lighter_one():
    table = _table()
    idle, holder_of_1, holder_of_0 = (_replica(table, 0, []), _replica(table, 5, [1]),
                                      _replica(table, 9, [0]))
    router = ROUTERS["prefix_aware"]()
    assert router.pick([idle, holder_of_1, holder_of_0], 2) is holder_of_0  # 3 units cached
    assert router.pick([idle, holder_of_1, holder_of_0], 3) is holder_of_1  # 1 unit ([4])


def test_no_cached_prefix_anywhere_falls_back_to_least_outstanding():
    table = _table()
    busy, light, lighter = (_replica(table, 4, [0]), _replica(table, 2, []),
                            _replica(table, 1, [1]))
    router = ROUTERS["prefix_aware"]()
    assert router.pick([busy, light, lighter], 4) is lighter
    assert router([busy, light, lighter]) is lighter  # without the request: load only


def test_equal_prefixes_go_to_the_lighter_replica_then_the_first_ready():
    table = _table()
    a, b, c = _replica(table, 3, [0]), _replica(table, 1, [0]), _replica(table, 1, [0])
    router = ROUTERS["prefix_aware"]()
    assert router.pick([a, b, c], 2) is b


def test_replicas_without_a_cache_count_as_no_match():
    table = _table()
    plain = SimpleNamespace(prefix_cache=None, outstanding=lambda: 0)
    holder = _replica(table, 3, [0])
    assert ROUTERS["prefix_aware"]().pick([plain, holder], 2) is holder
    assert ROUTERS["prefix_aware"]().pick([plain, holder], 4) is plain
