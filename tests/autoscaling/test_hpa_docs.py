"""Worked examples from the Kubernetes documentation, replayed through the HPA controller.

Sources (kubernetes/website, English pages):
- https://kubernetes.io/docs/concepts/workloads/autoscaling/horizontal-pod-autoscale/
  "Algorithm details", "Configurable scaling behavior" (Scaling policies, Stabilization window,
  Default Behavior, Example: limit scale down rate).
- https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale-walkthrough/
- https://kubernetes.io/blog/2025/04/28/kubernetes-v1-33-hpa-configurable-tolerance/
Expected numbers are the documents' own, or hand arithmetic written next to each assertion.
"""

from __future__ import annotations

import itertools

from gpuscale.autoscaling.base import PodMetrics
from gpuscale.autoscaling.behavior import Behavior, ScalingPolicy, ScalingRules
from gpuscale.autoscaling.hpa import HpaController, HpaParams, MetricSpec
from gpuscale.autoscaling.replica_calc import Tolerances, group_pods, plain_metric_replicas

from .hpa_views import drive, pods, view

DEFAULT_TOL = Tolerances(0.1, 0.1)


def pods_metric(name: str, target: float) -> MetricSpec:
    return MetricSpec(type="Pods", metric=name, target={"type": "AverageValue", "value": target})


def external_demand(target: float = 1.0) -> MetricSpec:
    """External AverageValue on a router signal: the proposal is ceil(demand / target)."""
    return MetricSpec(type="External", query={"metric": "demand", "source": "signal"},
                      target={"type": "AverageValue", "value": target})


def cpu_pods(n: int, total_cores: float, request: float = 1.0) -> tuple[PodMetrics, ...]:
    return tuple(
        PodMetrics(f"p{i}", "Running", True, {"cpu": total_cores / n}, {"cpu": request})
        for i in range(n)
    )


def test_200m_against_100m_doubles_one_replica():
    # Algorithm details: "current metric value is 200m, desired 100m -> replicas doubled".
    hpa = HpaController(HpaParams(max_replicas=10, metrics=(pods_metric("m", 0.1),)))
    desired, _ = hpa.decide(view(0, 1, pods("m", [0.2])), hpa.initial_state())
    assert desired == 2


def test_50m_against_100m_halves_after_downscale_stabilization():
    # "If the current value is instead 50m, you'll halve the number of replicas" (0.5 x 4 = 2) ...
    groups = group_pods(pods("m", [0.05] * 4), "m", 0.0, None)
    assert plain_metric_replicas(4, groups, 100, DEFAULT_TOL) == 2
    # ... which the controller applies only once the 5-minute downscale window has passed: the
    # first sync records current (4) as a recommendation, and the legacy path takes the window max.
    hpa = HpaController(HpaParams(max_replicas=10, metrics=(pods_metric("m", 0.1),)))
    log = drive(hpa, lambda t, n: view(t, n, pods("m", [0.2 / n] * n)), start=4, until_s=600)
    assert log == [(315.0, 2)]  # the t=0 record (4) still counts at t=300 (cutoff is inclusive)


def test_ratio_within_tolerance_skips_scaling():
    # "skips any scaling action if the ratio is sufficiently close to 1.0 (... 0.1 by default)".
    hpa = HpaController(HpaParams(max_replicas=20, metrics=(pods_metric("m", 0.1),)))
    for value, expected in [(0.105, None), (0.110, None), (0.111, 5)]:  # 1.11 x 4 = 4.44 -> 5
        desired, _ = hpa.decide(view(0, 4, pods("m", [value] * 4)), hpa.initial_state())
        assert desired == expected, value


def test_blog_50_replicas_at_90_of_75_percent_cpu_goes_to_60():
    # Tolerance blog: 50 replicas, CPU target 75 %, usage 90 % -> 50 x 90/75 = 60.
    metric = MetricSpec(type="Resource", metric="cpu", target={"type": "Utilization", "value": 75})
    hpa = HpaController(HpaParams(max_replicas=100, metrics=(metric,)))
    desired, _ = hpa.decide(view(0, 50, cpu_pods(50, 0.9 * 50)), hpa.initial_state())
    assert desired == 60


def test_blog_per_direction_tolerance():
    # Blog example: scaleDown tolerance 0.05, scaleUp tolerance 0.
    metric = MetricSpec(type="Resource", metric="cpu", target={"type": "Utilization", "value": 75})
    tuned = HpaParams(max_replicas=100, metrics=(metric,), behavior=Behavior(
        scale_down=ScalingRules(tolerance_frac=0.05), scale_up=ScalingRules(tolerance_frac=0.0)))
    default = HpaParams(max_replicas=100, metrics=(metric,))
    at_76 = view(0, 50, cpu_pods(50, 0.76 * 50))  # ratio 76/75 = 1.013
    tuned_hpa, default_hpa = HpaController(tuned), HpaController(default)
    assert tuned_hpa.decide(at_76, tuned_hpa.initial_state())[0] == 51  # ceil(1.0133 x 50)
    assert default_hpa.decide(at_76, default_hpa.initial_state())[0] is None
    at_70 = view(0, 50, cpu_pods(50, 0.70 * 50))  # ratio 0.933: outside 0.05, inside 0.1
    assert tuned_hpa.decide(at_70, tuned_hpa.initial_state())[1].last_proposal == 47  # ceil(46.67)
    assert default_hpa.decide(at_70, default_hpa.initial_state())[1].last_proposal == 50


def test_walkthrough_305_percent_reaches_7_replicas_in_two_syncs():
    # Walkthrough: 1 replica at 305 % of a 50 % CPU target; the Deployment ends at 7 replicas.
    # Legacy path: sync 1 proposes ceil(6.1) = 7, capped at max(2 x 1, 4) = 4; sync 2 spreads the
    # same load on 4 pods: util (3050*100)//4000 = 76 %, ratio 1.52, ceil(6.08) = 7.
    metric = MetricSpec(type="Resource", metric="cpu", target={"type": "Utilization", "value": 50})
    hpa = HpaController(HpaParams(max_replicas=10, metrics=(metric,)))
    log = drive(hpa, lambda t, n: view(t, n, cpu_pods(n, 3.05)), start=1, until_s=120)
    assert log == [(0.0, 4), (15.0, 7)]


def test_scale_down_policies_80_to_10_with_max_select():
    # Scaling policies: Pods 4/60 s and Percent 10/60 s, default selectPolicy Max. 80 -> 10:
    # first step removes 8, at 72 again 8 (7.2 rounded up); below 40 the Pods policy removes 4.
    # (Window 0 so the rate policies alone act; the doc's example leaves stabilization aside.)
    behavior = Behavior(
        scale_down=ScalingRules(
            stabilization_window_s=0,
            policies=(
                ScalingPolicy(type="Pods", value=4, period_s=60),
                ScalingPolicy(type="Percent", value=10, period_s=60),
            ),
        )
    )
    hpa = HpaController(
        HpaParams(max_replicas=100, metrics=(external_demand(),), behavior=behavior)
    )
    log = drive(
        hpa, lambda t, n: view(t, n, pods("m", [1.0] * n), demand=10.0), start=80, until_s=1200
    )
    counts = [n for _, n in log]
    assert counts[:2] == [72, 64]
    assert all(t % 60 == 0 for t, _ in log)  # one step per 60 s period, none in between
    below_40 = [n for n in counts if n < 40]
    assert all(a - b == 4 for a, b in itertools.pairwise(below_40[:-1]))
    assert counts[-1] == 10


def test_limit_scale_down_rate_with_min_select():
    # "no more than 5 Pods are removed per minute": Percent 10/60 s + Pods 5/60 s, selectPolicy Min.
    behavior = Behavior(
        scale_down=ScalingRules(
            stabilization_window_s=0,
            select_policy="Min",
            policies=(
                ScalingPolicy(type="Percent", value=10, period_s=60),
                ScalingPolicy(type="Pods", value=5, period_s=60),
            ),
        )
    )
    hpa = HpaController(
        HpaParams(max_replicas=100, metrics=(external_demand(),), behavior=behavior)
    )

    def first(n: int) -> int:
        return hpa.decide(view(0, n, pods("m", [1.0] * n), demand=1.0), hpa.initial_state())[0]

    assert first(80) == 75  # Percent would remove 8, Pods 5: Min keeps the smaller change
    assert first(30) == 27  # Percent removes 3 (floor(27.0)), Pods 5: Min keeps 3


def test_stabilization_window_uses_highest_recent_recommendation():
    # Stabilization window: scale-down uses the highest desired state of the past 300 s.
    behavior = Behavior(scale_down=ScalingRules(stabilization_window_s=300))
    hpa = HpaController(
        HpaParams(max_replicas=100, metrics=(external_demand(),), behavior=behavior)
    )

    def demand(t: float) -> float:
        return 10.0 if t < 15 else 2.0

    log = drive(
        hpa, lambda t, n: view(t, n, pods("m", [1.0] * n), demand=demand(t)), start=10, until_s=600
    )
    # Recommendations of 10 at t=0 fall out of the window at t=300 (behavior path: strictly newer
    # than the cutoff counts), so the first and only scale-down lands at t=300.
    assert log == [(300.0, 2)]


def test_default_behavior_adds_4_pods_or_100_percent_per_15_s():
    # Default Behavior: scale up by at most max(4 pods, 100 %) every 15 s, no window.
    hpa = HpaController(
        HpaParams(max_replicas=100, metrics=(external_demand(),), behavior=Behavior())
    )
    log = drive(
        hpa, lambda t, n: view(t, n, pods("m", [1.0] * n), demand=60.0), start=1, until_s=60
    )
    assert log == [(0.0, 5), (15.0, 10), (30.0, 20), (45.0, 40), (60.0, 60)]  # 1+4, 5x2, ...


def test_disabled_scale_down():
    # "Example: disable scale down": selectPolicy Disabled turns off that direction.
    behavior = Behavior(scale_down=ScalingRules(select_policy="Disabled", stabilization_window_s=0))
    hpa = HpaController(
        HpaParams(max_replicas=100, metrics=(external_demand(),), behavior=behavior)
    )
    assert (
        drive(hpa, lambda t, n: view(t, n, pods("m", [1.0] * n), demand=1.0), start=8, until_s=900)
        == []
    )


def test_multiple_metrics_take_the_largest_proposal():
    # "Scaling on multiple metrics": each metric proposes, the HPA takes the maximum.
    hpa = HpaController(
        HpaParams(max_replicas=50, metrics=(pods_metric("a", 1.0), pods_metric("b", 1.0)))
    )
    pod_list = [PodMetrics(f"p{i}", "Running", True, {"a": 1.5, "b": 3.0}) for i in range(4)]
    desired, state = hpa.decide(view(0, 4, pod_list), hpa.initial_state())
    assert desired == 8  # max(ceil(1.5 x 4) = 6, ceil(3.0 x 4) = 12) = 12, capped at max(2 x 4, 4)
    assert state.last_proposal == 12
