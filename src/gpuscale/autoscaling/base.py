"""The layer-3 contract: what a replica autoscaler sees and what it returns.

A policy is a controller that runs every `period_s`, takes a frozen view of the scraped
metrics and its own state, and returns (desired replicas or None for "no change", new state),
as Ray Serve's autoscaling_policy.py does. KEDA builds two such controllers (its own polling
loop for 0<->1 and the HPA it generates for 1<->N), which is why `build` returns a list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar

# The one per-pod metrics type: the scrape (metrics/) writes it, every policy reads it.
from gpuscale.metrics.store import PodMetrics
from gpuscale.registry import PolicySpec as RegistryPolicySpec


class PromQuerier(Protocol):
    """The simulated Prometheus as a controller reaches it (gpuscale.promql.Engine)."""

    def instant_at(self, query: str, t_s: float) -> Any:
        """The instant query's value at simulated time `t_s` (a promql Vector or Scalar)."""
        ...


@dataclass(frozen=True)
class AutoscalerView:
    """Read-only context for one decision; time arrives as `now_s`, never from a clock."""

    now_s: float
    current_replicas: int  # the target's spec.replicas
    pods: tuple[PodMetrics, ...]
    # Extra signals a planner may read (request rate, TTFT percentiles...), name -> value.
    signals: Mapping[str, float] = field(default_factory=dict)
    # The run's Prometheus, for PromQL queries (MetricQuery.promql); None when no query of
    # the run needs series.
    prometheus: PromQuerier | None = None

    def aggregate(self, metric: str, how: str = "sum") -> float | None:
        """PromQL-like `sum|avg|max(metric)` over Running pods that export it; None if none do."""
        values = [
            p.values[metric] for p in self.pods if p.phase == "Running" and metric in p.values
        ]
        if not values:
            return None
        if how == "sum":
            return float(sum(values))
        if how == "avg":
            return float(sum(values) / len(values))
        if how == "max":
            return float(max(values))
        raise ValueError(f"unknown aggregation {how!r}")


class ReplicaAutoscaler(Protocol):
    """One periodic controller of layer 3."""

    name: str
    period_s: float

    def initial_state(self) -> Any: ...

    def decide(self, view: AutoscalerView, state: Any) -> tuple[int | None, Any]:
        """Desired replicas (None = leave as is) and the controller's next state."""
        ...

    def explain(self, view: AutoscalerView, state: Any) -> dict[str, Any]:
        """Why `decide(view, ...)` returned `state`: {"reason": ..., inputs...} for the
        decision log (core/decisions.py). Called only when a log is on."""
        ...


class NoExplanation:
    """`explain` for a controller whose state says nothing beyond its decision."""

    def explain(self, view: AutoscalerView, state: Any) -> dict[str, Any]:
        return {}


P = TypeVar("P")


@dataclass(frozen=True)
class AutoscalerContext:
    """What a model-based policy (a planner) may know beyond the metrics: the role it scales,
    the replica's hardware and engine limits, and the SLO. Metric-driven policies ignore it.

    `hardware` is a `serving.performance.ReplicaHardware` and `engine` a
    `serving.replica.EngineConfig` (typed loosely so this contract stays import-light).
    """

    role: str = "serve"  # "serve" (aggregated), "prefill" or "decode"
    hardware: Any = None
    engine: Any = None
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None
    # Wall-clock instant of simulated t=0 (Scenario.start_time): what time-of-day triggers
    # (KEDA cron) read; None = units.DEFAULT_START_TIME.
    start_time: datetime | None = None


@dataclass(frozen=True)
class PolicySpec(RegistryPolicySpec[P, Sequence[ReplicaAutoscaler]]):
    """One registry entry: the `kind:` written in scenario YAML and how to build it; `build`
    returns the periodic controllers it runs."""

    # Model-based policies take the context too: build(params, context).
    needs_context: bool = False
