"""KEDA ScaledObject: its parameters, and what one trigger reads.

Reference: ../shared/reference/layer3-replica-autoscaling.md section 2, and kedacore/keda (read
at 8b4f083, 2026-08-20): `apis/keda/v1alpha1/scaledobject_types.go` (fields, pause annotations,
fallback behaviors), `apis/keda/v1alpha1/scaletriggers_types.go` (trigger names unique),
`apis/keda/v1alpha1/scaledobject_webhook.go` (formula and target validation),
`pkg/scalers/prometheus_scaler.go`. The controllers are in keda_operator.py (the operator's
activation/cooldown loop and the HPA KEDA generates) and keda_runtime.py (KEDA's scale handler
and metrics server: fallback, cached metrics, the formula's composite metric); they load when a
run builds a KEDA autoscaler (`registry.lazy_build`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from gpuscale.autoscaling.base import AutoscalerView, PolicySpec
from gpuscale.autoscaling.behavior import Behavior
from gpuscale.autoscaling.hpa import MetricQuery, promql_result, query_value
from gpuscale.autoscaling.keda_cron import CronTrigger
from gpuscale.promql import PromQLError, Scalar, StringValue, Vector
from gpuscale.registry import lazy_build

MetricType = Literal["AverageValue", "Value"]
FallbackBehavior = Literal["static", "currentReplicas", "currentReplicasIfHigher",
                           "currentReplicasIfLower", "scalingModifiers"]


class KedaTrigger(Protocol):
    """What the operator and the metrics server need of any trigger. A trigger whose value
    comes from the clock (KEDA `cron`) implements `value_at`; Prometheus triggers are read by
    `trigger_value`."""

    @property
    def name(self) -> str | None: ...  # the trigger's `name`, how a formula refers to it

    @property
    def metric_type(self) -> MetricType: ...

    @property
    def use_cached_metrics(self) -> bool: ...

    @property
    def target_value(self) -> float: ...  # the HPA target of its metric

    @property
    def label(self) -> str: ...  # what the decision log shows for it

    def is_active(self, value: float) -> bool: ...  # the scaler's activity for a reading


class PrometheusTrigger(BaseModel):
    """A `type: prometheus` trigger; the query must return a single series (KEDA refuses
    more)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["prometheus"] = "prometheus"
    name: str | None = Field(default=None, description=(
        "The trigger's `name` (unique): what a scalingModifiers formula calls it; None = "
        "KEDA's metric name s<index>-prometheus."))
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
    metric_type: MetricType = Field(
        default="AverageValue", description="KEDA default AverageValue."
    )
    ignore_null_values: bool = Field(
        default=True,
        description="Empty result or NaN counts as 0 instead of an error (default true).",
    )
    use_cached_metrics: bool = Field(
        default=False,
        description="useCachedMetrics: the HPA reads the value of the operator's last poll "
        "instead of querying again.",
    )

    @property
    def target_value(self) -> float:
        return self.threshold

    @property
    def label(self) -> str:
        return self.query.label

    def is_active(self, value: float) -> bool:
        return value > self.activation_threshold


@dataclass(frozen=True)
class TriggerReading:
    """One read of a Prometheus trigger: what Prometheus returned and what KEDA made of it."""

    value: float | None  # the single series' value Prometheus returned; None: not one series
    read_as: float | None  # the scaler's value (0 for an ignored null); None: an error
    error: str = ""


def trigger_value(view: AutoscalerView, query: MetricQuery,
                  ignore_null_values: bool) -> TriggerReading:
    """The Prometheus scaler's `ExecutePromQuery` (prometheus_scaler.go), the one place a
    trigger's value is computed: an empty result, or NaN/Inf, reads 0 when
    `ignoreNullValues` (default) and is an error otherwise; more than one series is always an
    error ("returned multiple elements"); a scalar or string result does not unmarshal (an
    error); an instant query of a range vector has no `value` (empty). The shorthand
    `{metric, aggregation}` reads the latest scrape with the same null rules."""
    if query.promql is None:
        value = query_value(view, query)
        if value is None or not math.isfinite(value):
            return _null(value, ignore_null_values, "empty or not finite")
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
        return _null(None, ignore_null_values, "the result is empty")
    value = rows[0][1]
    if not math.isfinite(value):
        return _null(value, ignore_null_values, f"query returns {value}")
    return TriggerReading(value, value)


def _null(value: float | None, ignore_null_values: bool, why: str) -> TriggerReading:
    """An empty or non-finite answer: 0 when nulls are ignored, else an error."""
    if ignore_null_values:
        return TriggerReading(value, 0.0)
    return TriggerReading(value, None, why)


def _trigger_type(value: Any) -> str:
    """A trigger's `type` (absent: prometheus), so a bad cron trigger is reported as a cron
    trigger, not as a Prometheus one missing its query."""
    kind = value.get("type", "prometheus") if isinstance(value, dict) else value.type
    return kind if kind in ("prometheus", "cron") else "prometheus"


# A trigger as the scenario writes it: Prometheus, or KEDA `cron` (keda_cron.py).
TriggerSpec = Annotated[Annotated[PrometheusTrigger, Tag("prometheus")]
                        | Annotated[CronTrigger, Tag("cron")], Discriminator(_trigger_type)]


class FallbackParams(BaseModel):
    """`spec.fallback`: what the metrics server reports after repeated scaler errors."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    failure_threshold: int = Field(
        ge=0, description="Consecutive failed reads tolerated before falling back."
    )
    replicas: int = Field(ge=0, description="Replica count the synthetic metric steers the HPA to.")
    behavior: FallbackBehavior = Field(
        default="static",
        description="static: `replicas`; currentReplicas(IfHigher|IfLower): the target's count "
        "(or the higher / lower of the two); scalingModifiers: failed triggers reach the formula "
        "as nil (fallback.go).",
    )


class ScalingModifiers(BaseModel):
    """`advanced.scalingModifiers`: one composite metric computed by a formula over the
    triggers' values by name, in place of one metric per trigger."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    formula: str = Field(min_length=1, description="expr-lang expression over trigger names.")
    target: float = Field(gt=0, description="HPA target of the composite metric.")
    activation_target: float = Field(
        default=0.0, description="Active iff the composite value > this (default 0)."
    )
    metric_type: MetricType = Field(default="AverageValue", description="Of the composite.")


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
    scaling_modifiers: ScalingModifiers | None = Field(
        default=None, description="A formula combining the triggers into one metric."
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
    triggers: tuple[TriggerSpec, ...] = Field(
        min_length=1, description="Prometheus and cron triggers: one HPA metric each (the HPA "
        "takes the largest proposal), active if any is; or inputs of "
        "`advanced.scaling_modifiers`."
    )
    advanced: Advanced = Field(default_factory=Advanced)
    fallback: FallbackParams | None = Field(
        default=None, description="What to report after repeated scaler errors."
    )
    paused: bool = Field(
        default=False, description="autoscaling.keda.sh/paused: no scaling at all; the "
        "replicas stay where they are."
    )
    paused_replicas: int | None = Field(
        default=None, ge=0, description="autoscaling.keda.sh/paused-replicas: the target is "
        "set to this count and no scaling happens."
    )
    paused_scale_in: bool = Field(
        default=False, description="autoscaling.keda.sh/paused-scale-in: the HPA's scaleDown "
        "selectPolicy is Disabled and the operator never deactivates."
    )
    paused_scale_out: bool = Field(
        default=False, description="autoscaling.keda.sh/paused-scale-out: the HPA's scaleUp "
        "selectPolicy is Disabled and the operator never activates from 0 or idle."
    )
    force_activation: bool = Field(
        default=False, description="autoscaling.keda.sh/force-activation: active whatever "
        "the triggers read."
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

    @model_validator(mode="after")
    def _check_triggers(self) -> KedaParams:
        names = [t.name for t in self.triggers if t.name]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:  # scaletriggers_types.go ValidateTriggers
            raise ValueError(f"trigger name {repeated[0]!r} is defined more than once; names "
                             "must be unique")
        modifiers = self.advanced.scaling_modifiers
        if modifiers is not None:
            from gpuscale.autoscaling.formula import Formula, FormulaError

            try:
                Formula.compile(modifiers.formula, names)
            except FormulaError as exc:
                raise ValueError(f"advanced.scaling_modifiers.formula: {exc}") from None
        if self.fallback is not None and self.fallback.behavior == "scalingModifiers" \
                and modifiers is None:
            raise ValueError("fallback behavior scalingModifiers requires "
                             "advanced.scaling_modifiers.formula (KEDA admission check)")
        return self

    @property
    def fallback_enabled(self) -> bool:
        """`HasValidFallback`: with a formula, fallback also needs an integer target > 0
        (fallback.go parses the target with ParseInt); otherwise it is ignored."""
        if self.fallback is None:
            return False
        modifiers = self.advanced.scaling_modifiers
        return modifiers is None or modifiers.target == int(modifiers.target)


SPEC = PolicySpec(
    name="keda",
    params=KedaParams,
    build=lazy_build("gpuscale.autoscaling.keda_operator"),
    summary=(
        "KEDA ScaledObject: operator loop for 0<->1 plus a generated HPA for 1<->N; "
        "triggers, scalingModifiers formulas, fallback, pause annotations."
    ),
    needs_context=True,  # cron triggers read the wall clock of the scenario's start_time
)
