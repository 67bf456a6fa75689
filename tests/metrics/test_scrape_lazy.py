"""What the scrape defers must read as if it had been done at the scrape: the pods a controller
reads later are the pods as scraped (not as the slots are now), the histogram binned on read is
the one binned batch by batch, and the token means from prefix sums are the slice sums."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.cluster.state import ClusterState
from gpuscale.metrics.samples import PodSample, PoolScrape
from gpuscale.metrics.scrape import Scraper
from gpuscale.metrics.store import (
    GPU_UTIL,
    KV_USAGE,
    RUNNING,
    SCRAPED_POD_FIELDS,
    TTFT_BUCKETS_S,
    WAITING,
    MetricsStore,
    PodMetrics,
    scraped_pod,
)
from gpuscale.serving.requests_table import RequestTable
from gpuscale.workloads.base import Requests


@dataclass
class _Slot:
    pod: SimpleNamespace
    replica: object | None = None
    state: str = "loading"


@dataclass
class _Pool:
    """A deployment as the scrape sees it, its slots changed by hand between scrapes."""

    slots: list[_Slot] = field(default_factory=list)
    desired: int = 0
    gateway: list = field(default_factory=list)
    ready: list = field(default_factory=list)
    hw: SimpleNamespace = field(default_factory=lambda: SimpleNamespace(tp=2))

    def num_ready(self) -> int:
        return len(self.ready)

    def samples(self):
        out = []
        for i, slot in enumerate(self.slots):
            values: dict[str, float] = {}
            if slot.replica is not None:
                values = {WAITING: float(i), RUNNING: 1.0, KV_USAGE: 0.5, GPU_UTIL: 50.0}
            out.append((slot, values))
        return out

    def replica_samples(self, now_s, window_s, prev_busy, fb_used_mib, ttfts):
        """The `PoolScrape` of `samples` (sim/fleet.py's contract; no replica here has a
        TTFT to move to `ttfts`)."""
        pods, kv, util = [], [], []
        pending = starting = 0
        waiting = running = 0.0
        for slot, values in self.samples():
            bound = slot.pod.node_name is not None
            pending += not bound
            starting += bound and slot.replica is None
            if WAITING in values:
                waiting += values[WAITING]
                running += values[RUNNING]
                kv.append(values[KV_USAGE])
                util.append(values[GPU_UTIL])
            pods.append(PodSample(slot.pod.name, bound,
                                  slot.replica is not None and slot.state == "ready", values))
        return PoolScrape(pods, pending, starting, waiting, running, kv, util, 0)


def _expected(pool: _Pool) -> list[PodMetrics]:
    """The pods as the scrape built them eagerly before (metrics/scrape.py, round three)."""
    return [PodMetrics(s.pod.name, "Running" if s.pod.node_name is not None else "Pending",
                       s.replica is not None and s.state == "ready", values)
            for s, values in pool.samples()]


_STATES = st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), max_size=8)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_STATES, _STATES, st.booleans()), min_size=1, max_size=6))
def test_pods_read_later_are_the_pods_as_scraped(rounds):
    table = RequestTable(Requests(np.zeros(1), np.ones(1, dtype=np.int64),
                                  np.ones(1, dtype=np.int64)))
    prefill, decode = _Pool(), _Pool()
    scraper = Scraper(MetricsStore(15.0), {"prefill": prefill, "decode": decode}, table,
                      ClusterState(), 0.0)
    for now, (first, second, read_all_first) in enumerate(rounds):
        for pool, states in ((prefill, first), (decode, second)):
            pool.slots = [_Slot(SimpleNamespace(name=f"p{i}", node_name="n" if bound else None),
                                object() if serving else None, "ready" if ready else "loading")
                          for i, (bound, serving, ready) in enumerate(states)]
        expected = {"prefill": _expected(prefill), "decode": _expected(decode)}
        scraper.scrape(float(now))
        for pool in (prefill, decode):  # the slots move on before a controller reads
            for slot in pool.slots:
                slot.pod.node_name, slot.replica, slot.state = None, None, "gone"
        everyone = expected["prefill"] + expected["decode"]
        if read_all_first:
            assert scraper.pods(None) == tuple(everyone)
        assert scraper.pods("decode") == tuple(expected["decode"])
        assert scraper.pods("prefill") == tuple(expected["prefill"])
        assert scraper.pods("other") == ()
        assert scraper.store.latest == everyone
        assert scraper.pods(None)[len(expected["prefill"]):] == scraper.pods("decode")


@given(st.lists(st.lists(st.floats(0.0, 3000.0), max_size=30), max_size=12))
def test_histogram_binned_on_read_is_the_batch_by_batch_one(batches):
    store = MetricsStore(scrape_interval_s=15.0)
    counts = [0] * (len(TTFT_BUCKETS_S) + 1)
    for i, values in enumerate(batches):
        store.observe_ttft(15.0 * i, list(values))
        for value in values:
            counts[bisect_left(TTFT_BUCKETS_S, value)] += 1
    assert store.ttft_counts.tolist() == counts
    assert store.ttft_counts.tolist() == counts  # a second read bins nothing twice


@given(st.lists(st.tuples(st.integers(1, 100_000), st.integers(1, 5_000)), min_size=1,
                max_size=80), st.data())
def test_token_means_from_prefix_sums_are_the_slice_sums(rows, data):
    n = len(rows)
    table = RequestTable(Requests(np.zeros(n), np.array([p for p, _ in rows]),
                                  np.array([o for _, o in rows])))
    scraper = Scraper(MetricsStore(15.0), {}, table, ClusterState(), 0.0)
    arrived = 0
    for now in range(4):
        first, arrived = arrived, data.draw(st.integers(arrived, n))
        table.num_arrived = arrived
        scraper.scrape(15.0 * now)
        count = arrived - first
        prompt = sum(table.prompt_tokens[first:arrived])
        output = sum(table.output_tokens[first:arrived])
        assert scraper.signals["prompt_tokens_mean"] == ((prompt / count) if count else 0.0)
        assert scraper.signals["output_tokens_mean"] == ((output / count) if count else 0.0)
        assert type(scraper.signals["prompt_tokens_mean"]) is float


@given(st.text(max_size=5), st.sampled_from(["Running", "Pending"]), st.booleans(),
       st.dictionaries(st.sampled_from([WAITING, RUNNING, KV_USAGE]), st.floats(0, 10)))
def test_scraped_pod_is_the_dataclass_built_pod(name, phase, ready, values):
    assert tuple(PodMetrics.__dataclass_fields__) == SCRAPED_POD_FIELDS
    fast, slow = scraped_pod(name, phase, ready, values), PodMetrics(name, phase, ready, values)
    assert fast == slow and repr(fast) == repr(slow) and vars(fast) == vars(slow)
    assert type(fast) is PodMetrics and fast.values is values
    assert fast.requests == {} and fast.requests is not scraped_pod(name, phase, ready,
                                                                    values).requests


@dataclass
class _TtftFeed:
    ttft_observations: list[float] = field(default_factory=list)

    def take_ttft_observations(self) -> list[float]:
        taken, self.ttft_observations = self.ttft_observations, []
        return taken


def _signals_at_scrape(table: RequestTable, first: int, completed: list[int], interval_s: float,
                       ttft_p99_s: float) -> dict[str, float]:
    """The fleet signals as the scrape built them eagerly before (metrics/scrape.py, round
    three), one request at a time."""
    count = table.num_arrived - first
    prompt = sum(table.prompt_tokens[first:table.num_arrived])
    output = sum(table.output_tokens[first:table.num_arrived])
    tpots = [(table.finish_s[r] - table.first_token_s[r]) / (table.output_tokens[r] - 1)
             for r in completed if table.output_tokens[r] > 1]
    return {"request_rate_per_s": count / interval_s,
            "prompt_tokens_mean": (prompt / count) if count else 0.0,
            "output_tokens_mean": (output / count) if count else 0.0,
            "ttft_p99_s": ttft_p99_s,
            "tpot_mean_s": (sum(tpots) / len(tpots)) if tpots else 0.0,
            "gateway_queue": 0.0, "ready_replicas": 0.0}


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 50_000), st.integers(1, 3_000)), min_size=1,
                max_size=60), st.data())
def test_signals_read_later_are_the_signals_as_scraped(rows, data):
    """The signals are computed on first read, maybe scrapes later: they must be those of
    their scrape, whatever arrived, completed or was observed since."""
    n = len(rows)
    table = RequestTable(Requests(np.zeros(n), np.array([p for p, _ in rows]),
                                  np.array([o for _, o in rows])))
    feed = _TtftFeed()
    scraper = Scraper(MetricsStore(15.0), {}, table, ClusterState(), 0.0, ttft_sources=[feed])
    kept, expected = [], []
    arrived, done = 0, 0
    for now in range(5):
        first, arrived = arrived, data.draw(st.integers(arrived, n))
        table.num_arrived = arrived
        completed = list(range(done, data.draw(st.integers(done, arrived))))
        done = completed[-1] + 1 if completed else done
        for rid in completed:
            table.first_token_s[rid] = 15.0 * now + data.draw(st.floats(0.0, 5.0))
            table.complete(rid, table.first_token_s[rid] + data.draw(st.floats(0.0, 50.0)))
            table.recently_completed.append(rid)
        feed.ttft_observations = data.draw(st.lists(st.floats(0.0, 100.0), max_size=5))
        scraper.scrape(15.0 * now)
        kept.append(scraper.signals)
        expected.append(_signals_at_scrape(table, first, completed, 15.0,
                                           scraper.store.ttft_p99_s))
        if data.draw(st.booleans()):  # some are read at their scrape, some only later
            assert dict(scraper.signals) == expected[-1]
    for i in data.draw(st.permutations(range(len(kept)))):
        assert dict(kept[i]) == expected[i]
        assert tuple(kept[i]) == tuple(expected[i]) and len(kept[i]) == len(expected[i])
        assert kept[i]["tpot_mean_s"] == expected[i]["tpot_mean_s"]
        assert kept[i].get("absent") is None
