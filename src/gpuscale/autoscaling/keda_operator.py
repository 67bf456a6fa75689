"""KEDA's two loops for one ScaledObject: the operator (0 <-> max(min, 1), idle, cooldown)
and the HPA it generates (1 <-> N), both reading through one `ScaledObjectRuntime`.

Sources (kedacore/keda at 8b4f083): `pkg/scaling/executor/scale_scaledobjects.go`
(`RequestScale`, `scaleToZeroOrIdle`, `scaleFromZeroOrIdle`, `handlePaused`),
`controllers/keda/hpa.go` (`newHPAForScaledObject`: min = max(minReplicaCount, 1), the
behavior copied, paused-scale-in/out set that direction's selectPolicy to Disabled;
`getScaledObjectMetricSpecs`: one External metric per trigger, or only the composite metric
when a formula is set), `controllers/keda/scaledobject_controller.go` (`handlePause`: paused
deletes the HPA and stops the loop; paused-replicas also sets the target to that count).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gpuscale.autoscaling.base import (
    AutoscalerContext,
    AutoscalerView,
    NoExplanation,
    ReplicaAutoscaler,
)
from gpuscale.autoscaling.behavior import Behavior, ScalingRules
from gpuscale.autoscaling.hpa import (
    HpaController,
    HpaParams,
    MetricQuery,
    MetricSpec,
    MetricTarget,
)
from gpuscale.autoscaling.keda import KedaParams, KedaTrigger
from gpuscale.autoscaling.keda_cron import CronReader, CronTrigger
from gpuscale.autoscaling.keda_runtime import Metric, Poll, ScaledObjectRuntime, truncated_milli

COMPOSITE_METRIC = "composite-metric"  # kedav1alpha1.CompositeMetricName


@dataclass(frozen=True)
class KedaState:
    created_s: float | None = None  # the ScaledObject's creationTimestamp (first poll)
    last_active_s: float | None = None  # status.lastActiveTime
    condition: str = ""
    last_poll: Poll | None = None  # what the last poll read (for the decision log)


class KedaOperator:
    """KEDA's own loop (`RequestScale`): owns 0 <-> max(min, 1) and -> idle; the HPA owns the
    rest."""

    def __init__(self, params: KedaParams, runtime: ScaledObjectRuntime):
        self.name = "keda-operator"
        self.period_s = params.polling_interval_s
        self.params = params
        self.runtime = runtime

    def initial_state(self) -> KedaState:
        return KedaState()

    def decide(self, view: AutoscalerView, state: KedaState) -> tuple[int | None, KedaState]:
        now = view.now_s
        poll = self.runtime.poll(view)
        state = replace(state, created_s=now if state.created_s is None else state.created_s,
                        last_poll=poll)
        if poll.active or self.params.force_activation:
            return self._active(view, state, poll.error)
        return self._inactive(view, state, poll.error)

    def _active(self, view: AutoscalerView, state: KedaState,
                error: bool) -> tuple[int | None, KedaState]:
        p, current, now = self.params, view.current_replicas, view.now_s
        if (p.idle_replica_count is not None and current < p.min_replica_count) or current == 0:
            if p.paused_scale_out:  # scaleFromZeroOrIdle returns before scaling
                return None, replace(state, condition="ScaleOutPaused")
            # scaleFromZeroOrIdle: minReplicaCount if > 0, else 1
            target = p.min_replica_count if p.min_replica_count > 0 else 1
            return _change(current, target), replace(state, last_active_s=now,
                                                     condition="Activated")
        if error:  # PartialTriggerError: lastActiveTime is not refreshed
            return None, replace(state, condition="TriggerError")
        return None, replace(state, last_active_s=now, condition="Active")

    def _inactive(self, view: AutoscalerView, state: KedaState,
                  error: bool) -> tuple[int | None, KedaState]:
        p, current = self.params, view.current_replicas
        idle, min_count = p.idle_replica_count, p.min_replica_count
        if error and p.fallback is not None and p.fallback.replicas != 0:
            return None, replace(state, condition="FallbackPending")
        if error and p.fallback is None:  # no scaling while the triggers fail
            return None, replace(state, condition="TriggerError")
        if (idle is not None and current > idle) or (current > 0 and min_count == 0):
            if p.paused_scale_in:
                return None, replace(state, condition="ScaleInPaused")
            if self._cooled_down(view.now_s, state):
                target = idle if idle is not None else min_count  # getIdleOrMinimumReplicaCount
                return _change(current, target), replace(state, condition="Deactivated")
            return None, replace(state, condition="CoolingDown")
        if current < min_count and idle is None:
            return min_count, replace(state, condition="BelowMin")
        return None, replace(state, condition="Inactive")

    def _cooled_down(self, now: float, state: KedaState) -> bool:
        """scaleToZeroOrIdle: strictly more than the cooldown since the last active poll."""
        p = self.params
        if state.last_active_s is None:
            created = state.created_s if state.created_s is not None else now
            return created + p.initial_cooldown_period_s < now
        return state.last_active_s + p.cooldown_period_s < now

    def explain(self, view: AutoscalerView, state: KedaState) -> dict[str, Any]:
        """Activation: each trigger's name, query, value (what Prometheus returned), what the
        scaler read it as and the time it was evaluated, as the poll read them, and the
        formula's composite value (only the decision log calls this)."""
        poll, runtime = state.last_poll, self.runtime
        triggers = []
        if poll is not None:
            for index, (trigger, metric) in enumerate(zip(runtime.triggers, poll.metrics,
                                                          strict=True)):
                triggers.append(_trigger_record(index, trigger, metric, poll.eval_time_s))
        out: dict[str, Any] = {
            "reason": state.condition, "triggers": triggers,
            "active": poll is not None and poll.active, "last_active_s": state.last_active_s,
            "cooldown_period_s": self.params.cooldown_period_s}
        if runtime.modifiers is not None and poll is not None:
            out["formula"] = {"value": poll.composite,
                              "activation_target": runtime.modifiers.activation_target}
        return out


def _trigger_record(index: int, trigger: KedaTrigger, metric: Metric,
                    eval_time_s: float) -> dict[str, Any]:
    """One trigger of a poll in the decision log: `value` is Prometheus' answer to `query`
    at `eval_time_s` (its one series; None otherwise), `read_as` the scaler's reading (0 for
    an ignored null, None for an error), `metric` what the HPA and the formula see."""
    reading = metric.reading
    record: dict[str, Any] = {
        # An unnamed trigger is KEDA's metric s<index>-<its scaler's metric>
        # (GenerateMetricNameWithIndex): s<i>-prometheus, or s<i>-cron-<zone>-<start>-<end>.
        "name": trigger.name or f"s{index}-{getattr(trigger, 'metric_name', 'prometheus')}",
        "query": trigger.label,
        "value": reading.value if reading is not None else metric.raw,
        "read_as": metric.raw, "eval_time_s": eval_time_s, "metric": metric.value,
        "fallback": metric.fallback,
        "activation_threshold": getattr(trigger, "activation_threshold", None),
        "active": metric.raw is not None and trigger.is_active(metric.raw)}
    if reading is not None and reading.error:
        record["error"] = reading.error
    return record


def _change(current: int, target: int) -> int | None:
    return None if target == current else target


class KedaPaused(NoExplanation):
    """A paused ScaledObject: no HPA, no scale loop; `paused-replicas` sets that count."""

    def __init__(self, params: KedaParams):
        self.name = "keda-operator"
        self.period_s = params.polling_interval_s
        self.replicas = params.paused_replicas

    def initial_state(self) -> None:
        return None

    def decide(self, view: AutoscalerView, state: None) -> tuple[int | None, None]:
        if self.replicas is None or self.replicas == view.current_replicas:
            return None, None
        return self.replicas, None


def generated_behavior(params: KedaParams) -> Behavior | None:
    """The HPA's behavior: copied, with paused-scale-in/out disabling that direction (an
    unset behavior becomes an empty one, which the API server fills with its defaults)."""
    behavior = params.advanced.horizontal_pod_autoscaler_config.behavior
    if not (params.paused_scale_in or params.paused_scale_out):
        return behavior
    behavior = behavior or Behavior()
    for direction, paused in (("scale_down", params.paused_scale_in),
                              ("scale_up", params.paused_scale_out)):
        if paused:
            rules = getattr(behavior, direction) or ScalingRules()
            behavior = behavior.model_copy(
                update={direction: rules.model_copy(update={"select_policy": "Disabled"})})
    return behavior


def cron_metric_spec(index: int, trigger: CronTrigger) -> MetricSpec:
    """cron_scaler.go GetMetricSpecForScaling: External `s<i>-cron-...`, AverageValue 1 (read
    through the cron reader, never from the pods)."""
    return MetricSpec(type="External",
                      query=MetricQuery(metric=f"s{index}-{trigger.metric_name}",
                                        source="signal"),
                      target=MetricTarget(type="AverageValue", value=1.0))


def generated_hpa_params(params: KedaParams) -> HpaParams:
    """hpa.go: one External metric per trigger (target = its threshold), or the single
    composite metric of the formula (target = scalingModifiers.target)."""
    modifiers = params.advanced.scaling_modifiers
    if modifiers is not None:
        metrics: tuple[MetricSpec, ...] = (MetricSpec(
            type="External", query=MetricQuery(metric=COMPOSITE_METRIC, source="signal"),
            # hpa.go: the target in whole milli-units, int64(target * 1000)
            target=MetricTarget(type=modifiers.metric_type,
                                value=truncated_milli(modifiers.target) or modifiers.target)),)
    else:
        metrics = tuple(
            cron_metric_spec(i, t) if isinstance(t, CronTrigger) else
            MetricSpec(type="External", query=t.query,
                       target=MetricTarget(type=t.metric_type, value=t.threshold))
            for i, t in enumerate(params.triggers))
    return HpaParams(
        min_replicas=max(params.min_replica_count, 1),
        max_replicas=params.max_replica_count,
        metrics=metrics,
        behavior=generated_behavior(params),
        tolerance_frac=params.hpa_tolerance_frac,
        sync_period_s=params.hpa_sync_period_s,
    )


def build(params: KedaParams, context: AutoscalerContext | None = None
          ) -> list[ReplicaAutoscaler]:
    if params.paused or params.paused_replicas is not None:
        return [KedaPaused(params)]
    # cron triggers read the wall clock of the scenario's start_time (keda_cron.py)
    start_time = context.start_time if context is not None else None
    triggers = [CronReader(t, start_time) if isinstance(t, CronTrigger) else t
                for t in params.triggers]
    runtime = ScaledObjectRuntime(params, triggers)
    hpa = HpaController(generated_hpa_params(params), name="keda-hpa",
                        reader=lambda view, index, spec: runtime.hpa_metric(view, index))
    return [KedaOperator(params, runtime), hpa]
