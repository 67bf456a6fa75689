"""Kubernetes HorizontalPodAutoscaler (autoscaling/v2): params and the controller loop.

One `decide` is one `reconcileAutoscaler` pass of kubernetes/kubernetes
`pkg/controller/podautoscaler/horizontal.go`: ScalingDisabled at 0 replicas, clamp when outside
[min, max], otherwise per-metric proposals (replica_calc.py) combined by max with the
invalid-metric rules, then the behavior path or the legacy path (behavior.py).
Reference: ../shared/reference/layer3-replica-autoscaling.md section 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuscale.autoscaling.base import AutoscalerView, PolicySpec
from gpuscale.autoscaling.behavior import (
    Behavior,
    ResolvedRules,
    Stamped,
    legacy_bounded,
    rate_limited,
    resolve_rules,
    stabilize_legacy,
    stabilize_with_behavior,
    store_scale_event,
)
from gpuscale.autoscaling.replica_calc import (
    CpuReadiness,
    MetricError,
    Tolerances,
    average_value_replicas,
    group_pods,
    plain_metric_replicas,
    resource_utilization_replicas,
    to_milli,
    value_replicas,
)
from gpuscale.promql import PromQLError, Scalar, Vector


class MetricQuery(BaseModel):
    """One scalar a metrics pipeline returns: a PromQL query as the user wrote it, or the
    shorthand `sum|avg|max(series)` over the latest scrape's Running pods, or a view signal.

    `promql` (a plain string in YAML reads as one) is evaluated by `gpuscale.promql` over the
    simulated series at the controller's tick, with Prometheus' lookback and functions
    (docs/promql.md). The shorthand reads the latest scrape directly (no lookback); `source:
    signal` reads `AutoscalerView.signals[metric]`: a series not exported by the pods (router
    or gateway queue), which is what scale-from-zero needs since no pod exists then.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: str | None = Field(default=None,
                               description="Series name, e.g. vllm:num_requests_waiting.")
    aggregation: Literal["sum", "avg", "max"] = Field(
        default="sum",
        description=(
            "sum: a total, which External/AverageValue "
            "divides by the target (KEDA's default)."
        ),
    )
    source: Literal["pods", "signal"] = Field(
        default="pods", description="pods: aggregate the per-pod series; signal: a view signal."
    )
    promql: str | None = Field(default=None, description=(
        "A PromQL query over the simulated series, e.g. "
        "sum(rate(vllm:request_success_total[1m])); instead of `metric`."))

    @model_validator(mode="before")
    @classmethod
    def _text_is_promql(cls, data: Any) -> Any:
        return {"promql": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _one_form(self) -> MetricQuery:
        if (self.metric is None) == (self.promql is None):
            raise ValueError("give either `promql` (a query) or `metric` (a series name)")
        if self.promql is not None:
            from gpuscale.metrics.prometheus_config import checked_promql

            checked_promql(self.promql)
        return self

    @property
    def label(self) -> str:
        if self.promql is not None:
            return " ".join(self.promql.split())
        return str(self.metric) if self.source == "signal" \
            else f"{self.aggregation}({self.metric})"


def query_value(view: AutoscalerView, query: MetricQuery) -> float | None:
    """The query's value now; None when no series matches (empty result).

    A PromQL query's series are summed, as the HPA sums the items an External metrics API
    returns (replica_calculator.go GetExternalMetricReplicas); a scalar result is its value.
    """
    if query.promql is not None:
        result = promql_result(view, query.promql)
        if isinstance(result, Scalar):
            return float(result.values[0])
        if not isinstance(result, Vector) or not result.present[:, 0].any():
            return None
        return sum(value for _, value in result.rows())
    if query.source == "signal":
        value = view.signals.get(str(query.metric))
        return None if value is None else float(value)
    return view.aggregate(str(query.metric), query.aggregation)


def single_value(result: Any) -> float | None:
    """The value of a one-series instant vector, else None (what the decision log records
    as Prometheus' answer)."""
    if isinstance(result, Vector):
        rows = result.rows()
        return rows[0][1] if len(rows) == 1 else None
    return None


def promql_result(view: AutoscalerView, query: str) -> Any:
    """The instant query's result at the view's time (an Engine value), or the PromQLError
    Prometheus would answer with (the caller reads it as a failed metric)."""
    if view.prometheus is None:
        return PromQLError("no Prometheus in this run (the view has no series store)")
    try:
        return view.prometheus.instant_at(query, view.now_s)
    except PromQLError as exc:
        return exc


class MetricTarget(BaseModel):
    """`MetricTarget`: what value of the metric the HPA aims for."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["AverageValue", "Value", "Utilization"] = Field(
        description="Target type (reference 1.2)."
    )
    value: float = Field(
        gt=0,
        description="Target in the metric's own unit; for Utilization, percent of the request.",
    )


class MetricSpec(BaseModel):
    """One entry of `spec.metrics`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["Pods", "External", "Object", "Resource"] = Field(
        description="Metric source type (reference 1.2)."
    )
    metric: str | None = Field(
        default=None,
        description="Pods: per-pod series name; Resource: resource name (cpu, memory).",
    )
    query: MetricQuery | None = Field(
        default=None, description="External/Object: the scalar the pipeline returns."
    )
    target: MetricTarget

    @model_validator(mode="after")
    def _check_combination(self) -> MetricSpec:
        allowed = {
            "Pods": {"AverageValue"},
            "Resource": {"AverageValue", "Utilization"},
            "External": {"AverageValue", "Value"},
            "Object": {"AverageValue", "Value"},
        }[self.type]
        if self.target.type not in allowed:
            raise ValueError(
                f"{self.type} metrics accept target types {sorted(allowed)}, not {self.target.type}"
            )
        if self.type in ("Pods", "Resource"):
            if self.metric is None or self.query is not None:
                raise ValueError(
                    f"{self.type} metrics need `metric` (a per-pod series) and no `query`"
                )
        elif self.query is None or self.metric is not None:
            raise ValueError(f"{self.type} metrics need `query` and no `metric`")
        if self.target.type == "Utilization" and self.target.value != int(self.target.value):
            raise ValueError(
                "Utilization targets are whole percent (averageUtilization is an int32)"
            )
        return self

    @property
    def label(self) -> str:
        return self.query.label if self.query is not None else str(self.metric)


class HpaParams(BaseModel):
    """A HorizontalPodAutoscaler plus the kube-controller-manager flags that shape it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["hpa"] = "hpa"
    min_replicas: int = Field(
        default=1,
        ge=0,
        description=(
            "Floor (API default 1). 0 scales to and from zero on an Object/External metric "
            "(HPAScaleToZero: beta and on by default since Kubernetes 1.37, KEP-2021)."
        ),
    )
    max_replicas: int = Field(ge=1, description="Ceiling; required by the API.")
    metrics: tuple[MetricSpec, ...] = Field(
        min_length=1,
        description="Required here: the API default (cpu at 80 %) is inert for GPU serving pods.",
    )
    behavior: Behavior | None = Field(
        default=None,
        description=(
            "None = legacy path (5-min max of proposals, scale-up cap max(2x, 4)), as KEDA leaves "
            "it."
        ),
    )
    tolerance_frac: float = Field(
        default=0.1, ge=0, description="--horizontal-pod-autoscaler-tolerance (default 0.1)."
    )
    downscale_stabilization_s: float = Field(
        default=300.0,
        ge=0,
        description="--horizontal-pod-autoscaler-downscale-stabilization (default 5 min).",
    )
    sync_period_s: float = Field(
        default=15.0, gt=0, description="--horizontal-pod-autoscaler-sync-period (default 15 s)."
    )
    cpu_initialization_period_s: float = Field(
        default=300.0,
        ge=0,
        description=(
            "--horizontal-pod-autoscaler-cpu-initialization-period "
            "(default 5 min); cpu only."
        ),
    )
    initial_readiness_delay_s: float = Field(
        default=30.0,
        ge=0,
        description="--horizontal-pod-autoscaler-initial-readiness-delay (default 30 s); cpu only.",
    )

    @model_validator(mode="after")
    def _check_bounds(self) -> HpaParams:
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"min_replicas {self.min_replicas} > max_replicas {self.max_replicas}")
        if self.min_replicas == 0 and not any(
            m.type in ("Object", "External") for m in self.metrics
        ):
            raise ValueError(
                "min_replicas 0 requires at least one Object or External metric (HPAScaleToZero)"
            )
        return self


@dataclass(frozen=True)
class HpaState:
    """What the controller remembers between syncs (per HPA key in the real controller)."""

    recommendations: tuple[Stamped, ...] | None = None  # None until the first sync records current
    up_events: tuple[Stamped, ...] = ()
    down_events: tuple[Stamped, ...] = ()
    # The ScaledToZero condition (KEP-2021, beta in 1.37): this HPA scaled the target to 0, so
    # at 0 it keeps computing (a target set to 0 by someone else stays ScalingDisabled).
    scaled_to_zero: bool = False
    condition: str = ""  # last reason: ScalingDisabled, FailedGetMetrics, ValidMetricFound, ...
    last_proposal: int | None = None  # max over metrics before stabilization, for reports
    # Per metric of the last sync: (label, usage ratio to target or None, replicas proposed,
    # the value read: an External/Object metric's value, a Pods metric's mean); read only by
    # the decision log.
    readings: tuple[tuple[str, float | None, int, float | None], ...] = ()


# Reads External/Object metric number `index` of the HPA; None = the query failed (KEDA's
# metrics server is its own reader: keda_runtime.py).
ScalarReader = Callable[[AutoscalerView, int, MetricSpec], "float | None"]


def read_scalar(view: AutoscalerView, index: int, spec: MetricSpec) -> float | None:
    """Default metrics pipeline (prometheus-adapter style): an empty result is an error."""
    assert spec.query is not None  # validated for External/Object
    return query_value(view, spec.query)


class HpaController:
    """The HPA controller for one scale target; satisfies `ReplicaAutoscaler`."""

    def __init__(self, params: HpaParams, *, name: str = "hpa", reader: ScalarReader = read_scalar):
        self.name = name
        self.period_s = params.sync_period_s
        self.params = params
        self._reader = reader
        # hasObjectOrExternalMetrics: only these can scale a target from zero (KEP-2021).
        self._can_zero = params.min_replicas == 0 and any(
            m.type in ("Object", "External") for m in params.metrics)
        self._up: ResolvedRules | None = None
        self._down: ResolvedRules | None = None
        down_tol = up_tol = params.tolerance_frac
        if params.behavior is not None:
            b = params.behavior
            self._up = resolve_rules(
                b.scale_up,
                scale_up=True,
                downscale_stabilization_s=params.downscale_stabilization_s,
            )
            self._down = resolve_rules(
                b.scale_down,
                scale_up=False,
                downscale_stabilization_s=params.downscale_stabilization_s,
            )
            up_tol = self._up.tolerance_frac if self._up.tolerance_frac is not None else up_tol
            down_tol = (
                self._down.tolerance_frac if self._down.tolerance_frac is not None else down_tol
            )
        self._tol = Tolerances(down=down_tol, up=up_tol)
        self._cpu = CpuReadiness(
            params.cpu_initialization_period_s, params.initial_readiness_delay_s
        )
        # Scratch of the sync in progress, moved into HpaState.readings by `decide`.
        self._last_ratio: float | None = None
        self._last_value: float | None = None
        self._readings: tuple[tuple[str, float | None, int, float | None], ...] = ()

    def initial_state(self) -> HpaState:
        return HpaState()

    def decide(self, view: AutoscalerView, state: HpaState) -> tuple[int | None, HpaState]:
        p, now, current = self.params, view.now_s, view.current_replicas
        if state.recommendations is None:  # recordInitialRecommendation
            state = replace(state, recommendations=(Stamped(now, current),))
        if current == 0 and not (self._can_zero and state.scaled_to_zero):
            # Implicit maintenance mode: a target at 0 the HPA did not scale there itself
            # (KEDA's, or a new Deployment with replicas 0) is left alone.
            return None, replace(state, condition="ScalingDisabled")
        if current > p.max_replicas:
            desired, state = p.max_replicas, replace(state, condition="TooManyReplicas")
        elif current < p.min_replicas:
            desired, state = p.min_replicas, replace(state, condition="TooFewReplicas")
        else:
            proposal, error = self._proposal(view)
            if proposal is None:
                return None, replace(state, last_proposal=proposal, readings=self._readings,
                                     condition=f"FailedGetMetrics: {error}")
            # One new state per sync (the frozen dataclass's `replace` is most of a sync's
            # own cost): the readings and the stabilised recommendations together.
            desired, recs = self._normalize(now, current, max(proposal, 0), state)
            state = replace(state, last_proposal=proposal,
                            readings=self._readings, recommendations=recs,
                            condition="ValidMetricFound")
        if desired == current:
            return None, state
        # ScaledToZero is set when this HPA takes its target to 0, cleared when it rescales.
        state = replace(state, scaled_to_zero=self._can_zero and current > 0 and desired == 0)
        return desired, self._record_scale(now, current, desired, state)

    def _normalize(
        self, now: float, current: int, desired: int, state: HpaState
    ) -> tuple[int, tuple[Stamped, ...]]:
        """The stabilised, bounded desired count and the recommendations to keep (the caller
        stores them with condition ValidMetricFound)."""
        p, recs = self.params, state.recommendations or ()
        if self._up is None or self._down is None:
            stabilized, recs = stabilize_legacy(recs, now, desired, p.downscale_stabilization_s)
            result = legacy_bounded(current, stabilized, p.min_replicas, p.max_replicas)
        else:
            stabilized, recs = stabilize_with_behavior(
                recs, now, current, desired, self._up, self._down
            )
            result = rate_limited(current, stabilized, p.min_replicas, p.max_replicas,
                                  state.up_events, state.down_events, self._up, self._down, now)
        return result, recs

    def _record_scale(self, now: float, current: int, desired: int, state: HpaState) -> HpaState:
        """`storeScaleEvent`: only the behavior path keeps scale events."""
        if self._up is None or self._down is None:
            return state
        if desired > current:
            return replace(
                state,
                up_events=store_scale_event(
                    state.up_events, now, desired - current, self._up.longest_period_s
                ),
            )
        return replace(
            state,
            down_events=store_scale_event(
                state.down_events, now, current - desired, self._down.longest_period_s
            ),
        )

    def explain(self, view: AutoscalerView, state: HpaState) -> dict[str, Any]:
        """Condition, the max proposal, each metric's usage ratio and the tolerance band."""
        queries = {spec.label: spec.query.promql for spec in self.params.metrics
                   if spec.query is not None and spec.query.promql is not None}
        metrics = []
        for label, ratio, replicas, value in state.readings:
            entry: dict[str, Any] = {"metric": label, "value": value,
                                     "eval_time_s": view.now_s, "usage_ratio": ratio,
                                     "replicas": replicas}
            if label in queries:
                # `value` is what Prometheus returned for the query (its one series; None
                # otherwise), `read_as` what the HPA used (KEDA reads an empty result as 0).
                entry.update(query=queries[label], read_as=value,
                             value=single_value(promql_result(view, queries[label])))
            metrics.append(entry)
        return {"reason": state.condition, "proposal": state.last_proposal,
                "tolerance": {"down": self._tol.down, "up": self._tol.up}, "metrics": metrics}

    def _proposal(self, view: AutoscalerView) -> tuple[int | None, str]:
        """`computeReplicasForMetrics`: max over metrics; None when all fail or a failure blocks
        scale-down."""
        replicas, invalid, first_error = 0, 0, ""
        readings: list[tuple[str, float | None, int, float | None]] = []
        for i, spec in enumerate(self.params.metrics):
            try:
                proposal = self._metric_proposal(view, spec, i)
            except MetricError as exc:
                invalid += 1
                first_error = first_error or f"{spec.label}: {exc}"
                continue
            readings.append((spec.label, self._last_ratio, proposal, self._last_value))
            if replicas == 0 or proposal > replicas:
                replicas = proposal
        self._readings = tuple(readings)
        if invalid >= len(self.params.metrics) or (
            invalid > 0 and replicas < view.current_replicas
        ):
            return None, first_error
        return replicas, first_error

    def _metric_proposal(self, view: AutoscalerView, spec: MetricSpec, index: int) -> int:
        current = view.current_replicas
        pods = [p for p in view.pods if p.phase != "Failed"]
        target = spec.target
        self._last_ratio = None
        self._last_value = None
        if spec.type in ("Pods", "Resource"):
            if not pods:
                raise MetricError("no pods returned by selector while calculating replica count")
            cpu = self._cpu if spec.type == "Resource" and spec.metric == "cpu" else None
            groups = group_pods(view.pods, str(spec.metric), view.now_s, cpu)
            if groups.samples and target.type != "Utilization":
                # The usage ratio the HPA compares with its tolerance (before the missing and
                # unready pods are filled in): mean of the ready pods' values / target.
                mean_milli = sum(groups.samples.values()) / len(groups.samples)
                self._last_ratio = mean_milli / to_milli(target.value)
                self._last_value = mean_milli / 1000
            if target.type == "Utilization":
                return resource_utilization_replicas(
                    current,
                    groups,
                    self._requests(view, str(spec.metric)),
                    int(target.value),
                    self._tol,
                )
            return plain_metric_replicas(current, groups, to_milli(target.value), self._tol)
        value = self._reader(view, index, spec)
        if value is None:
            raise MetricError(f"unable to get metric {spec.label}")
        self._last_value = value
        usage = to_milli(value)
        if target.type == "AverageValue":  # status.replicas: pods that exist
            if pods:
                self._last_ratio = usage / (to_milli(target.value) * len(pods))
            return average_value_replicas(len(pods), usage, to_milli(target.value), self._tol)
        self._last_ratio = usage / to_milli(target.value)
        ready = sum(1 for p in view.pods if p.phase == "Running" and p.ready) if view.pods else None
        return value_replicas(current, usage, to_milli(target.value), ready, self._tol)

    @staticmethod
    def _requests(view: AutoscalerView, resource: str) -> dict[str, int]:
        """`calculateRequests`: every listed pod must request the resource."""
        out = {}
        for pod in view.pods:
            if resource not in pod.requests:
                raise MetricError(f"missing request for {resource} in pod {pod.name}")
            out[pod.name] = to_milli(pod.requests[resource])
        return out


def build(params: HpaParams) -> list[HpaController]:
    return [HpaController(params)]


SPEC = PolicySpec(
    name="hpa",
    params=HpaParams,
    build=build,
    summary=(
        "Kubernetes HPA autoscaling/v2: per-metric ratio proposals, max, behavior or legacy "
        "stabilization."
    ),
)
