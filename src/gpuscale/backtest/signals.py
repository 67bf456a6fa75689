"""The signals a backtest compares, read the same way from the recorded store and from a
replayed run's own store: PromQL range queries at each step of the grid, as a Grafana panel
over either would draw them.

(`{...}`: the deployment's namespace, model name or Deployment name)
- `replicas`: `sum(kube_deployment_spec_replicas{...})`, else the vLLM pods,
  `count(group by (pod) (vllm:num_requests_running{...}))`;
- `ready`: `sum(kube_deployment_status_replicas_ready{...})`, else the vLLM pods;
- `queue`: `sum(vllm:num_requests_waiting{...})`;
- `kv_usage`: `avg(vllm:kv_cache_usage_perc{...})`;
- `gpus`: `sum(kube_node_status_allocatable{resource="nvidia_com_gpu"})`, else
  `count(DCGM_FI_DEV_GPU_UTIL{namespace="..."})`;
- `ttft_p50/p99_s`, `itl_p50/p99_s`:
  `histogram_quantile(q, sum by (le) (rate(X_bucket{...}[4 steps])))`.

`replicas` is what the autoscaler asked for (the Deployment's spec), the series scale events
are read from. A missing series is NaN throughout (said in the section).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuscale.backtest.history import (
    GPU_UTIL,
    ITL_NAMES,
    KV_USAGE,
    NODE_ALLOCATABLE,
    READY_REPLICAS,
    RUNNING,
    SPEC_REPLICAS,
    TTFT,
    WAITING,
    Selector,
)
from gpuscale.promql import Engine
from gpuscale.promql.store import SeriesStore
from gpuscale.promql.values import Vector

RATE_STEPS = 4  # the latency quantiles' rate window, in steps (1 m at a 15 s step)
QUANTILES = (("p50", 0.5), ("p99", 0.99))


@dataclass(frozen=True)
class Grid:
    """Evaluation instants (Unix ms): start, start + step, ... (count of them)."""

    start_ms: int
    step_ms: int
    count: int

    @property
    def end_ms(self) -> int:
        return self.start_ms + self.step_ms * (self.count - 1)


def _query(engine: Engine, query: str, grid: Grid) -> np.ndarray | None:
    """The query's single series per step (NaN where absent); None when it is empty."""
    value = engine.range_query(query, grid.start_ms, grid.end_ms, grid.step_ms)
    if not isinstance(value, Vector) or not value.labels or not value.present.any():
        return None
    return np.where(value.present[0], value.values[0], np.nan)


def _first(engine: Engine, queries: list[str], grid: Grid) -> tuple[np.ndarray, str]:
    for query in queries:
        found = _query(engine, query, grid)
        if found is not None:
            return found, query
    return np.full(grid.count, np.nan), ""


def read_signals(store: SeriesStore, selector: Selector, grid: Grid) -> dict[str, tuple]:
    """{signal: (values per grid step, the query that produced them or "")}."""
    engine = Engine(store)
    sel, dep = selector.engine(), selector.workload()
    pods = f"count(group by (pod) ({RUNNING}{{{sel}}}))"
    window = f"{RATE_STEPS * grid.step_ms}ms"
    out: dict[str, tuple] = {
        "replicas": _first(engine, [f"sum({SPEC_REPLICAS}{{{dep}}})", pods], grid),
        "ready": _first(engine, [f"sum({READY_REPLICAS}{{{dep}}})", pods], grid),
        "queue": _first(engine, [f"sum({WAITING}{{{sel}}})"], grid),
        "kv_usage": _first(engine, [f"avg({KV_USAGE}{{{sel}}})"], grid),
        "gpus": _first(engine, [
            f'sum({NODE_ALLOCATABLE}{{resource="nvidia_com_gpu"}})',
            f'count({GPU_UTIL}{{namespace="{selector.namespace}"}})'], grid),
    }
    for prefix, names in (("ttft", (TTFT,)), ("itl", ITL_NAMES)):
        for label, q in QUANTILES:
            out[f"{prefix}_{label}_s"] = _first(engine, [
                f"histogram_quantile({q}, sum by (le) (rate({name}_bucket{{{sel}}}[{window}])))"
                for name in names], grid)
    return out
