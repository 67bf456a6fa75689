"""A Prometheus-like store: per-pod series scraped every `scrape_interval_s`.

Autoscalers read only what the last scrape saw, so they act on data up to one interval old,
as in production. The store also keeps fleet-level time series (one row per scrape) for
reports; memory is one row per scrape, not per request.

Series per pod (names as the real exporters spell them; serving-engine-metrics.md 1.1,
layer3-replica-autoscaling.md 8):
- `vllm:num_requests_waiting`, `vllm:num_requests_running`, `vllm:kv_cache_usage_perc` (0..1):
  only once the engine serves (a loading vLLM exposes no /metrics yet -> "missing" for the HPA).
- `DCGM_FI_DEV_GPU_UTIL` (0..100): share of the scrape window in which a step was executing,
  i.e. the duty cycle NVML reports, blind to how much work each step carries.
- `DCGM_FI_DEV_FB_USED` (MiB): flat, because vLLM pre-allocates `gpu_memory_utilization` of
  HBM at start-up, whatever the load.
- `gpuscale:num_prefill_tokens_waiting`: prompt tokens a replica has not prefilled yet (waiting
  requests' prompts plus what is left of prompts in chunked prefill). **gpuscale-derived**: vLLM
  exports no such gauge (serving-engine-metrics.md 1.1 has `vllm:num_requests_waiting` and the
  counter `vllm:prompt_tokens_total` only); it shows what a long-prompt queue hides from the
  request count (issue 13, defect 6). A deployment would need its own exporter for it.
- `vllm:prefix_cache_queries`, `vllm:prefix_cache_hits`: prompt tokens looked up in / found in
  the prefix cache since the engine started (counters), only on replicas with a prefix cache
  (serving/prefix_cache.py). Not scaler inputs (POD_SERIES): a counter needs a rate first.
DCGM series exist as soon as the pod holds GPUs (the exporter is a node DaemonSet).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

WAITING = "vllm:num_requests_waiting"
RUNNING = "vllm:num_requests_running"
KV_USAGE = "vllm:kv_cache_usage_perc"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
PREFILL_TOKENS_WAITING = "gpuscale:num_prefill_tokens_waiting"
# Prefix-cache counters in tokens (serving-engine-metrics.md 1.2: exposed with `_total`; WVA
# reads `rate(vllm:prefix_cache_hits[5m]) / rate(vllm:prefix_cache_queries[5m])`, 5.2). Only
# on replicas with a prefix cache (a trace with prompt block hashes).
PREFIX_CACHE_QUERIES = "vllm:prefix_cache_queries"
PREFIX_CACHE_HITS = "vllm:prefix_cache_hits"
TTFT_P99_WINDOW = "ttft_p99_s"

# What a scaler can read: the per-pod series above, and the fleet signals the engine publishes
# at each scrape (`AutoscalerView.signals`). Scenario validation rejects any other name, so a
# typo fails at load instead of silently never scaling.
POD_SERIES = (WAITING, RUNNING, KV_USAGE, GPU_UTIL, FB_USED, PREFILL_TOKENS_WAITING)
FLEET_SIGNALS = ("request_rate_per_s", "prompt_tokens_mean", "output_tokens_mean", "ttft_p99_s",
                 "tpot_mean_s", "gateway_queue", "ready_replicas")

# vLLM's TTFT histogram buckets (serving-engine-metrics.md 1.3), seconds.
TTFT_BUCKETS_S = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                  5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
_TTFT_EDGES = np.asarray(TTFT_BUCKETS_S)

class SeriesRow(NamedTuple):
    """One scrape's fleet-level row of the series (reports and charts read these columns)."""

    time_s: float
    arrivals: int
    completions: int
    drops: int
    queue_waiting: float
    running: float
    gateway_queue: int
    kv_usage_mean: float
    gpu_util_mean: float
    ttft_p99_s: float
    replicas_desired: int
    replicas_ready: int
    replicas_starting: int
    pods_pending: int
    nodes_ready: int
    nodes_launching: int
    gpus_billed: int
    gpus_allocated: int
    gpus_busy: int
    cost_usd: float
    # Disaggregated runs only (0 otherwise): each pool's replicas, queue and KV use.
    prefill_desired: float = 0.0
    prefill_ready: float = 0.0
    prefill_waiting: float = 0.0
    decode_desired: float = 0.0
    decode_ready: float = 0.0
    decode_waiting: float = 0.0
    decode_kv_usage_mean: float = 0.0


SERIES_COLUMNS = SeriesRow._fields

def percentile_sorted(values: list[float], q: float) -> float:
    """numpy's default (linear) percentile of an already sorted list, without numpy's
    per-call overhead (this runs at every scrape)."""
    position = (len(values) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def percentile_unsorted(values: np.ndarray, q: float) -> float:
    """`percentile_sorted` of `values` in any order, the same float: only the two order
    statistics it reads are placed (`np.partition`), not the whole window sorted."""
    position = (len(values) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(values) - 1)
    placed = np.partition(values, (low, high))
    low_value, high_value = float(placed[low]), float(placed[high])
    return low_value + (high_value - low_value) * (position - low)


def _sorted_batches_percentile(batches: list[np.ndarray], q: float) -> float:
    """`percentile_sorted` of the union of ascending-sorted, non-empty `batches`, the same
    float, reading only their tails.

    The percentile reads the order statistics at ranks `low` and `high` (0-based, ascending)
    of the N values, i.e. among the k = N - low largest. Each of the union's k largest is
    among the k largest of its own batch, so the batches' last min(k, len) values hold the
    union's k largest (as a multiset: of any value x, every batch gives up to k of its values
    at or above x, so the tails hold at least min(k, #values >= x) of them); the r-th largest
    of the tails (r < k) is the union's r-th largest. The high percentiles read a few
    values per batch (P99 of ~2,800: 29), not a copy of the window."""
    n = sum(len(b) for b in batches)
    position = (n - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, n - 1)
    if len(batches) == 1:
        values = batches[0]
        first = 0
    else:
        k = n - low
        values = np.concatenate([b[-k:] for b in batches])
        values.sort()
        first = n - len(values)  # the tails' index i holds the union's rank first + i
    low_value, high_value = float(values[low - first]), float(values[high - first])
    return low_value + (high_value - low_value) * (position - low)


def percentile_linear(values: Iterable[float], q: float) -> float:
    """`float(np.percentile(values, q))` (the linear method), the same float, for a few values
    in any order (a run summary's waits). np.percentile's first call imports numpy.ma (its
    `np.unique` asks `np.ma.is_masked`), ~25 ms of a run's result build; this reads the two
    order statistics and interpolates as numpy's `_lerp` does: from the lower one below half
    way, back from the upper one from half way on. Checked against numpy bit for bit
    (tests/core/test_percentile.py)."""
    ordered = sorted(map(float, values))  # Python floats: the same IEEE operations, no warnings
    if any(math.isnan(v) for v in ordered):
        return math.nan  # numpy: a NaN sorts last and makes the percentile NaN
    n = len(ordered)
    virtual = (n - 1) * (q / 100)
    if virtual >= n - 1:
        # numpy's `_get_indexes`: past the last rank both neighbours are the last value, at
        # index -1, so the weight is virtual + 1 and the difference 0.
        below = above = -1
    else:
        below = math.floor(virtual)
        above = below + 1
    gamma = virtual - below
    low, high = ordered[below], ordered[above]
    diff = high - low
    return high - diff * (1 - gamma) if gamma >= 0.5 else low + diff * gamma


@dataclass(frozen=True)
class PodMetrics:
    """One pod of a scale target as the metrics pipeline sees it (the scrape writes these,
    autoscalers read them through `AutoscalerView.pods`).

    `values` holds the latest scraped value of each per-pod series (e.g.
    "vllm:num_requests_waiting", "DCGM_FI_DEV_GPU_UTIL"); a series the pod does not export yet
    (engine still loading) is absent, which the HPA treats as a *missing* metric.
    """

    name: str
    phase: str  # "Pending", "Running" or "Failed" (Failed pods are dropped by the HPA)
    ready: bool
    values: Mapping[str, float] = field(default_factory=dict)
    # Resource requests per resource name ("cpu" in cores, "memory" in bytes); only the HPA's
    # Resource/Utilization metrics read them (utilization = usage / request).
    requests: Mapping[str, float] = field(default_factory=dict)
    # When the pod started running and when its Ready condition last changed (seconds on the
    # simulation clock). Only the HPA's CPU readiness rules read them; None = unknown.
    started_s: float | None = None
    ready_changed_s: float | None = None


_new_object = object.__new__
_set_attribute = object.__setattr__
# The fields `scraped_pod` fills, in declaration order (tests/metrics/test_scrape_lazy.py
# checks them against PodMetrics, so a new field cannot be silently left out).
SCRAPED_POD_FIELDS = ("name", "phase", "ready", "values", "requests", "started_s",
                      "ready_changed_s")


def scraped_pod(name: str, phase: str, ready: bool, values: Mapping[str, float]) -> PodMetrics:
    """`PodMetrics(name, phase, ready, values)`, the same object (same fields, a fresh empty
    `requests`) built in one attribute write instead of the frozen dataclass's seven guarded
    ones: the scrape builds one per pod per scrape, a third of its own time at scale."""
    pod = _new_object(PodMetrics)
    _set_attribute(pod, "__dict__", {"name": name, "phase": phase, "ready": ready,
                                     "values": values, "requests": {}, "started_s": None,
                                     "ready_changed_s": None})
    return pod


@dataclass
class MetricsStore:
    scrape_interval_s: float
    ttft_window_s: float = 60.0
    rows: list[SeriesRow] = field(default_factory=list)
    _recent_ttft: list[tuple[float, np.ndarray]] = field(default_factory=list)
    ttft_p99_s: float = 0.0  # P99 TTFT over the last `ttft_window_s`, as of the last scrape
    # The histogram's batches not binned yet (`ttft_counts` bins them when read): nothing in a
    # run reads the histogram, so the scrape only keeps each batch.
    _unbinned_ttft: list[np.ndarray] = field(default_factory=list)
    _ttft_counts: np.ndarray = field(default_factory=lambda: np.zeros(len(TTFT_BUCKETS_S) + 1))
    # The latest scrape's pods, or what builds them on the first read (`latest`).
    _latest: list[PodMetrics] = field(default_factory=list)
    _latest_source: Callable[[], list[PodMetrics]] | None = None

    @property
    def latest(self) -> list[PodMetrics]:
        """The latest scrape's pods (every pool's). A scrape hands over a builder instead of
        the objects: scrapes outnumber the controller ticks that read them."""
        if self._latest_source is not None:
            self._latest, self._latest_source = self._latest_source(), None
        return self._latest

    @latest.setter
    def latest(self, pods: list[PodMetrics]) -> None:
        self._latest, self._latest_source = pods, None

    def set_latest_source(self, build: Callable[[], list[PodMetrics]]) -> None:
        self._latest_source = build

    @property
    def ttft_counts(self) -> np.ndarray:
        """The fleet TTFT histogram (counts per `TTFT_BUCKETS_S` bucket, the last one above the
        top edge): every batch observed so far, binned on read (`searchsorted` left =
        `bisect_left`). Integer counts in float64, so binning the batches later or together
        gives the same numbers as binning each at its scrape."""
        if self._unbinned_ttft:
            batch = (self._unbinned_ttft[0] if len(self._unbinned_ttft) == 1
                     else np.concatenate(self._unbinned_ttft))
            self._unbinned_ttft = []
            self._ttft_counts += np.bincount(np.searchsorted(_TTFT_EDGES, batch, side="left"),
                                             minlength=len(self._ttft_counts))
        return self._ttft_counts

    def observe_ttft(self, now_s: float, values: list[float]) -> None:
        """Add one scrape's TTFT observations (fleet histogram + the sliding P99 window).

        A scrape brings hundreds of values at scale and the window holds a few scrapes'
        worth: each batch becomes one array once, sorted in place (the histogram, binned on
        read, does not depend on the order), and the P99 reads its two order statistics from
        the batches' tails (`_sorted_batches_percentile`) instead of copying and partitioning the
        whole window at every scrape. Same counts and the same float as the per-value loop
        and the sort (tests/core/test_percentile.py, tests/metrics/test_scrape_vectorised.py)."""
        recent = self._recent_ttft
        if values:
            batch = np.fromiter(values, dtype=np.float64, count=len(values))
            batch.sort()
            self._unbinned_ttft.append(batch)
            recent.append((now_s, batch))
        cutoff = now_s - self.ttft_window_s
        while recent and recent[0][0] <= cutoff:
            recent.pop(0)
        if not recent:
            self.ttft_p99_s = 0.0
            return
        self.ttft_p99_s = _sorted_batches_percentile([b for _, b in recent], 99.0)

    def record_row(self, row: SeriesRow) -> None:
        self.rows.append(row)

    def series(self) -> dict[str, np.ndarray]:
        if not self.rows:
            return {name: np.zeros(0) for name in SERIES_COLUMNS}
        table = np.asarray(self.rows, dtype=float)
        return {name: table[:, i] for i, name in enumerate(SERIES_COLUMNS)}
