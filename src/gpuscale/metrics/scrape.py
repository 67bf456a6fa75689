"""The metrics scrape: every `scrape_interval_s`, read each pod, publish the fleet signals and
record one series row.

What the scrape reads it reads through small protocols (a deployment's pods and replicas, the
request table, the cluster), so the engine that owns those objects only wires them here.
Per pod it writes one `PodMetrics` (the type every autoscaler reads); per role the latest
pods (a per-role scaler sees only its pool); fleet-wide the signals a planner reads
(`FLEET_SIGNALS`) and one `SeriesRow`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence, Sized
from typing import Any, NamedTuple, Protocol

import numpy as np

from gpuscale.cluster.objects import NodeState
from gpuscale.cluster.state import ClusterState
from gpuscale.metrics.billing import cost_usd
from gpuscale.metrics.prometheus import SimulatedPrometheus
from gpuscale.metrics.store import (
    MetricsStore,
    PodMetrics,
    PoolScrape,
    SeriesRow,
    scraped_pod,
)
from gpuscale.serving.requests_table import RequestTable


class PoolTotals(NamedTuple):
    """One scrape's sums over the deployments, read by the series row and the signals."""

    gateway_queue: int
    desired: int
    ready: int
    gpus_busy: int


class ScrapedPool(Protocol):
    """What the scrape needs of a deployment (sim.fleet.Fleet); read-only but for
    `replica_samples`, which moves the ready replicas' TTFT observations to the scrape, and
    `engine_events`, whose lists the run's Prometheus drains."""

    name: str

    @property
    def desired(self) -> int: ...

    def engine_events(self) -> list[tuple[str, Any]]: ...

    @property
    def gateway(self) -> Sized: ...

    @property
    def hw(self) -> Any: ...  # serving.performance.ReplicaHardware (its `tp` GPUs per replica)

    @property
    def slots(self) -> Mapping[str, Any]: ...  # pod name -> slot (`.replica`, the engine)

    def num_ready(self) -> int: ...

    def replica_samples(self, now_s: float, window_s: float, prev_busy: dict[str, float],
                        fb_used_mib: float, ttfts: list[float]) -> PoolScrape: ...


class TtftSource(Protocol):
    ttft_observations: list[float]


class Scraper:
    """One run's metrics pipeline; `scrape(now_s)` is the periodic scrape."""

    def __init__(self, store: MetricsStore, pools: Mapping[str, ScrapedPool],
                 table: RequestTable, cluster: ClusterState, fb_used_mib: float,
                 ttft_sources: Sequence[TtftSource] = ()) -> None:
        self.store = store
        self.pools = pools
        self.table = table
        self.cluster = cluster
        self.fb_used_mib = fb_used_mib
        self.ttft_sources = ttft_sources  # TTFTs seen outside the replicas (the KV transfer)
        # The run's Prometheus (metrics/prometheus.py), when some query or export reads series.
        self.prometheus: SimulatedPrometheus | None = None
        self.interval_s = store.scrape_interval_s
        self._raw_by_role: dict[str, list[tuple[str, bool, bool, dict[str, float]]]] = {}
        self.latest_by_role: dict[str, list[PodMetrics]] = {}  # built on first read
        self.signals: Mapping[str, float] = {}
        self._prev_busy: dict[str, float] = {}
        self._last_counts = (0, 0, 0)
        # Running totals of the prompt and output tokens in arrival order (the columns never
        # change), built at the first scrape.
        self._token_cumsums: tuple[np.ndarray, np.ndarray] | None = None

    def pods(self, role: str | None) -> tuple[PodMetrics, ...]:
        """The latest scrape's pods: every pool's (role None) or one role's."""
        if role is None:
            return tuple(self.store.latest)
        return tuple(self._role_pods(role))

    def _role_pods(self, role: str) -> list[PodMetrics]:
        built = self.latest_by_role.get(role)
        if built is None:
            raw = self._raw_by_role.get(role, ())
            built = self.latest_by_role[role] = [
                scraped_pod(name, "Running" if bound else "Pending", ready, values)
                for name, bound, ready, values in raw]
        return built

    def _all_pods(self) -> list[PodMetrics]:
        return [pod for role in self._raw_by_role for pod in self._role_pods(role)]

    def scrape(self, now_s: float) -> None:
        # What each pod looked like (name, bound, ready, series); the `PodMetrics` are built
        # from it when a controller first reads them (`pods`), as scrapes outnumber the ticks
        # that read them. Captured now: the slots move on after the scrape.
        raw_by_role: dict[str, list[tuple[str, bool, bool, dict[str, float]]]] = {}
        pending = starting = 0
        waiting = running = 0.0
        kv: list[float] = []
        util: list[float] = []
        role_rows: dict[str, tuple[float, float, float, float]] = {}
        observed: list[float] = []
        # The pools' gateway queues, desired and ready replicas and busy GPUs (integers).
        gateway_queue = desired = ready = gpus_busy = 0
        for source in self.ttft_sources:
            observed.extend(source.ttft_observations)
            source.ttft_observations = []
        for role, pool in self.pools.items():
            (raw, role_pending, role_starting, role_waiting, role_running, role_kv, role_util,
             role_busy) = pool.replica_samples(now_s, self.interval_s, self._prev_busy,
                                               self.fb_used_mib, observed)  # and the TTFTs
            raw_by_role[role] = raw
            pending += role_pending
            starting += role_starting
            # Request counts in floats: integers, so the sums are the same in any grouping.
            waiting += role_waiting
            running += role_running
            kv.extend(role_kv)
            util.extend(role_util)
            role_desired, role_ready = pool.desired, pool.num_ready()
            gateway_queue += len(pool.gateway)
            desired += role_desired
            ready += role_ready
            gpus_busy += pool.hw.tp * role_busy
            role_rows[role] = (float(role_desired), float(role_ready), role_waiting,
                               sum(role_kv) / len(role_kv) if role_kv else 0.0)
        totals = PoolTotals(gateway_queue, desired, ready, gpus_busy)
        if self.prometheus is not None:
            self.prometheus.collect(now_s, self.pools, raw_by_role, self.cluster, self.table)
        self._raw_by_role = raw_by_role
        self.latest_by_role = {}
        self.store.set_latest_source(self._all_pods)
        self.store.observe_ttft(now_s, observed)
        arrived = self.table.num_arrived
        self.signals = self._signals(arrived, totals)
        self.store.record_row(self._row(now_s, arrived, waiting, running, kv, util, starting,
                                        pending, role_rows, totals))

    def _row(self, now_s: float, arrived: int, waiting: float, running: float,
             kv: list[float], util: list[float], starting: int, pending: int,
             role_rows: dict[str, tuple[float, float, float, float]],
             totals: PoolTotals) -> SeriesRow:
        done = self.table.num_completed
        drops = self.table.num_dropped
        prev_arrived, prev_done, prev_drops = self._last_counts
        self._last_counts = (arrived, done, drops)
        # One pass over the nodes for the three integer columns (their sums in any order).
        nodes = self.cluster.nodes.values()
        nodes_ready = gpus_billed = gpus_allocated = 0
        for n in nodes:
            nodes_ready += n.state is NodeState.READY
            gpus_billed += n.instance_type.num_gpus  # Node.num_gpus, read without the property
            gpus_allocated += n.gpus_allocated
        prefill = role_rows.get("prefill", (0.0, 0.0, 0.0, 0.0))
        decode = role_rows.get("decode", (0.0, 0.0, 0.0, 0.0))
        return SeriesRow(
            time_s=now_s, arrivals=arrived - prev_arrived, completions=done - prev_done,
            drops=drops - prev_drops, queue_waiting=waiting, running=running,
            gateway_queue=totals.gateway_queue,
            kv_usage_mean=sum(kv) / len(kv) if kv else 0.0,
            gpu_util_mean=sum(util) / len(util) if util else 0.0,
            ttft_p99_s=self.store.ttft_p99_s,
            replicas_desired=totals.desired, replicas_ready=totals.ready,
            replicas_starting=starting, pods_pending=pending, nodes_ready=nodes_ready,
            nodes_launching=len(nodes) - nodes_ready,
            gpus_billed=gpus_billed, gpus_allocated=gpus_allocated,
            gpus_busy=totals.gpus_busy,
            cost_usd=cost_usd(self.cluster, now_s),
            prefill_desired=prefill[0], prefill_ready=prefill[1], prefill_waiting=prefill[2],
            decode_desired=decode[0], decode_ready=decode[1], decode_waiting=decode[2],
            decode_kv_usage_mean=decode[3])

    def _signals(self, arrived: int, totals: PoolTotals) -> Mapping[str, float]:
        """Fleet-level signals a planner reads (a gateway or frontend would export these).

        What they are computed from is captured now (the counts, the requests completed since
        the last scrape, the TTFT P99, the queues); the means are worked out when a scaler
        first reads one (`ScrapeSignals`): most scalers read only the pods, and the TPOT mean
        is a gather over every completion of the interval."""
        table = self.table
        first = self._last_counts[0]
        completed = table.recently_completed
        table.recently_completed = []
        ttft_p99_s = self.store.ttft_p99_s
        gateway_queue, ready_replicas = float(totals.gateway_queue), float(totals.ready)

        def build() -> dict[str, float]:
            count = arrived - first
            tpots = _tpots_s(table, completed)
            if self._token_cumsums is None:
                self._token_cumsums = (_cumsum_from_zero(table.prompt_tokens),
                                       _cumsum_from_zero(table.output_tokens))
            prompt_cum, output_cum = self._token_cumsums
            # Sums of the arrivals since the last scrape, by prefix sums (exact: integers).
            prompt = int(prompt_cum[arrived] - prompt_cum[first])
            output = int(output_cum[arrived] - output_cum[first])
            return {
                "request_rate_per_s": count / self.interval_s,
                "prompt_tokens_mean": (prompt / count) if count else 0.0,
                "output_tokens_mean": (output / count) if count else 0.0,
                "ttft_p99_s": ttft_p99_s,
                "tpot_mean_s": (sum(tpots) / len(tpots)) if tpots else 0.0,
                "gateway_queue": gateway_queue,
                "ready_replicas": ready_replicas,
            }
        return ScrapeSignals(build)


class ScrapeSignals(Mapping[str, float]):
    """One scrape's fleet signals (`FLEET_SIGNALS`, in that order), computed at the first
    read and kept: a read-only mapping equal to the dict the scrape would have built then.
    `build` must read only what does not change after the scrape (it captures the rest)."""

    __slots__ = ("_build", "_values")

    def __init__(self, build: Callable[[], dict[str, float]]) -> None:
        self._build: Callable[[], dict[str, float]] | None = build
        self._values: dict[str, float] | None = None

    def _computed(self) -> dict[str, float]:
        values = self._values
        if values is None:
            assert self._build is not None
            values, self._build = self._build(), None
            self._values = values
        return values

    def __getitem__(self, key: str) -> float:
        return self._computed()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._computed())

    def __len__(self) -> int:
        return len(self._computed())

    def __repr__(self) -> str:
        return repr(self._computed())


def _cumsum_from_zero(column: Any) -> np.ndarray:
    """[0, c0, c0 + c1, ...] of an int64 column: the sum of rows a..b-1 is cum[b] - cum[a]."""
    values = np.frombuffer(column, dtype=np.int64)
    out = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values, out=out[1:])
    return out


def _tpots_s(table: RequestTable, completed: list[int]) -> list[float]:
    """Each completed request's TPOT (requests of one output token have none), in completion
    order: one gather per column instead of three array reads per request (hundreds of
    completions per scrape at scale). Element-wise the same floats as the per-request
    expression, and a list so the caller's `sum` adds them in the same order."""
    if not completed:
        return []
    rows = np.fromiter(completed, dtype=np.int64, count=len(completed))
    outputs = np.frombuffer(table.output_tokens, dtype=np.int64)[rows]
    keep = outputs > 1
    finish = np.frombuffer(table.finish_s, dtype=np.float64)[rows][keep]
    first = np.frombuffer(table.first_token_s, dtype=np.float64)[rows][keep]
    tpots: list[float] = ((finish - first) / (outputs[keep] - 1)).tolist()
    return tpots


__all__ = ["ScrapeSignals", "ScrapedPool", "Scraper"]
