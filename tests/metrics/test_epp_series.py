"""The llm-d EPP's pool saturation and in-flight load series, as its utilization detector and
in-flight load producer compute them (llm-d-router saturationdetector/utilization/detector.go,
dataproducer/inflightload/producer.go), and the InferencePool name a query pins."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace

import numpy as np
import pytest

from gpuscale.metrics.prometheus import SimulatedPrometheus
from gpuscale.metrics.store import KV_USAGE, RUNNING, WAITING
from gpuscale.serving.requests_table import RequestTable
from gpuscale.workloads.base import Requests

WANTED = frozenset({"llm_d_epp_flow_control_pool_saturation", "llm_d_epp_inflight_tokens",
                    "llm_d_epp_inflight_requests"})


class Engine:
    def __init__(self, waiting: list[int], prefilling: list[int]) -> None:
        self.waiting, self.prefilling = waiting, prefilling

    def waiting_rids(self) -> list[int]:
        return list(self.waiting)


class Pool:
    def __init__(self, engines: dict[str, Engine]) -> None:
        self.name, self.desired, self.gateway = "decode", len(engines), deque()
        self.slots = {n: SimpleNamespace(replica=e) for n, e in engines.items()}

    def engine_events(self):
        return []


def _collect(raw: list, engines: dict[str, Engine], table: RequestTable):
    prometheus = SimulatedPrometheus(origin_ms=0, namespace="ns", model_name="m",
                                     engine_kind="vllm", max_model_len=4096, gpu_model="H100",
                                     wanted=WANTED, evaluation_interval_s=60)
    prometheus.collect(15.0, {"all": Pool(engines)}, {"all": raw},
                       SimpleNamespace(nodes={}, pods={}), table)
    return prometheus.engine


def _pod(name: str, waiting: float, running: float, kv: float) -> tuple:
    return (name, True, True, {WAITING: waiting, RUNNING: running, KV_USAGE: kv})


def _value(engine, query: str) -> float:
    rows = engine.instant_at(query, 15.0).rows()
    assert len(rows) == 1, rows
    return rows[0][1]


def test_pool_saturation_is_the_mean_roofline_over_the_endpoints():
    table = RequestTable(Requests(np.zeros(1), np.full(1, 10), np.full(1, 1)))
    raw = [_pod("a", waiting=10, running=3, kv=0.4), _pod("b", waiting=0, running=2, kv=0.6)]
    engine = _collect(raw, {}, table)
    # a: max(10 / 5, 0.4 / 0.8) = 2; b: max(0, 0.6 / 0.8) = 0.75
    assert _value(engine, "llm_d_epp_flow_control_pool_saturation") == pytest.approx(1.375)


def test_a_pool_without_endpoints_is_saturated():
    table = RequestTable(Requests(np.zeros(1), np.full(1, 10), np.full(1, 1)))
    engine = _collect([("loading", False, False, {})], {}, table)
    assert _value(engine, "llm_d_epp_flow_control_pool_saturation") == 1.0


def test_inflight_tokens_are_the_prompts_without_a_first_token():
    table = RequestTable(Requests(np.zeros(5), np.array([100, 200, 400, 800, 1600]),
                                  np.full(5, 10)))
    table.first_token_s_view[3] = 1.0  # preempted after its first token: released already
    engines = {"a": Engine(waiting=[0, 3], prefilling=[1]), "b": Engine([], [2])}
    raw = [_pod("a", waiting=2, running=1, kv=0.1), _pod("b", waiting=0, running=4, kv=0.1)]
    engine = _collect(raw, engines, table)
    query = 'llm_d_epp_inflight_tokens{producer_name="inflight-load-producer",endpoint_name="%s"}'
    assert _value(engine, query % "a") == 300.0 and _value(engine, query % "b") == 400.0
    assert _value(engine, 'sum(llm_d_epp_inflight_requests)') == 7.0  # waiting + running
