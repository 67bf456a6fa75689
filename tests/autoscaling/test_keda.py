"""KEDA ScaledObject: the operator's activation/cooldown loop and the generated HPA (reference
section 2)."""

from __future__ import annotations

from gpuscale.autoscaling import build_autoscalers
from gpuscale.autoscaling.keda import KedaParams
from gpuscale.autoscaling.keda_operator import generated_hpa_params

from .hpa_views import drive, pods, view

Q = "vllm:num_requests_waiting"


def KedaOperator(params: KedaParams):
    """The operator of a ScaledObject (its own runtime, as `build` wires it)."""
    return build_autoscalers(params)[0]


def router_trigger(**kw):
    return {"query": {"metric": "router_queue", "source": "signal"}, "threshold": 5, **kw}


def test_activation_and_cooldown_timeline():
    # Defaults: pollingInterval 30 s, cooldownPeriod 300 s, minReplicaCount 0.
    op = KedaOperator(KedaParams(triggers=(router_trigger(),)))
    queue = {60: 3.0, 90: 1.0}  # requests waiting at the router at those polls, 0 otherwise
    log = drive(
        op, lambda t, n: view(t, n, (), router_queue=queue.get(int(t), 0.0)), start=0, until_s=900
    )
    # Active at 60 -> 1 replica; last active poll 90; 90 + 300 = 390 is not yet past (strict),
    # so the first poll after the cooldown, 420, scales to 0.
    assert log == [(60.0, 1), (420.0, 0)]


def test_activation_threshold_is_strict():
    op = KedaOperator(KedaParams(triggers=(router_trigger(activation_threshold=5),)))
    def at(value: float) -> int | None:
        return op.decide(view(0, 0, (), router_queue=value), op.initial_state())[0]

    assert at(5.0) is None  # equal is not active
    assert at(5.001) == 1


def test_activation_goes_to_min_replica_count_when_set():
    op = KedaOperator(
        KedaParams(min_replica_count=2, idle_replica_count=0, triggers=(router_trigger(),))
    )
    assert op.decide(view(0, 0, (), router_queue=1.0), op.initial_state())[0] == 2
    # Idle mode: inactive and above idle -> idle after the cooldown (no last activity: initial
    # cooldown 0).
    assert (
        op.decide(view(0, 2, (), router_queue=0.0), op.initial_state())[0] is None
    )  # created at 0: 0 < 0 false
    state = op.initial_state()
    _, state = op.decide(view(0, 2, (), router_queue=0.0), state)
    assert op.decide(view(30, 2, (), router_queue=0.0), state)[0] == 0


def test_generated_hpa_shape():
    p = KedaParams(min_replica_count=0, max_replica_count=7, triggers=(router_trigger(),))
    hpa = generated_hpa_params(p)
    assert (hpa.min_replicas, hpa.max_replicas, hpa.behavior) == (1, 7, None)
    assert hpa.metrics[0].type == "External" and hpa.metrics[0].target.type == "AverageValue"
    assert [c.name for c in build_autoscalers(p)] == ["keda-operator", "keda-hpa"]
    assert [c.period_s for c in build_autoscalers(p)] == [30.0, 15.0]


def test_keda_hpa_desired_is_ceil_total_over_threshold():
    p = KedaParams(triggers=({"query": {"metric": Q, "aggregation": "sum"}, "threshold": 5},))
    _, hpa = build_autoscalers(p)
    three = pods(Q, [10.0, 8.0, 5.0])  # sum 23 -> ceil(23 / 5) = 5 (cap max(2 x 3, 4) = 6)
    assert hpa.decide(view(0, 3, three), hpa.initial_state())[0] == 5
    # Tolerance: 10.5 / (5 x 2) = 1.05 -> keep 2 rather than ceil(2.1) = 3.
    assert hpa.decide(view(0, 2, pods(Q, [5.0, 5.5])), hpa.initial_state())[0] is None
    # The generated HPA leaves a target at 0 alone: the operator owns 0 <-> 1.
    assert hpa.decide(view(0, 0, ()), hpa.initial_state())[0] is None


def test_keda_and_hpa_together_scale_from_zero_then_out():
    p = KedaParams(triggers=(router_trigger(),))
    op, hpa = build_autoscalers(p)
    op_state, hpa_state, current = op.initial_state(), hpa.initial_state(), 0
    # t=0: HPA sees 0 replicas -> disabled; the operator activates on 40 waiting requests.
    d, hpa_state = hpa.decide(view(0, current, (), router_queue=40.0), hpa_state)
    assert d is None
    d, op_state = op.decide(view(0, current, (), router_queue=40.0), op_state)
    assert d == 1
    current = d
    # t=15: the HPA takes over: ceil(40 / 5) = 8, capped at max(2 x 1, 4) = 4 on the legacy path.
    d, hpa_state = hpa.decide(view(15, current, pods("x", [0.0]), router_queue=40.0), hpa_state)
    assert d == 4


def test_null_values_and_fallback():
    strict = {
        "query": {"metric": "router_queue", "source": "signal"},
        "threshold": 5,
        "ignore_null_values": False,
    }
    p = KedaParams(
        min_replica_count=1, triggers=(strict,), fallback={"failure_threshold": 2, "replicas": 6}
    )
    op, hpa = build_autoscalers(p)
    state, decisions = hpa.initial_state(), []
    for k in range(4):  # the query keeps returning nothing
        d, state = hpa.decide(view(15 * k, 3, pods("x", [0.0] * 3)), state)
        decisions.append(d)
    # Failures 1 and 2 are tolerated (no scaling); the 3rd exceeds the threshold -> 6 replicas.
    assert decisions[:2] == [None, None] and decisions[2] == 6
    # Once past the threshold the poll reads the fallback too, which counts as active.
    assert op.decide(view(60, 3, ()), op.initial_state())[1].condition == "Active"


def test_fallback_failures_are_counted_by_the_polls_and_the_hpa_queries_together():
    # status.health is one count per trigger, written by both loops (fallback.go
    # IncrementFailure from getScalerState and GetScaledObjectMetrics).
    strict = {"query": {"metric": "router_queue", "source": "signal"}, "threshold": 5,
              "ignore_null_values": False}
    p = KedaParams(min_replica_count=1, triggers=(strict,),
                   fallback={"failure_threshold": 2, "replicas": 6})
    op, hpa = build_autoscalers(p)
    three = pods("x", [0.0] * 3)
    _, op_state = op.decide(view(0, 3, three), op.initial_state())  # failure 1
    assert op_state.condition == "FallbackPending"  # failing, fallback set: no scale to zero
    d1, hpa_state = hpa.decide(view(15, 3, three), hpa.initial_state())  # failure 2
    d2, _ = hpa.decide(view(30, 3, three), hpa_state)  # failure 3 > 2: the fallback value
    assert (d1, d2) == (None, 6)
