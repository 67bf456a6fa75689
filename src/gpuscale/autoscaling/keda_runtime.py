"""KEDA's scale handler and metrics server for one ScaledObject: what its two loops read.

Both loops read the triggers through one `ScaledObjectRuntime`, which holds the ScaledObject's
status they share: per trigger its consecutive failures (`status.health`, counted by the
operator's polls and the HPA's queries alike) and, for `useCachedMetrics` triggers, the last
poll's reading. Sources (kedacore/keda at 8b4f083):

- `pkg/scaling/scale_handler.go`: `getScaledObjectState` (the poll: every trigger read, active
  if any is; with a formula, active iff no trigger failed and the composite value >
  activationTarget) and `GetScaledObjectMetrics` (an HPA query: its trigger, or every trigger
  for the composite metric; any failure below the fallback threshold fails the query);
- `pkg/fallback/fallback.go`: after more than `failureThreshold` consecutive failures the
  metric becomes `target x replicas` (`/ ready pods` for Value metrics), replicas per the
  fallback behavior, or, with `behavior: scalingModifiers`, the trigger reaches the formula as
  nil; a success resets the count;
- `pkg/scaling/modifiers/formula.go`: the formula over the triggers' values by name; while a
  fallback is active the composite is the fallback value; a nil result means
  `fallback.replicas x target`; the composite is truncated to milli-units (`SetMilli(int64(v *
  1000))`);
- `pkg/scalers/scaler.go` `GenerateMetricInMili`: a trigger's metric is its value to three
  decimals, negative, NaN and Inf as 0 (the value the formula and the HPA see; activation
  compares the raw value).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from gpuscale.autoscaling.base import AutoscalerView
from gpuscale.autoscaling.formula import Formula, FormulaError
from gpuscale.autoscaling.keda import (
    KedaParams,
    KedaTrigger,
    PrometheusTrigger,
    TriggerReading,
    trigger_value,
)


def read_trigger(view: AutoscalerView, trigger: KedaTrigger) -> TriggerReading:
    """One trigger's reading now (`read_as` None = the scaler failed). Prometheus triggers go
    through `trigger_value`; a trigger that reads the clock (cron) provides `value_at`."""
    if isinstance(trigger, PrometheusTrigger):
        return trigger_value(view, trigger.query, trigger.ignore_null_values)
    value = trigger.value_at(view)  # type: ignore[attr-defined]
    return TriggerReading(value, value, "" if value is not None else "the scaler failed")


def metric_value(value: float) -> float:
    """`GenerateMetricInMili`: the value as KEDA hands it on, three decimals, >= 0."""
    if not math.isfinite(value) or value < 0:
        return 0.0
    return float(f"{value:.3f}")


def truncated_milli(value: float) -> float:
    """`int64(value * 1000)` milli-units, back as a float (composite and fallback metrics)."""
    return math.trunc(value * 1000.0) / 1000.0 if math.isfinite(value) else 0.0


@dataclass(frozen=True)
class Metric:
    """A trigger's metric after the fallback rules: a value, a fallback value, a nil for the
    formula (scalingModifiers fallback), or an error (value None, error True)."""

    value: float | None
    raw: float | None = None  # the scaler's own reading (activity compares it)
    fallback: bool = False
    error: bool = False
    reading: TriggerReading | None = None  # what a fresh read returned (None: from the cache)


ERROR = Metric(None, error=True)


@dataclass(frozen=True)
class Poll:
    """One `getScaledObjectState`: activity, errors, each trigger's metric, the composite."""

    active: bool
    error: bool
    fallback: bool
    metrics: tuple[Metric, ...]
    composite: float | None  # the formula's value (None without a formula or when it failed)
    eval_time_s: float  # when the triggers' queries were evaluated (the poll's time)


class ScaledObjectRuntime:
    """The ScaledObject's triggers, formula and shared status (see the module docstring)."""

    def __init__(self, params: KedaParams, triggers: Sequence[KedaTrigger] | None = None):
        self.params = params
        found: Sequence[KedaTrigger] = triggers or params.triggers
        self.triggers = tuple(found)
        modifiers = params.advanced.scaling_modifiers
        self.modifiers = modifiers
        names = [t.name for t in self.triggers if t.name]
        self.formula = Formula.compile(modifiers.formula, names) if modifiers else None
        self.failures = [0] * len(self.triggers)  # status.health numberOfFailures
        self.cached: list[Metric | None] = [None] * len(self.triggers)

    # -- one trigger ---------------------------------------------------------------------
    def with_fallback(self, view: AutoscalerView, index: int, raw: float | None) -> Metric:
        """`GetMetricsWithFallback` for trigger `index`, counting failures in the status."""
        fb = self.params.fallback if self.params.fallback_enabled else None
        if raw is not None:
            if fb is not None:
                self.failures[index] = 0
            return Metric(metric_value(raw), raw)
        if fb is None:
            return ERROR
        self.failures[index] += 1
        if self.failures[index] <= fb.failure_threshold:
            return ERROR
        if fb.behavior == "scalingModifiers":
            return Metric(None)  # the formula sees nil (a -1 placeholder in KEDA)
        value = self._fallback_value(view, self.triggers[index])
        return ERROR if value is None else Metric(value, fallback=True)

    def _fallback_value(self, view: AutoscalerView, trigger: KedaTrigger) -> float | None:
        """`doFallback`: target x replicas (per behavior), / ready pods for a Value metric."""
        fb = self.params.fallback
        assert fb is not None
        current = view.current_replicas
        replicas = {"currentReplicas": current,
                    "currentReplicasIfHigher": max(current, fb.replicas),
                    "currentReplicasIfLower": min(current, fb.replicas)}.get(fb.behavior,
                                                                              fb.replicas)
        if self.modifiers is not None:
            target, metric_type = self.modifiers.target, self.modifiers.metric_type
        else:
            target, metric_type = metric_value(trigger.target_value), trigger.metric_type
        share = float(replicas)
        if metric_type == "Value":
            ready = sum(1 for p in view.pods if p.phase == "Running" and p.ready)
            if ready == 0:
                return None  # "readyReplicas is zero, cannot do fallback"
            share /= ready
        return truncated_milli(target * share)

    def _read(self, view: AutoscalerView, index: int, use_cache: bool) -> Metric:
        trigger = self.triggers[index]
        cached = self.cached[index]
        if use_cache and trigger.use_cached_metrics and cached is not None:
            # The poll's record goes through the fallback rules again (scale_handler.go).
            return self.with_fallback(view, index, None if cached.error else cached.value)
        reading = read_trigger(view, trigger)
        return replace(self.with_fallback(view, index, reading.read_as), reading=reading)

    # -- the operator's poll --------------------------------------------------------------
    def poll(self, view: AutoscalerView) -> Poll:
        metrics = []
        active = error = fallback = False
        for index, trigger in enumerate(self.triggers):
            metric = self._read(view, index, use_cache=False)
            if trigger.use_cached_metrics:
                self.cached[index] = metric
            metrics.append(metric)
            error = error or metric.error
            fallback = fallback or metric.fallback
            active = active or metric.fallback or (
                metric.raw is not None and trigger.is_active(metric.raw))
        composite = None
        if self.modifiers is not None:
            composite = self._composite(metrics)
            # With a formula the activity is the composite's, and none if any trigger failed.
            active = not error and composite is not None \
                and composite > self.modifiers.activation_target
        return Poll(active, error, fallback, tuple(metrics), composite, view.now_s)

    # -- the HPA's queries ----------------------------------------------------------------
    def hpa_metric(self, view: AutoscalerView, index: int) -> float | None:
        """The value KEDA's metrics server returns for the generated HPA's metric `index`:
        trigger `index`, or the composite when there is a formula; None = the query fails."""
        if self.modifiers is None:
            return self._read(view, index, use_cache=True).value
        metrics = [self._read(view, i, use_cache=True) for i in range(len(self.triggers))]
        if any(m.error for m in metrics) and not any(m.fallback for m in metrics):
            return None
        return self._composite(metrics)

    def _composite(self, metrics: Sequence[Metric]) -> float | None:
        """`HandleScalingModifiers`: the formula's value, the fallback value while one is
        active, `fallback.replicas x target` when the formula gives nil; None if it fails."""
        assert self.modifiers is not None and self.formula is not None
        fallen = [m.value for m in metrics if m.fallback]
        if fallen:
            return fallen[0]
        values = {t.name: m.value for t, m in zip(self.triggers, metrics, strict=True)
                  if t.name and not m.error}
        try:
            result = self.formula.evaluate(values)
        except FormulaError:
            return None  # logged by KEDA; the HPA gets no metric, the poll is inactive
        if result is None:
            fb = self.params.fallback
            if fb is None:
                return None  # "formula evaluated to nil but no fallback is configured"
            result = fb.replicas * self.modifiers.target
        return truncated_milli(result)

    def formula_inputs(self, metrics: Sequence[Metric]) -> dict[str, float | None]:
        """The values by trigger name the formula saw (for the decision log)."""
        return {t.name: m.value for t, m in zip(self.triggers, metrics, strict=True)
                if t.name}
