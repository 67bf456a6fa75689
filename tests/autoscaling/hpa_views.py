"""Tiny builders for autoscaler views and a loop that applies decisions (tests only)."""

from __future__ import annotations

from collections.abc import Callable

from gpuscale.autoscaling.base import AutoscalerView, PodMetrics


def pod(name: str, phase: str = "Running", ready: bool = True, **values: float) -> PodMetrics:
    return PodMetrics(name=name, phase=phase, ready=ready, values=dict(values))


def pods(metric: str, values: list[float | None]) -> tuple[PodMetrics, ...]:
    """Running, ready pods; None = the pod exports no sample of `metric` yet."""
    return tuple(
        PodMetrics(
            name=f"p{i}", phase="Running", ready=True, values={} if v is None else {metric: v}
        )
        for i, v in enumerate(values)
    )


def view(now_s: float, current: int, pod_list=(), **signals: float) -> AutoscalerView:
    return AutoscalerView(
        now_s=now_s, current_replicas=current, pods=tuple(pod_list), signals=signals
    )


def drive(
    ctrl, make_view: Callable[[float, int], AutoscalerView], start: int, until_s: float
) -> list[tuple[float, int]]:
    """Run `ctrl` on its period from t=0, applying each desired count at once; returns (t, new
    count) changes."""
    state, current, log = ctrl.initial_state(), start, []
    ticks = int(until_s // ctrl.period_s) + 1
    for k in range(ticks):
        t = k * ctrl.period_s
        desired, state = ctrl.decide(make_view(t, current), state)
        if desired is not None:
            current = desired
            log.append((t, current))
    return log
