"""Dynamo's documented load-based planner (kind `load_planner`), 2025 design.

Reference layer3-replica-autoscaling.md 5.1 (ai-dynamo/dynamo docs/architecture/load_planner.md
@ 19d1fc5e, and the changed defaults of components/src/dynamo/planner/defaults.py @ 01127723):
- samples every `metric_pulling_interval_s`, decides every `adjustment_interval_s` on the
  interval means;
- prefill role: scale up by 1 when the prefill queue per worker exceeds the up threshold,
  down by 1 when below the down threshold; no scale-up when the queue's trend predicts it
  falls below the up threshold within 3 intervals;
- decode and aggregated roles: the same on the mean KV-cache utilisation; no scale-down for
  3 intervals after a scale-up;
- at most +-1 per interval, and no decision while a previous change is still in progress
  (ready pods != desired replicas);
- replicas bounded by the GPU budget (min 1, max 8 GPUs).

The prefill queue is Dynamo's global queue; here it is the requests waiting in the engines
plus those held at the gateway, divided by the ready workers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpuscale.autoscaling.base import AutoscalerContext, AutoscalerView, NoExplanation
from gpuscale.autoscaling.behavior import clamp
from gpuscale.autoscaling.cadence import Sums, pods_in_flight, ready_pods, ticks_per_interval
from gpuscale.autoscaling.planner_load_params import LoadPlannerParams
from gpuscale.errors import UserInputError

COOLDOWN_INTERVALS = 3  # both "3 intervals" rules of load_planner.md


@dataclass(frozen=True)
class LoadPlannerState:
    tick: int = 0
    window: Sums = Sums()
    last_queue: float | None = None  # previous interval's mean queue per worker (for the trend)
    # Intervals since this planner added a replica, capped at 4: the KV rule blocks scale-down
    # in the 3 intervals that follow a scale-up.
    intervals_since_up: int = COOLDOWN_INTERVALS + 1
    reason: str = ""


def queue_per_worker(view: AutoscalerView) -> float | None:
    waiting = view.aggregate("vllm:num_requests_waiting", "sum")
    gateway = view.signals.get("gateway_queue", 0.0)
    if waiting is None and not gateway:
        return None
    return ((waiting or 0.0) + gateway) / max(1, ready_pods(view))


def queue_trend_falls_below(last: float | None, now: float, threshold: float) -> bool:
    """Linear extrapolation of the queue over the next 3 intervals drops below `threshold`."""
    if last is None:
        return False
    return now + COOLDOWN_INTERVALS * (now - last) < threshold


class LoadPlanner(NoExplanation):
    """+-1 per adjustment interval on the prefill queue (prefill) or KV utilisation
    (decode/serve)."""

    def __init__(self, params: LoadPlannerParams, context: AutoscalerContext):
        if context.role not in ("serve", "prefill", "decode"):
            raise UserInputError(
                f"load_planner cannot size role {context.role!r}", field="autoscaler"
            )
        self.name = "load-planner"
        self.params = params
        self.period_s = params.metric_pulling_interval_s
        self.role = context.role
        gpus = context.hardware.tp if context.hardware is not None else 1
        self.min_replicas = math.ceil(params.min_gpu_budget / gpus)
        self.max_replicas = params.max_gpu_budget // gpus
        if self.max_replicas < max(self.min_replicas, 1):
            raise UserInputError(
                f"max_gpu_budget {params.max_gpu_budget} fits no replica of {gpus} GPUs",
                field="autoscaler.max_gpu_budget",
            )
        self._ticks = ticks_per_interval(
            params.adjustment_interval_s, params.metric_pulling_interval_s
        )

    def initial_state(self) -> LoadPlannerState:
        return LoadPlannerState()

    def decide(
        self, view: AutoscalerView, state: LoadPlannerState
    ) -> tuple[int | None, LoadPlannerState]:
        window = state.window.add(
            queue=queue_per_worker(view), kv=view.aggregate("vllm:kv_cache_usage_perc", "avg")
        )
        tick = state.tick + 1
        if tick % self._ticks:
            return None, replace(state, tick=tick, window=window)
        current = view.current_replicas
        step, state = self._step(window, state)
        state = replace(state, tick=tick, window=Sums())
        if current == 0 and view.signals.get("gateway_queue", 0.0) > 0:
            step = 1  # nothing serves: any waiting request needs a worker
        elif ready_pods(view) != current or pods_in_flight(view):
            return None, replace(state, reason="change in progress")
        desired = clamp(current + step, self.min_replicas, self.max_replicas)
        if step > 0 and desired > current:
            state = replace(state, intervals_since_up=0)
        return (None if desired == current else desired), state

    def _step(self, window: Sums, state: LoadPlannerState) -> tuple[int, LoadPlannerState]:
        """-1, 0 or +1 from the interval means, and the rule memory for the next interval."""
        p = self.params
        since_up = min(state.intervals_since_up + 1, COOLDOWN_INTERVALS + 1)
        if self.role == "prefill":
            queue = window.mean("queue") or 0.0
            last = state.last_queue
            state = replace(state, last_queue=queue, intervals_since_up=since_up)
            if queue > p.prefill_queue_scale_up_threshold:
                if queue_trend_falls_below(last, queue, p.prefill_queue_scale_up_threshold):
                    return 0, replace(state, reason="queue trend falling")
                return 1, replace(state, reason="prefill queue high")
            if queue < p.prefill_queue_scale_down_threshold:
                return -1, replace(state, reason="prefill queue low")
            return 0, replace(state, reason="")
        kv = window.mean("kv")
        state = replace(state, intervals_since_up=since_up)
        if kv is None:
            return 0, replace(state, reason="no kv samples")
        if kv > p.kv_scale_up_threshold_frac:
            return 1, replace(state, reason="kv high")
        if kv < p.kv_scale_down_threshold_frac:
            if since_up <= COOLDOWN_INTERVALS:
                return 0, replace(state, reason="kv low, cooling down after scale-up")
            return -1, replace(state, reason="kv low")
        return 0, replace(state, reason="")


def build(params: LoadPlannerParams, context: AutoscalerContext) -> list[LoadPlanner]:
    return [LoadPlanner(params, context)]
