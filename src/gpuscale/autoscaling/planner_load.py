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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuscale.autoscaling.base import AutoscalerContext, AutoscalerView, NoExplanation, PolicySpec
from gpuscale.autoscaling.behavior import clamp
from gpuscale.autoscaling.cadence import Sums, pods_in_flight, ready_pods, ticks_per_interval
from gpuscale.errors import UserInputError

# Two documented default sets (reference 5.1). Fields left unset take the chosen set's value.
PRESETS: dict[str, dict[str, float]] = {
    # docs/architecture/load_planner.md @ 19d1fc5e
    "2025-docs": {
        "adjustment_interval_s": 30.0,
        "metric_pulling_interval_s": 1.0,
        "prefill_queue_scale_up_threshold": 0.5,
        "prefill_queue_scale_down_threshold": 0.2,
        "kv_scale_up_threshold_frac": 0.9,
        "kv_scale_down_threshold_frac": 0.5,
    },
    # components/src/dynamo/planner/defaults.py @ 01127723
    "late-2025": {
        "adjustment_interval_s": 180.0,
        "metric_pulling_interval_s": 10.0,
        "prefill_queue_scale_up_threshold": 5.0,
        "prefill_queue_scale_down_threshold": 0.2,
        "kv_scale_up_threshold_frac": 0.9,
        "kv_scale_down_threshold_frac": 0.5,
    },
}
COOLDOWN_INTERVALS = 3  # both "3 intervals" rules of load_planner.md


class LoadPlannerParams(BaseModel):
    """Dynamo load planner; fields left unset take the values of the `defaults` preset."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["load_planner"] = "load_planner"
    defaults: Literal["2025-docs", "late-2025"] = Field(default="2025-docs", description=(
        "Which documented default set fills unset fields: 2025-docs (load_planner.md: 30 s / 1 s, "
        "queue 0.5/0.2) or late-2025 (defaults.py @ 01127723: 180 s / 10 s, queue 5.0/0.2)."))
    # Defaults shown are the 2025-docs preset; `defaults: late-2025` swaps in the other column.
    adjustment_interval_s: float = Field(
        default=30.0, gt=0, description="Decision period, s (late-2025 preset: 180)."
    )
    metric_pulling_interval_s: float = Field(
        default=1.0, gt=0, description="Sampling period, s (late-2025 preset: 10)."
    )
    prefill_queue_scale_up_threshold: float = Field(default=0.5, ge=0, description=(
        "Queued prefills per worker above which one is added (late-2025 preset: 5.0)."))
    prefill_queue_scale_down_threshold: float = Field(default=0.2, ge=0, description=(
        "Queued prefills per worker below which one is removed (both presets 0.2)."))
    kv_scale_up_threshold_frac: float = Field(
        default=0.9, gt=0, le=1, description="Mean KV utilisation above which one is added (0.9)."
    )
    kv_scale_down_threshold_frac: float = Field(
        default=0.5, ge=0, le=1, description="Mean KV utilisation below which one is removed (0.5)."
    )
    min_gpu_budget: int = Field(
        default=1, ge=0, description="GPU floor for this role (documented default 1)."
    )
    max_gpu_budget: int = Field(
        default=8, ge=1, description="GPU ceiling for this role (documented default 8)."
    )

    @model_validator(mode="before")
    @classmethod
    def _fill_preset(cls, data: Any) -> Any:
        if isinstance(data, dict):
            preset = PRESETS.get(data.get("defaults", "2025-docs"), {})
            data = {**preset, **data}
        return data

    @model_validator(mode="after")
    def _check(self) -> LoadPlannerParams:
        ticks_per_interval(self.adjustment_interval_s, self.metric_pulling_interval_s)
        if self.prefill_queue_scale_down_threshold >= self.prefill_queue_scale_up_threshold:
            raise ValueError(
                "prefill_queue_scale_down_threshold must be below the scale-up threshold"
            )
        if self.kv_scale_down_threshold_frac >= self.kv_scale_up_threshold_frac:
            raise ValueError(
                "kv_scale_down_threshold_frac must be below kv_scale_up_threshold_frac"
            )
        if self.min_gpu_budget > self.max_gpu_budget:
            raise ValueError(
                f"min_gpu_budget {self.min_gpu_budget} > max_gpu_budget {self.max_gpu_budget}"
            )
        return self


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


SPEC = PolicySpec(
    name="load_planner",
    params=LoadPlannerParams,
    build=build,
    summary=(
        "Dynamo load planner (2025): +-1 per interval on prefill queue or KV utilisation, with "
        "cooldowns."
    ),
    needs_context=True,
)
