"""Knative Serving's KPA (kind `kpa`), for comparison with the HPA and the planners.

Reference layer3-replica-autoscaling.md 3 (knative/serving @ 98e5ef9, pkg/autoscaler/scaling/
autoscaler.go, pkg/reconciler/autoscaling/kpa/scaler.go): every 2 s the observed revision total
(concurrency or requests/s) is averaged over a 60 s stable window and a 6 s panic window, so the
KPA averages *metrics* where the HPA stabilises *proposals*:

    desired_stable = clamp(ceil(stable / target), floor(ready / max_down), ceil(max_up x ready))
    desired_panic  = the same with the panic average

Panic starts (or is extended) when ceil(panic / target) / ready >= 2.0; while panicking the
count is max(stable, panic) and never goes down; panic ends once the condition has been false
for a whole stable window. Scale to zero happens after the revision has been active for a
stable window and the decider has wanted 0 for the grace period (30 s).

Lag: Knative scrapes every second; here the pods' series change once per scrape (15 s by
default), so the 2-s ticks see steps, the panic window (6 s) holds at most one scrape and the
KPA keeps its own bounded history of the per-tick values (one stable window's worth).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpuscale.autoscaling.base import AutoscalerView, NoExplanation
from gpuscale.autoscaling.behavior import clamp
from gpuscale.autoscaling.cadence import Stamp, push_window, ready_pods, window_mean
from gpuscale.autoscaling.kpa_params import KpaParams


@dataclass(frozen=True)
class KpaState:
    first_tick_s: float | None = None
    history: tuple[Stamp, ...] = ()  # observed totals within the stable window
    panic_since_s: float | None = None  # last time the panic condition held (Knative panicTime)
    max_panic_pods: int = 0
    zero_since_s: float | None = None  # when the decider first wanted 0 (grace period)
    recent: tuple[Stamp, ...] = ()  # decisions within scale_down_delay_s
    panicking: bool = False


def observed_total(view: AutoscalerView, metric: str) -> float:
    """The revision total a Knative scraper would report (Stat.average x ready pods)."""
    if metric == "rps":
        return float(view.signals.get("request_rate_per_s", 0.0))
    waiting = view.aggregate("vllm:num_requests_waiting", "sum") or 0.0
    running = view.aggregate("vllm:num_requests_running", "sum") or 0.0
    return waiting + running + float(view.signals.get("gateway_queue", 0.0))


def scale_bounds(ready: int, max_up_rate: float, max_down_rate: float) -> tuple[int, int]:
    """(maxScaleDown, maxScaleUp) for `ready` pods counted as at least 1 (autoscaler.go)."""
    n = max(1, ready)
    return math.floor(n / max_down_rate), math.ceil(max_up_rate * n)


class KpaController(NoExplanation):
    """Knative's decider plus the scaler's scale-to-zero grace, on 2-s ticks."""

    def __init__(self, params: KpaParams):
        self.name = "kpa"
        self.params = params
        self.period_s = params.tick_interval_s

    def initial_state(self) -> KpaState:
        return KpaState()

    def decide(self, view: AutoscalerView, state: KpaState) -> tuple[int | None, KpaState]:
        p, now = self.params, view.now_s
        first = now if state.first_tick_s is None else state.first_tick_s
        history = push_window(
            state.history, Stamp(now, observed_total(view, p.metric)), p.stable_window_s
        )
        state = replace(state, first_tick_s=first, history=history)
        stable = window_mean(history, now, p.stable_window_s) or 0.0
        panic = window_mean(history, now, p.panic_window_s) or 0.0
        desired, state = self._decider(stable, panic, ready_pods(view), now, state)
        if p.scale_down_delay_s > 0:
            recent = push_window(state.recent, Stamp(now, desired), p.scale_down_delay_s)
            desired = int(max(s.value for s in recent))
            state = replace(state, recent=recent)
        desired = clamp(desired, p.min_scale, p.max_scale or max(desired, p.min_scale))
        if desired == 0:
            desired, state = self._to_zero(view.current_replicas, now, state)
        else:
            state = replace(state, zero_since_s=None)
        return (None if desired == view.current_replicas else desired), state

    def _decider(
        self, stable: float, panic: float, ready: int, now: float, state: KpaState
    ) -> tuple[int, KpaState]:
        p = self.params
        target = p.target_per_pod
        max_down, max_up = scale_bounds(ready, p.max_scale_up_rate, p.max_scale_down_rate)
        dspc, dppc = math.ceil(stable / target), math.ceil(panic / target)
        desired_stable = min(max(dspc, max_down), max_up)
        desired_panic = min(max(dppc, max_down), max_up)
        over = dppc / max(1, ready) >= p.panic_threshold_percentage / 100.0
        panic_since = state.panic_since_s
        if over:
            panic_since = now  # start, or extend, the panic
        elif panic_since is not None and now - panic_since >= p.stable_window_s:
            panic_since = None
        if panic_since is None:
            return desired_stable, replace(
                state, panic_since_s=None, max_panic_pods=0, panicking=False
            )
        # In panic the count only grows; the stable value counts too when it is the larger.
        peak = max(state.max_panic_pods, desired_stable, desired_panic)
        return peak, replace(state, panic_since_s=panic_since, max_panic_pods=peak, panicking=True)

    def _to_zero(self, current: int, now: float, state: KpaState) -> tuple[int, KpaState]:
        """kpa/scaler.go: 0 only when enabled, after one stable window of activity and the grace."""
        p = self.params
        if not p.enable_scale_to_zero:
            return max(1, p.min_scale), state
        since = now if state.zero_since_s is None else state.zero_since_s
        state = replace(state, zero_since_s=since)
        active_long_enough = (
            state.first_tick_s is not None and now - state.first_tick_s >= p.stable_window_s
        )
        if current == 0 or (active_long_enough and now - since >= p.scale_to_zero_grace_period_s):
            return 0, state
        return current, state


def build(params: KpaParams) -> list[KpaController]:
    return [KpaController(params)]
