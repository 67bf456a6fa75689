"""The params model and registry entry of kind `sla_planner` (the Dynamo-style SLA planner);
the controller is in `planner_sla.py`, imported only when a run builds one (`registry.lazy_build`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuscale.autoscaling.base import PolicySpec
from gpuscale.autoscaling.cadence import ticks_per_interval
from gpuscale.autoscaling.predictors import ArimaPredictor, PredictorSpec
from gpuscale.registry import lazy_build


class SlaPlannerParams(BaseModel):
    """Dynamo-style SLA planner; defaults from Dynamo's defaults.py @ 01127723 (reference 5.1)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["sla_planner"] = "sla_planner"
    adjustment_interval_s: float = Field(default=180.0, gt=0, description=(
        "Decision period, s (Dynamo default 180 s); should exceed the cold start since scaling "
        "does not wait for the previous change."))
    metric_pulling_interval_s: float = Field(default=10.0, gt=0, description=(
        "Sampling period of the signals, s (Dynamo late-2025 default 10 s). Signals change once "
        "per scrape, so the interval mean is a time average of what Prometheus showed."))
    ttft_target_s: float | None = Field(default=None, gt=0, description=(
        "TTFT target, s. Unset: the scenario's slo.ttft_s, else Dynamo's 0.5 s."))
    itl_target_s: float | None = Field(
        default=None,
        gt=0,
        description=(
            "ITL (time per output token) target, s. Unset: the scenario's slo.tpot_s, else "
            "Dynamo's 0.05 s."
        ),
    )
    predictor: PredictorSpec = Field(default_factory=ArimaPredictor, description=(
        "Load predictor for rate, ISL and OSL (Dynamo default: ARIMA; constant while warming up)."))
    history_points: int = Field(default=50, ge=1, le=10_000, description=(
        "Observations kept for the predictor (Dynamo's Prophet window is 50)."))
    default_isl_tokens: float = Field(
        default=3000.0,
        gt=0,
        description="ISL assumed before any request is seen (Dynamo default 3000).",
    )
    default_osl_tokens: float = Field(
        default=150.0,
        gt=0,
        description="OSL assumed before any request is seen (Dynamo default 150).",
    )
    no_correction: bool = Field(
        default=False,
        description="Skip the actual/expected correction factors (Dynamo default false).",
    )
    max_correction_factor: float = Field(default=2.0, ge=1, description=(
        "Corrections are bounded to [1/f, f]. Dynamo has no such bound; here one anomalous "
        "interval would otherwise drive the ITL target to zero or infinity, and a model off by "
        "more than 2x is better fixed in the model than chased interval by interval."))
    min_endpoint: int = Field(
        default=1, ge=0, description="Replica floor (Dynamo min_endpoint, default 1)."
    )
    max_gpu_budget: int = Field(
        default=8, ge=1, description="GPUs this role may use (Dynamo max_gpu_budget, default 8)."
    )

    @model_validator(mode="after")
    def _whole_ticks(self) -> SlaPlannerParams:
        ticks_per_interval(self.adjustment_interval_s, self.metric_pulling_interval_s)
        return self


SPEC = PolicySpec(
    name="sla_planner",
    params=SlaPlannerParams,
    build=lazy_build("gpuscale.autoscaling.planner_sla"),
    summary=(
        "Dynamo-style SLA planner: predict rate/ISL/OSL, size the role to meet TTFT/ITL from the "
        "performance model."
    ),
    needs_context=True,
)
