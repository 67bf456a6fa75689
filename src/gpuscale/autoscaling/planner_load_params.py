"""The params model and registry entry of kind `load_planner` (Dynamo's load planner);
the controller is in `planner_load.py`, imported only when a run builds one (`registry.lazy_build`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuscale.autoscaling.base import PolicySpec
from gpuscale.autoscaling.cadence import ticks_per_interval
from gpuscale.registry import lazy_build

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


SPEC = PolicySpec(
    name="load_planner",
    params=LoadPlannerParams,
    build=lazy_build("gpuscale.autoscaling.planner_load"),
    summary=(
        "Dynamo load planner (2025): +-1 per interval on prefill queue or KV utilisation, with "
        "cooldowns."
    ),
    needs_context=True,
)
