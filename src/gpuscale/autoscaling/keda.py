"""KEDA ScaledObject with Prometheus triggers: the operator's 0<->1 loop plus the HPA it generates.

Reference: ../shared/reference/layer3-replica-autoscaling.md section 2 (kedacore/keda
`pkg/scaling/executor/scale_scaledobjects.go`, `controllers/keda/hpa.go`,
`pkg/scalers/prometheus_scaler.go`, `pkg/fallback/fallback.go`). `build` returns two controllers:
`KedaOperator` (every pollingInterval: activation and cooldown) and an `HpaController` named
"keda-hpa" (every 15 s: External metrics, min = max(minReplicaCount, 1), behavior copied or None).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuscale.autoscaling.base import AutoscalerView, PolicySpec, ReplicaAutoscaler
from gpuscale.autoscaling.behavior import Behavior
from gpuscale.autoscaling.hpa import (
    Fallback,
    HpaController,
    HpaParams,
    MetricQuery,
    MetricSpec,
    MetricTarget,
    promql_result,
    query_value,
)
from gpuscale.promql import PromQLError, Scalar, StringValue, Vector


class PrometheusTrigger(BaseModel):
    """A `type: prometheus` trigger; the query must return a single series (KEDA refuses
    more)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["prometheus"] = "prometheus"
    name: str | None = Field(default=None, description=(
        "The trigger's `name` (what a scalingModifiers formula calls it); None = KEDA's "
        "metric name s<index>-prometheus."))
    query: MetricQuery = Field(
        description=("The PromQL query as written in the ScaledObject (a string), or the "
                     "shorthand {metric, aggregation}, e.g. sum(vllm:num_requests_waiting).")
    )
    threshold: float = Field(
        gt=0, description="HPA target per replica (AverageValue) or in total (Value)."
    )
    activation_threshold: float = Field(
        default=0.0,
        description="Active iff value > this, strictly (prometheus_scaler.go; default 0).",
    )
    metric_type: Literal["AverageValue", "Value"] = Field(
        default="AverageValue", description="KEDA default AverageValue."
    )
    ignore_null_values: bool = Field(
        default=True,
        description="Empty result or NaN counts as 0 instead of an error (default true).",
    )


class FallbackParams(BaseModel):
    """`spec.fallback` with the default `behavior: static`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    failure_threshold: int = Field(
        ge=0, description="Consecutive failed reads tolerated before falling back."
    )
    replicas: int = Field(ge=0, description="Replica count the synthetic metric steers the HPA to.")


class HorizontalPodAutoscalerConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    behavior: Behavior | None = Field(
        default=None, description="Copied verbatim into the generated HPA."
    )


class Advanced(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    horizontal_pod_autoscaler_config: HorizontalPodAutoscalerConfig = Field(
        default_factory=HorizontalPodAutoscalerConfig
    )


class KedaParams(BaseModel):
    """A ScaledObject; defaults are KEDA's (reference 2.1)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["keda"] = "keda"
    polling_interval_s: float = Field(
        default=30.0, gt=0, description="pollingInterval (default 30 s): the 0<->1 loop period."
    )
    cooldown_period_s: float = Field(
        default=300.0,
        ge=0,
        description="cooldownPeriod (default 300 s) after the last active poll before ->0.",
    )
    initial_cooldown_period_s: float = Field(
        default=0.0, ge=0, description="initialCooldownPeriod (default 0) after creation."
    )
    min_replica_count: int = Field(
        default=0, ge=0, description="minReplicaCount (default 0 = scale to zero)."
    )
    max_replica_count: int = Field(
        default=100, ge=1, description="maxReplicaCount (default 100), the HPA's maxReplicas."
    )
    idle_replica_count: int | None = Field(
        default=None, ge=0, description="idleReplicaCount; must be < min (docs: only 0 works)."
    )
    triggers: tuple[PrometheusTrigger, ...] = Field(
        min_length=1, description="Prometheus triggers; active if any is."
    )
    advanced: Advanced = Field(default_factory=Advanced)
    fallback: FallbackParams | None = Field(
        default=None, description="Static fallback on failing triggers."
    )
    hpa_sync_period_s: float = Field(
        default=15.0,
        gt=0,
        description="Sync period of the generated HPA (controller default 15 s).",
    )
    hpa_tolerance_frac: float = Field(
        default=0.1, ge=0, description="Controller tolerance of the generated HPA (default 0.1)."
    )

    @model_validator(mode="after")
    def _check_counts(self) -> KedaParams:
        if self.min_replica_count > self.max_replica_count:
            raise ValueError(
                f"min_replica_count {self.min_replica_count} > max_replica_count "
                f"{self.max_replica_count}"
            )
        if (
            self.idle_replica_count is not None
            and self.idle_replica_count >= self.min_replica_count
        ):
            raise ValueError(
                "idle_replica_count must be lower than min_replica_count (KEDA admission check)"
            )
        return self


@dataclass(frozen=True)
class TriggerReading:
    """One poll of a Prometheus trigger: what Prometheus returned and what KEDA made of it."""

    value: float | None  # the single series' value Prometheus returned; None: not one series
    read_as: float | None  # the scaler's value (0 for an ignored null); None: an error
    error: str = ""


def read_trigger(view: AutoscalerView, query: MetricQuery,
                 ignore_null_values: bool) -> TriggerReading:
    """The Prometheus scaler's `ExecutePromQuery` (kedacore/keda pkg/scalers/
    prometheus_scaler.go): an empty result, or NaN/Inf, reads 0 when `ignoreNullValues`
    (default) and is an error otherwise; more than one series is always an error ("returned
    multiple elements"); a scalar or string result does not unmarshal (an error); an instant
    query of a range vector has no `value` (empty)."""
    if query.promql is None:
        value = query_value(view, query)
        if value is None or not math.isfinite(value):
            return TriggerReading(value, 0.0 if ignore_null_values else None,
                                  "" if ignore_null_values else "empty or not finite")
        return TriggerReading(value, value)
    result = promql_result(view, query.promql)
    if isinstance(result, PromQLError):
        return TriggerReading(None, None, str(result))
    if isinstance(result, (Scalar, StringValue)):
        return TriggerReading(None, None, "the result is not a vector (KEDA cannot unmarshal it)")
    rows = result.rows() if isinstance(result, Vector) else []
    if len(rows) > 1:
        return TriggerReading(None, None, f"query returned multiple elements ({len(rows)})")
    if not rows:
        return TriggerReading(None, 0.0 if ignore_null_values else None,
                              "" if ignore_null_values else "the result is empty")
    value = rows[0][1]
    if not math.isfinite(value):
        return TriggerReading(value, 0.0 if ignore_null_values else None,
                              "" if ignore_null_values else f"query returns {value}")
    return TriggerReading(value, value)


def trigger_value(
    view: AutoscalerView, query: MetricQuery, ignore_null_values: bool
) -> float | None:
    """The Prometheus scaler's value (`read_trigger`); None is an error."""
    return read_trigger(view, query, ignore_null_values).read_as


@dataclass(frozen=True)
class KedaState:
    created_s: float | None = None  # the ScaledObject's creationTimestamp (first poll)
    last_active_s: float | None = None  # status.lastActiveTime
    condition: str = ""


class KedaOperator:
    """KEDA's own loop (`RequestScale`): owns 0 <-> max(min, 1) and -> idle; the HPA owns the
    rest."""

    def __init__(self, params: KedaParams):
        self.name = "keda-operator"
        self.period_s = params.polling_interval_s
        self.params = params

    def initial_state(self) -> KedaState:
        return KedaState()

    def decide(self, view: AutoscalerView, state: KedaState) -> tuple[int | None, KedaState]:
        p, now, current = self.params, view.now_s, view.current_replicas
        if state.created_s is None:
            state = replace(state, created_s=now)
        values = [trigger_value(view, t.query, t.ignore_null_values) for t in p.triggers]
        is_error = any(v is None for v in values)
        is_active = any(
            v is not None and v > t.activation_threshold
            for v, t in zip(values, p.triggers, strict=True)
        )
        idle, min_count = p.idle_replica_count, p.min_replica_count
        if is_active:
            if (idle is not None and current < min_count) or current == 0:
                # scaleFromZeroOrIdle: minReplicaCount if > 0, else 1
                return self._change(current, min_count if min_count > 0 else 1), replace(
                    state, last_active_s=now, condition="Activated"
                )
            if is_error:
                return None, replace(state, condition="TriggerError")
            return None, replace(state, last_active_s=now, condition="Active")
        if is_error and p.fallback is not None and p.fallback.replicas != 0:
            return None, replace(state, condition="FallbackPending")
        if (idle is not None and current > idle) or (current > 0 and min_count == 0):
            if self._cooled_down(now, state):
                target = idle if idle is not None else min_count  # getIdleOrMinimumReplicaCount
                return self._change(current, target), replace(state, condition="Deactivated")
            return None, replace(state, condition="CoolingDown")
        if current < min_count and idle is None:
            return min_count, replace(state, condition="BelowMin")
        return None, replace(state, condition="Inactive")

    def explain(self, view: AutoscalerView, state: KedaState) -> dict[str, Any]:
        """Activation: each trigger's value against its activation threshold (re-read from
        the same view `decide` saw; only the decision log calls this)."""
        triggers = []
        active = False
        for index, t in enumerate(self.params.triggers):
            reading = read_trigger(view, t.query, t.ignore_null_values)
            entry: dict[str, Any] = {
                "name": t.name or f"s{index}-prometheus", "query": t.query.label,
                "value": reading.value, "read_as": reading.read_as, "eval_time_s": view.now_s,
                "activation_threshold": t.activation_threshold}
            if reading.error:
                entry["error"] = reading.error
            triggers.append(entry)
            active = active or (reading.read_as is not None
                                and reading.read_as > t.activation_threshold)
        return {"reason": state.condition, "triggers": triggers, "active": active,
                "last_active_s": state.last_active_s,
                "cooldown_period_s": self.params.cooldown_period_s}

    def _cooled_down(self, now: float, state: KedaState) -> bool:
        """scaleToZeroOrIdle: strictly more than the cooldown since the last active poll."""
        p = self.params
        if state.last_active_s is None:
            created = state.created_s if state.created_s is not None else now
            return created + p.initial_cooldown_period_s < now
        return state.last_active_s + p.cooldown_period_s < now

    @staticmethod
    def _change(current: int, target: int) -> int | None:
        return None if target == current else target


def generated_hpa_params(params: KedaParams) -> HpaParams:
    """controllers/keda/hpa.go: one External metric per trigger (s<i>-prometheus), target =
    threshold."""
    metrics = tuple(
        MetricSpec(
            type="External",
            query=t.query,
            target=MetricTarget(type=t.metric_type, value=t.threshold),
        )
        for t in params.triggers
    )
    return HpaParams(
        min_replicas=max(params.min_replica_count, 1),
        max_replicas=params.max_replica_count,
        metrics=metrics,
        behavior=params.advanced.horizontal_pod_autoscaler_config.behavior,
        tolerance_frac=params.hpa_tolerance_frac,
        sync_period_s=params.hpa_sync_period_s,
    )


def build(params: KedaParams) -> list[ReplicaAutoscaler]:
    # Keyed by query: two triggers with the same query but different ignore_null_values flags
    # would share the last flag (an unlikely manifest; KEDA itself reads each trigger separately).
    ignore = {t.query: t.ignore_null_values for t in params.triggers}

    def reader(view: AutoscalerView, spec: MetricSpec) -> float | None:
        assert spec.query is not None  # every generated metric carries its trigger's query
        return trigger_value(view, spec.query, ignore[spec.query])

    fb = params.fallback
    hpa = HpaController(
        generated_hpa_params(params), name="keda-hpa", reader=reader,
        fallback=Fallback(fb.failure_threshold, fb.replicas) if fb is not None else None,
    )
    return [KedaOperator(params), hpa]


SPEC = PolicySpec(
    name="keda",
    params=KedaParams,
    build=build,
    summary=(
        "KEDA ScaledObject on Prometheus: operator loop for "
        "0<->1 plus a generated HPA for 1<->N."
    ),
)
