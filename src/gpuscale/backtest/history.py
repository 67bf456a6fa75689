"""The history export read into a series store, its step grid, and the deployment's series.

Three formats, told apart by their first bytes:
- a Prometheus HTTP API response as JSON (`/api/v1/query_range`, one response or an object
  mapping names to responses, as `calibrate --fit` reads): `{"status": ..., "data": ...}`;
- `promtool tsdb dump` of Prometheus 2.x: `{__name__="x", a="b"} value milliseconds`;
- OpenMetrics text (what `--metrics-out` writes, and `promtool tsdb dump-openmetrics` of
  Prometheus 3).
Only the families a backtest reads are kept (`NEEDED`), so a whole-cluster dump costs the
parse, not the memory. The grid is the export's own step: the most common spacing of one
series' samples (a query_range's `step`; a raw dump's scrape interval).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpuscale.errors import UserInputError
from gpuscale.inputs import check_json_depth, decode_text, read_bytes
from gpuscale.promql import labels as lbl
from gpuscale.promql import openmetrics, query_json
from gpuscale.promql.errors import PromQLError
from gpuscale.promql.store import SeriesStore

# As large as a trace may be (workloads/trace_files.py): a day of every series of a small
# cluster is ~1.3 GB of OpenMetrics text (docs/benchmarks.md).
MAX_HISTORY_BYTES = 8 * 2**30

TTFT = "vllm:time_to_first_token_seconds"
E2E = "vllm:e2e_request_latency_seconds"
PROMPT = "vllm:request_prompt_tokens"
OUTPUT = "vllm:request_generation_tokens"
# vLLM >= 0.11 names the per-token histogram inter_token_latency; older releases
# time_per_output_token (vllm/v1/metrics/loggers.py; calibration/fit_prometheus.py reads both).
ITL_NAMES = ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds")
SUCCESS = "vllm:request_success_total"
WAITING = "vllm:num_requests_waiting"
RUNNING = "vllm:num_requests_running"
KV_USAGE = "vllm:kv_cache_usage_perc"
SPEC_REPLICAS = "kube_deployment_spec_replicas"
READY_REPLICAS = "kube_deployment_status_replicas_ready"
NODE_ALLOCATABLE = "kube_node_status_allocatable"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
HISTOGRAMS = (TTFT, E2E, PROMPT, OUTPUT, *ITL_NAMES)
NEEDED = frozenset({f"{h}_{part}" for h in HISTOGRAMS for part in ("bucket", "sum", "count")}
                  | {SUCCESS, WAITING, RUNNING, KV_USAGE, SPEC_REPLICAS, READY_REPLICAS,
                     NODE_ALLOCATABLE, GPU_UTIL})
# What the traffic is rebuilt from: a request counter (first tokens, or completions) and both
# token histograms' buckets. The refusal names them in this form.
REQUIRED_TEXT = (f"{TTFT}_count (or {SUCCESS}), {PROMPT}_bucket, {OUTPUT}_bucket")


@dataclass
class History:
    """The export's samples and its step grid (Unix ms)."""

    store: SeriesStore
    source: str
    format: str  # "query_range", "openmetrics", "promtool-dump"
    step_ms: int
    start_ms: int
    end_ms: int
    scrapes_ms: np.ndarray  # every distinct sample time: when anything was scraped
    notes: list[str] = field(default_factory=list)

    @property
    def grid_ms(self) -> np.ndarray:
        """The window edges start, start + step, ... <= end."""
        return np.arange(self.start_ms, self.end_ms + 1, self.step_ms, dtype=np.int64)

    @property
    def span_s(self) -> float:
        return (self.end_ms - self.start_ms) / 1000.0


def export_format(text: str) -> str:
    head = text.lstrip()[:64]
    if head.startswith("{\""):
        return "query_range"
    if head.startswith("{"):
        return "promtool-dump"
    return "openmetrics"


def read_history(path: Path) -> History:
    """The export at `path`, checked for the series a backtest cannot do without."""
    source = str(path)
    text = decode_text(read_bytes(path, max_bytes=MAX_HISTORY_BYTES, what="history export"),
                       source, "history export")
    fmt = export_format(text)
    try:
        if fmt == "query_range":
            check_json_depth(text, source)
            from gpuscale.inputs import parse_json

            store = query_json.read(parse_json(text, source), source=source)
            store = _kept(store)
        else:
            store = openmetrics.read(text, source=source, names=NEEDED)
    except PromQLError as exc:
        raise UserInputError(str(exc).removeprefix(f"{source}: ").removeprefix(f"{source}:"),
                             source=source) from None
    check_required(store, source)
    step_ms = _step_ms(store)
    # The export's span, not the serving pods' alone: a fleet scaled to zero still holds its
    # nodes, and kube-state-metrics still reports them.
    times = sample_times(store)
    return History(store, source, fmt, step_ms, int(times[0]), int(times[-1]), times)


def sample_times(store: SeriesStore) -> np.ndarray:
    """Every distinct sample time of the store, ascending (when anything was scraped)."""
    return np.unique(np.concatenate([family.t_ms.view() for family in store.families.values()
                                     if family.num_samples()] or [np.zeros(0, np.int64)]))


def _kept(store: SeriesStore) -> SeriesStore:
    """The families a backtest reads (a JSON export of every series holds many more)."""
    for name in [n for n in store.families if n not in NEEDED]:
        del store.families[name]
    return store


def check_required(store: SeriesStore, source: str) -> None:
    """Refuse, in one line naming what to export, an export without the request counter or
    the token histograms."""
    def has(name: str) -> bool:
        family = store.families.get(name)
        return family is not None and family.num_samples() > 0

    missing = []
    if not has(f"{TTFT}_count") and not has(SUCCESS):
        missing.append(f"{TTFT}_count or {SUCCESS}")
    missing += [f"{h}_bucket" for h in (PROMPT, OUTPUT) if not has(f"{h}_bucket")]
    if missing:
        raise UserInputError(
            f"no {', '.join(missing)}: a backtest rebuilds the traffic from vLLM's request "
            f"counter and token histograms; export {REQUIRED_TEXT} with the queries in "
            "docs/backtest.md", source=source)


def _step_ms(store: SeriesStore) -> int:
    """The most common spacing of consecutive samples of one series (request counters
    first: every serving pod has them)."""
    for name in (f"{TTFT}_count", SUCCESS, f"{PROMPT}_count", f"{PROMPT}_bucket"):
        family = store.families.get(name)
        if family is None:
            continue
        gaps = [np.diff(t) for t, _ in family.by_series().values() if len(t) > 1]
        spacing = np.concatenate(gaps) if gaps else np.zeros(0)
        spacing = spacing[spacing > 0]
        if len(spacing):
            values, counts = np.unique(spacing, return_counts=True)
            return int(values[np.argmax(counts)])
    raise UserInputError("every request counter has a single sample: a backtest needs at "
                         "least two scrapes (a range query's step, or raw samples)",
                         source="history")


@dataclass(frozen=True)
class Selector:
    """The deployment's series in the export: vLLM's by `namespace` and `model_name`,
    kube-state-metrics' by `namespace` and `deployment`."""

    namespace: str
    model_name: str
    deployment: str

    def engine(self) -> str:
        return f'namespace="{self.namespace}",model_name="{self.model_name}"'

    def workload(self) -> str:
        return f'namespace="{self.namespace}",deployment="{self.deployment}"'


def groups(store: SeriesStore) -> list[tuple[str, str]]:
    """(namespace, model_name) of every serving group in the export's request series."""
    found: set[tuple[str, str]] = set()
    for name in (f"{TTFT}_count", SUCCESS, f"{PROMPT}_bucket"):
        family = store.families.get(name)
        if family is not None:
            found.update((lbl.get(ls, "namespace"), lbl.get(ls, "model_name"))
                         for ls in family.labels)
    return sorted(found)


def select(history: History, namespace: str, model_name: str, deployment: str
           ) -> tuple[Selector, list[str]]:
    """The manifests' deployment in the history; with one group only, that group (noted)."""
    found = groups(history.store)
    if (namespace, model_name) in found:
        return Selector(namespace, model_name, deployment), []
    if len(found) == 1:
        ns, model = found[0]
        return Selector(ns, model, deployment), [
            f"history: the manifests serve {model_name!r} in namespace {namespace!r}; the "
            f"export holds one group, {model!r} in {ns!r}, read as it"]
    listed = ", ".join(f"{m!r} in {n!r}" for n, m in found)
    raise UserInputError(f"no series of model_name {model_name!r} in namespace {namespace!r} "
                         f"(the manifests' deployment); the export holds {listed}: export the "
                         "deployment's own series, or serve the same name", source=history.source)
