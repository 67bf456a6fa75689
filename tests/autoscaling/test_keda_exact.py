"""KEDA as KEDA does (kedacore/keda at 8b4f083): one HPA metric per trigger or one composite
metric of a formula, activation, the fallback behaviors, cached metrics, pause annotations, and
triggers that read the clock."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gpuscale.autoscaling import build_autoscalers
from gpuscale.autoscaling.keda import KedaParams
from gpuscale.autoscaling.keda_operator import KedaOperator, generated_hpa_params
from gpuscale.autoscaling.keda_runtime import ScaledObjectRuntime

from .hpa_views import pods, view


def signal(metric: str, **kw) -> dict:
    """A trigger on view signal `metric` (threshold 1 unless given)."""
    return {"query": {"metric": metric, "source": "signal"}, "threshold": 1, **kw}


def keda(*triggers: dict, **kw) -> KedaParams:
    return KedaParams(triggers=triggers, **kw)


def modifiers(formula: str, target: float = 1, **kw) -> dict:
    return {"scaling_modifiers": {"formula": formula, "target": target, **kw}}


def hpa_desired(params: KedaParams, current: int, **signals: float) -> int | None:
    _, hpa = build_autoscalers(params)
    return hpa.decide(view(0, current, pods("x", [0.0] * current), **signals),
                      hpa.initial_state())[0]


def test_one_metric_per_trigger_and_the_hpa_takes_the_largest_proposal():
    p = keda(signal("queue", name="q", threshold=5), signal("running", name="r", threshold=16))
    assert len(generated_hpa_params(p).metrics) == 2
    # ceil(30 / 5) = 6 against ceil(40 / 16) = 3: the queue wins (cap max(2 x 3, 4) = 6).
    assert hpa_desired(p, 3, queue=30.0, running=40.0) == 6
    assert hpa_desired(p, 3, queue=5.0, running=100.0) == 6  # now running: ceil(100 / 16) = 7


def test_a_formula_replaces_the_triggers_metrics_with_one_composite_metric():
    p = keda(signal("queue", name="q"), signal("running", name="r"),
             advanced=modifiers("max(q / 5, r / 16)", target=1))
    hpa = generated_hpa_params(p)
    assert [(m.query.metric, m.target.value) for m in hpa.metrics] == [("composite-metric", 1)]
    assert hpa_desired(p, 3, queue=30.0, running=40.0) == 6  # max(6, 2.5) / 1


def test_a_lower_formula_target_asks_for_more_replicas():
    asked = [hpa_desired(keda(signal("queue", name="q"), advanced=modifiers("q", target=t)),
                         4, queue=24.0) for t in (8, 4, 3)]
    # ceil(24 / 8) = 3 < 4 is held by the legacy 300 s window; 6; 8.
    assert asked == [None, 6, 8]


def test_the_formula_sees_three_decimal_metrics_and_the_composite_is_truncated_to_milli():
    # GenerateMetricInMili rounds the trigger to 0.001 (and negatives to 0); SetMilli(int64(v *
    # 1000)) truncates the composite.
    runtime = ScaledObjectRuntime(keda(signal("a", name="a"), signal("b", name="b"),
                                       advanced=modifiers("a * 1000 + b", target=1)))
    poll = runtime.poll(view(0, 1, (), a=0.0016, b=-5.0))
    assert [m.value for m in poll.metrics] == [0.002, 0.0]
    assert poll.composite == 2.0
    runtime = ScaledObjectRuntime(keda(signal("a", name="a"),
                                       advanced=modifiers("a / 3", target=1)))
    assert runtime.poll(view(0, 1, (), a=1.0)).composite == 0.333


@pytest.mark.parametrize("value, active", [(2.0, False), (2.5, True)])
def test_with_a_formula_activation_compares_the_composite_with_activation_target(value, active):
    # Docs: "If the calculated value is <=2, the ScaledObject is not Active".
    p = keda(signal("a", name="trig_one", activation_threshold=100), signal("b", name="trig_two"),
             advanced=modifiers("(trig_one + trig_two)/2", target=2, activation_target=2))
    op, _ = build_autoscalers(p)
    desired, state = op.decide(view(0, 0, (), a=value, b=value), op.initial_state())
    assert (desired == 1) is active and state.last_poll.composite == value


def test_with_a_formula_a_failing_trigger_makes_the_object_inactive():
    strict = signal("b", name="b", ignore_null_values=False)
    p = keda(signal("a", name="a"), strict, advanced=modifiers("a + (b ?? 0)"))
    op, hpa = build_autoscalers(p)
    _, state = op.decide(view(0, 0, (), a=50.0), op.initial_state())  # b has no data
    assert not state.last_poll.active and state.condition == "TriggerError"
    # The HPA's query of the composite fails too (no fallback): no scaling.
    assert hpa.decide(view(0, 2, pods("x", [0.0] * 2), a=50.0), hpa.initial_state())[0] is None


def test_failing_triggers_without_fallback_block_scale_to_zero():
    # RequestScale: inactive, error and no fallback -> "TriggerError", no deactivation.
    p = keda(signal("a", ignore_null_values=False), cooldown_period_s=0)
    op, _ = build_autoscalers(p)
    desired, state = op.decide(view(600, 3, ()), op.initial_state())
    assert desired is None and state.condition == "TriggerError"


@pytest.mark.parametrize("behavior, current, expected", [
    ("static", 3, 6), ("currentReplicas", 3, 3), ("currentReplicasIfHigher", 8, 8),
    ("currentReplicasIfHigher", 3, 6), ("currentReplicasIfLower", 3, 3),
    ("currentReplicasIfLower", 8, 6)])
def test_fallback_behaviors(behavior, current, expected):
    p = keda(signal("a", ignore_null_values=False), min_replica_count=1, max_replica_count=20,
             fallback={"failure_threshold": 0, "replicas": 6, "behavior": behavior})
    runtime = ScaledObjectRuntime(p)
    # AverageValue: target (1) x replicas, which the HPA divides back out.
    assert runtime.hpa_metric(view(0, current, pods("x", [0.0] * current)), 0) == expected


def test_value_fallback_divides_by_ready_pods_and_fails_without_any():
    p = keda(signal("a", ignore_null_values=False, metric_type="Value", threshold=2),
             min_replica_count=1, fallback={"failure_threshold": 0, "replicas": 6})
    runtime = ScaledObjectRuntime(p)
    assert runtime.hpa_metric(view(0, 3, pods("x", [0.0] * 3)), 0) == 4.0  # 2 x 6 / 3
    assert runtime.hpa_metric(view(0, 3, ()), 0) is None  # "readyReplicas is zero"


def test_scaling_modifiers_fallback_passes_failed_triggers_as_nil():
    best = signal("best", name="best", ignore_null_values=False)
    p = keda(best, signal("slow", name="slow"), advanced=modifiers("best ?? slow", target=1),
             fallback={"failure_threshold": 1, "replicas": 9, "behavior": "scalingModifiers"})
    runtime = ScaledObjectRuntime(p)
    v = view(0, 2, pods("x", [0.0] * 2), slow=4.0)
    assert runtime.hpa_metric(v, 0) is None  # failure 1: not past the threshold, query fails
    assert runtime.hpa_metric(v, 0) == 4.0  # failure 2 > 1: best is nil, slow is used
    assert runtime.hpa_metric(view(0, 2, (), best=7.0, slow=4.0), 0) == 7.0  # healthy again


def test_a_formula_giving_nil_falls_back_to_replicas_times_target():
    # Docs: "If the trailing literal is omitted ... and every trigger is unhealthy, the formula
    # evaluates to nil and KEDA falls back to spec.fallback.replicas" (x target).
    failing = {"ignore_null_values": False}
    fb = {"failure_threshold": 0, "replicas": 5, "behavior": "scalingModifiers"}
    p = keda(signal("a", name="a", **failing), signal("b", name="b", **failing),
             advanced=modifiers("a ?? b", target=2), fallback=fb)
    assert ScaledObjectRuntime(p).hpa_metric(view(0, 1, ()), 0) == 10.0
    # Without `??` the formula is cast with float(): a nil input is a failed formula.
    p = keda(signal("a", name="a", **failing), advanced=modifiers("a", target=2), fallback=fb)
    assert ScaledObjectRuntime(p).hpa_metric(view(0, 1, ()), 0) is None


def test_static_fallback_with_a_formula_is_target_times_replicas():
    p = keda(signal("a", name="a", ignore_null_values=False), signal("b", name="b"),
             advanced=modifiers("a + b", target=3),
             fallback={"failure_threshold": 0, "replicas": 4})
    assert ScaledObjectRuntime(p).hpa_metric(view(0, 1, (), b=100.0), 0) == 12.0


def test_fallback_with_a_non_integer_formula_target_is_ignored():
    # fallback.go HasValidFallback: ParseInt(scalingModifiers.target) must succeed.
    p = keda(signal("a", name="a", ignore_null_values=False), advanced=modifiers("a", 1.5),
             fallback={"failure_threshold": 0, "replicas": 4})
    assert not p.fallback_enabled
    assert ScaledObjectRuntime(p).hpa_metric(view(0, 1, ()), 0) is None


def test_cached_metrics_serve_the_hpa_the_last_poll():
    p = keda(signal("queue", use_cached_metrics=True, threshold=5))
    op, hpa = build_autoscalers(p)
    _, _ = op.decide(view(0, 2, (), queue=40.0), op.initial_state())  # the poll caches 40
    # The queue has drained since; the HPA still sees the poll's 40: ceil(40 / 5) = 8 -> cap 4.
    assert hpa.decide(view(15, 2, pods("x", [0.0] * 2), queue=0.0),
                      hpa.initial_state())[0] == 4
    live = build_autoscalers(keda(signal("queue", threshold=5)))[1]
    assert live.decide(view(15, 2, pods("x", [0.0] * 2), queue=0.0),
                       live.initial_state())[0] is None  # 0: held by the 300 s window


def test_paused_replicas_sets_the_count_and_nothing_else_scales():
    controllers = build_autoscalers(keda(signal("q"), paused_replicas=2))
    assert [c.name for c in controllers] == ["keda-operator"]
    op = controllers[0]
    assert op.decide(view(30, 5, (), q=1e6), None)[0] == 2
    assert op.decide(view(60, 2, (), q=1e6), None)[0] is None
    frozen = build_autoscalers(keda(signal("q"), paused=True))[0]
    assert frozen.decide(view(30, 5, (), q=1e6), None)[0] is None


def test_paused_scale_out_blocks_activation_and_hpa_scale_up():
    p = keda(signal("q"), paused_scale_out=True)
    op, hpa = build_autoscalers(p)
    desired, state = op.decide(view(0, 0, (), q=50.0), op.initial_state())
    assert desired is None and state.condition == "ScaleOutPaused"
    behavior = generated_hpa_params(p).behavior
    assert behavior.scale_up.select_policy == "Disabled" and behavior.scale_down is None
    assert hpa.decide(view(0, 2, pods("x", [0.0] * 2), q=50.0), hpa.initial_state())[0] is None


def test_paused_scale_in_blocks_deactivation_and_hpa_scale_down():
    p = keda(signal("q"), paused_scale_in=True, cooldown_period_s=0)
    op, _ = build_autoscalers(p)
    desired, state = op.decide(view(300, 3, (), q=0.0), op.initial_state())
    assert desired is None and state.condition == "ScaleInPaused"
    assert generated_hpa_params(p).behavior.scale_down.select_policy == "Disabled"


def test_force_activation_activates_whatever_the_triggers_read():
    op, _ = build_autoscalers(keda(signal("q"), force_activation=True))
    assert op.decide(view(0, 0, (), q=0.0), op.initial_state())[0] == 1


@dataclass(frozen=True)
class ClockTrigger:
    """A trigger whose value comes from the clock (what KEDA's cron scaler is): the desired
    count inside [start_s, end_s), else 0; its target is 1."""

    name: str
    start_s: float
    end_s: float
    desired: int
    metric_type: str = "AverageValue"
    use_cached_metrics: bool = False
    target_value: float = 1.0
    label: str = "clock"

    def value_at(self, v) -> float:
        return float(self.desired) if self.start_s <= v.now_s < self.end_s else 0.0

    def is_active(self, value: float) -> bool:
        return value > 0


def test_a_formula_can_use_a_trigger_that_reads_the_clock():
    p = keda(signal("queue", name="queue"), signal("placeholder", name="morning"),
             advanced=modifiers("max(morning, queue / 5)"))
    # The runtime reads any trigger list: a trigger that reads the clock (cron) is read
    # through its `value_at` and reaches the formula by its name like any other.
    triggers = (p.triggers[0], ClockTrigger("morning", 3600, 7200, desired=4))
    op = KedaOperator(p, ScaledObjectRuntime(p, triggers))
    _, night = op.decide(view(0, 1, (), queue=5.0), op.initial_state())
    _, day = op.decide(view(3600, 1, (), queue=5.0), op.initial_state())
    assert (night.last_poll.composite, day.last_poll.composite) == (1.0, 4.0)


def test_the_decision_log_names_each_trigger_and_the_formula_value():
    p = keda(signal("queue", name="q"), signal("running", name="r"),
             advanced=modifiers("q + r", target=2, activation_target=1))
    op, _ = build_autoscalers(p)
    v = view(0, 0, (), queue=1.5, running=2.0)
    _, state = op.decide(v, op.initial_state())
    logged = op.explain(v, state)
    assert [(t["name"], t["query"], t["value"]) for t in logged["triggers"]] == \
        [("q", "queue", 1.5), ("r", "running", 2.0)]
    assert logged["formula"] == {"value": 3.5, "activation_target": 1}
    assert logged["reason"] == "Activated"


def test_invalid_formulas_and_names_are_refused_at_load():
    with pytest.raises(ValueError, match="unknown name x"):
        keda(signal("q", name="q"), advanced=modifiers("x + 1"))
    with pytest.raises(ValueError, match="defined more than once"):
        keda(signal("q", name="q"), signal("r", name="q"))
    with pytest.raises(ValueError, match=r"requires advanced\.scaling_modifiers"):
        keda(signal("q"), fallback={"failure_threshold": 1, "replicas": 1,
                                    "behavior": "scalingModifiers"})


def test_the_decision_log_records_each_triggers_reading_at_the_poll_time():
    # An unnamed trigger is KEDA's metric s<index>-prometheus; an empty result read with
    # ignoreNullValues false is an error (null read_as, the reason), with no value.
    p = keda(signal("queue", name="q"), signal("absent", ignore_null_values=False))
    op, _ = build_autoscalers(p)
    poll_view = view(45, 1, (), queue=2.5)
    _, state = op.decide(poll_view, op.initial_state())
    logged = op.explain(view(60, 1, (), queue=9.0), state)["triggers"]
    assert [(t["name"], t["value"], t["read_as"], t["eval_time_s"]) for t in logged] == \
        [("q", 2.5, 2.5, 45), ("s1-prometheus", None, None, 45)]
    assert "error" not in logged[0] and logged[1]["error"] == "empty or not finite"
