"""The collector's per-engine request counters: an engine keeps counting across scrapes,
every pool's do (P/D), and a new engine on a pod starts from 0 (a restarted vLLM)."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace

import numpy as np

from gpuscale.metrics.prometheus import SimulatedPrometheus
from gpuscale.serving.replica import ReplicaEvents
from gpuscale.serving.requests_table import RequestTable
from gpuscale.workloads.base import Requests


class FakePool:
    def __init__(self, name: str) -> None:
        self.name = name
        self.desired = 1
        self.gateway: deque = deque()
        self.logs: list[tuple[str, ReplicaEvents]] = []

    def engine_events(self):
        return self.logs


def _table(n: int = 50) -> RequestTable:
    table = RequestTable(Requests(np.arange(n, dtype=float), np.full(n, 100), np.full(n, 10)))
    for rid in range(n):
        table.first_token_s_view[rid] = rid + 0.5
        table.complete(rid, rid + 2.0)
    return table


def _prometheus() -> SimulatedPrometheus:
    return SimulatedPrometheus(origin_ms=0, namespace="ns", model_name="m", engine_kind="vllm",
                               max_model_len=4096, gpu_model="H100",
                               wanted=frozenset({"vllm:request_success_total"}),
                               evaluation_interval_s=60)


def _success(prometheus: SimulatedPrometheus, pod: str, t_s: float) -> float:
    rows = prometheus.engine.instant_at(
        f'vllm:request_success_total{{pod="{pod}", finished_reason="stop"}}', t_s).rows()
    return rows[0][1]


def _scrape(prometheus, pools, t_s, table, rid) -> None:
    for pool in pools:
        for _, log in pool.logs:
            log.completions.append(rid)
    cluster = SimpleNamespace(nodes={}, pods={})
    prometheus.collect(t_s, {p.name: p for p in pools}, {p.name: [] for p in pools}, cluster,
                       table)


def test_every_pool_keeps_counting():
    table, prometheus = _table(), _prometheus()
    prefill, decode = FakePool("prefill"), FakePool("decode")
    prefill.logs = [("p-1", ReplicaEvents())]
    decode.logs = [("d-1", ReplicaEvents())]
    for k in range(3):
        _scrape(prometheus, [prefill, decode], 15.0 * (k + 1), table, k)
    assert _success(prometheus, "p-1", 45.0) == _success(prometheus, "d-1", 45.0) == 3.0


def test_a_new_engine_on_a_pod_starts_from_zero():
    table, prometheus = _table(), _prometheus()
    pool = FakePool("serve")
    pool.logs = [("s-1", ReplicaEvents())]
    _scrape(prometheus, [pool], 15.0, table, 0)
    _scrape(prometheus, [pool], 30.0, table, 1)
    old_id = id(pool.logs[0][1])
    pool.logs = []
    # The engine restarts: CPython tends to give the new event log the old one's address,
    # which must not carry the old counters over.
    fresh = [ReplicaEvents() for _ in range(64)]
    reused = next((log for log in fresh if id(log) == old_id), fresh[0])
    pool.logs = [("s-1", reused)]
    _scrape(prometheus, [pool], 45.0, table, 2)
    assert _success(prometheus, "s-1", 30.0) == 2.0
    assert _success(prometheus, "s-1", 45.0) == 1.0
