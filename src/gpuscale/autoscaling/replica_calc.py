"""Per-metric replica proposals of the HPA, after kubernetes/kubernetes `replica_calculator.go`.

Reference: ../shared/reference/layer3-replica-autoscaling.md sections 1.3 (formula per metric
and target type) and 1.4 (which pods count). Values are handled as the controller handles them:
integer milli-units (`Quantity.MilliValue`), with Go's truncating integer division for the
per-pod average, so a ratio that lands exactly on the tolerance edge behaves as in a cluster.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from gpuscale.autoscaling.base import PodMetrics

_MAX_INT32 = 2**31 - 1


class MetricError(Exception):
    """This metric yields no proposal this cycle (the HPA marks it invalid)."""


@dataclass(frozen=True)
class Tolerances:
    """Scale-down and scale-up tolerance; a ratio inside [1 - down, 1 + up] keeps the count."""

    down: float
    up: float

    def is_within(self, ratio: float) -> bool:
        # NaN compares False, so 0/0 is "not within", as in Go.
        return (1.0 - self.down) <= ratio <= (1.0 + self.up)


@dataclass(frozen=True)
class CpuReadiness:
    """Controller flags used only for the CPU resource (reference 1.1 and 1.4 item 4)."""

    initialization_period_s: float = 300.0  # --horizontal-pod-autoscaler-cpu-initialization-period
    initial_readiness_delay_s: float = 30.0  # --horizontal-pod-autoscaler-initial-readiness-delay
    metric_window_s: float = 15.0  # metrics-server sample window (assumption: its 15 s resolution)


def to_milli(value: float) -> int:
    """Float -> milli-units; KEDA's metrics server rounds to the nearest milli
    (GenerateMetricInMili)."""
    return round(value * 1000.0)


def ceil_i32(x: float) -> int:
    """`int32(math.Ceil(x))` with the controller's cap at MaxInt32 (also for +Inf)."""
    if math.isnan(x):
        return 0
    return _MAX_INT32 if x > _MAX_INT32 else math.ceil(x)


def _go_div(a: int, b: int) -> int:
    """Go integer division truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _cpu_unready(pod: PodMetrics, now_s: float, cpu: CpuReadiness) -> bool:
    """groupPods' CPU rule: set aside pods still initialising or that never became ready."""
    if pod.started_s is None:
        return not pod.ready  # no start time known: only the Ready condition can be judged
    changed = pod.ready_changed_s if pod.ready_changed_s is not None else pod.started_s
    if pod.started_s + cpu.initialization_period_s > now_s:
        # Sample assumed taken now; ignore it if the pod is unready or became ready < 1 window ago.
        return (not pod.ready) or now_s < changed + cpu.metric_window_s
    return (not pod.ready) and pod.started_s + cpu.initial_readiness_delay_s > changed


@dataclass(frozen=True)
class PodGroups:
    ready_count: int
    unready: frozenset[str]  # Pending (and, for CPU, not-yet-ready) pods
    missing: frozenset[str]  # Running pods without a sample
    samples: Mapping[str, int]  # milli-values of the pods that count


def group_pods(
    pods: Iterable[PodMetrics], metric: str, now_s: float, cpu: CpuReadiness | None
) -> PodGroups:
    """`groupPods` + `removeMetricsForPods`: Failed dropped, Pending unready, no sample missing."""
    ready, unready, missing, samples = 0, set(), set(), {}
    for pod in pods:
        if pod.phase == "Failed":
            continue
        if pod.phase == "Pending":
            unready.add(pod.name)
            continue
        if metric not in pod.values:
            missing.add(pod.name)
            continue
        if cpu is not None and _cpu_unready(pod, now_s, cpu):
            unready.add(pod.name)
            continue
        ready += 1
        samples[pod.name] = to_milli(pod.values[metric])
    return PodGroups(ready, frozenset(unready), frozenset(missing), samples)


def _dampened(
    current: int, groups: PodGroups, ratio_of: Callable[[Mapping[str, int]], float],
    fill_scale_down: Callable[[str], int], tol: Tolerances,
) -> int:
    """The shared tail of calcPlainMetricReplicas / GetResourceReplicas (reference 1.4 items
    5-6)."""
    if not groups.samples:
        raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
    ratio = ratio_of(groups.samples)
    scale_up_with_unready = bool(groups.unready) and ratio > 1.0
    if not scale_up_with_unready and not groups.missing:
        return current if tol.is_within(ratio) else ceil_i32(ratio * groups.ready_count)
    filled = dict(groups.samples)
    if groups.missing and ratio < 1.0:  # scale-down: missing pods assumed at target
        filled.update({name: fill_scale_down(name) for name in groups.missing})
    elif groups.missing and ratio > 1.0:  # scale-up: missing pods assumed idle
        filled.update({name: 0 for name in groups.missing})
    if scale_up_with_unready:
        filled.update({name: 0 for name in groups.unready})
    new_ratio = ratio_of(filled)
    flips = (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio)
    if tol.is_within(new_ratio) or flips:
        return current
    proposal = ceil_i32(new_ratio * len(filled))
    if (new_ratio < 1.0 and proposal > current) or (new_ratio > 1.0 and proposal < current):
        return current  # the bigger pod set would move the count against the ratio
    return proposal


def plain_metric_replicas(
    current: int, groups: PodGroups, target_milli: int, tol: Tolerances
) -> int:
    """Pods metric or Resource AverageValue: mean per-pod value / target
    (calcPlainMetricReplicas)."""

    def ratio_of(samples: Mapping[str, int]) -> float:
        return _go_div(sum(samples.values()), len(samples)) / float(target_milli)

    return _dampened(current, groups, ratio_of, lambda _name: target_milli, tol)


def resource_utilization_replicas(
    current: int,
    groups: PodGroups,
    requests_milli: Mapping[str, int],
    target_pct: int,
    tol: Tolerances,
) -> int:
    """Resource Utilization: sum usage / sum requests in whole percent, / target
    (GetResourceReplicas)."""

    def ratio_of(samples: Mapping[str, int]) -> float:
        used = sum(v for n, v in samples.items() if n in requests_milli)
        requested = sum(requests_milli[n] for n in samples if n in requests_milli)
        if requested == 0:
            raise MetricError("no metrics returned matched known pods")
        return _go_div(used * 100, requested) / float(target_pct)

    fallback_pct = max(100, target_pct)  # a missing pod on scale-down counts at its full request
    return _dampened(
        current, groups, ratio_of, lambda n: _go_div(requests_milli[n] * fallback_pct, 100), tol
    )


def value_replicas(
    current: int, usage_milli: int, target_milli: int, ready_pods: int | None, tol: Tolerances
) -> int:
    """Object or External with target Value: ceil(ratio x ready pods) (getUsageRatioReplicaCount).

    `ready_pods` counts Running and Ready pods; None means the selector matched no pod at all.
    """
    ratio = usage_milli / float(target_milli)
    if current == 0:  # only with HPAScaleToZero: no tolerance, no pod count
        return ceil_i32(ratio)
    if tol.is_within(ratio):
        return current
    if ready_pods is None:
        raise MetricError("no pods returned by selector while calculating replica count")
    return ceil_i32(ratio * ready_pods)


def average_value_replicas(
    status_replicas: int, usage_milli: int, target_milli: int, tol: Tolerances
) -> int:
    """Object or External with target AverageValue: ceil(total / target) unless within tolerance.

    The tolerance test divides by target x status.replicas (pods that exist), so with no pods the
    ratio is +Inf or NaN and the proposal is always ceil(total / target).
    """
    denominator = float(target_milli) * float(status_replicas)
    if denominator == 0.0:
        ratio = math.nan if usage_milli == 0 else math.copysign(math.inf, usage_milli)
    else:
        ratio = usage_milli / denominator
    if tol.is_within(ratio):
        return status_replicas
    return ceil_i32(usage_milli / float(target_milli))
