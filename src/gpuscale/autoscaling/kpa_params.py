"""The params model and registry entry of kind `kpa` (Knative's KPA);
the controller is in `kpa.py`, imported only when a run builds one (`registry.lazy_build`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gpuscale.autoscaling.base import PolicySpec
from gpuscale.registry import lazy_build


class KpaParams(BaseModel):
    """Knative `config-autoscaler` plus revision annotations; defaults from reference 3.1."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["kpa"] = "kpa"
    metric: Literal["concurrency", "rps"] = Field(default="concurrency", description=(
        "concurrency: requests in flight (engine waiting + running, plus those the gateway "
        "holds, as the activator would); rps: the frontend request rate."))
    tick_interval_s: float = Field(
        default=2.0, gt=0, description="Decision tick, s (multiscaler.go tickInterval 2 s)."
    )
    container_concurrency: int = Field(
        default=0, ge=0, description="containerConcurrency; 0 = unlimited (target default used)."
    )
    container_concurrency_target_default: float = Field(
        default=100.0, gt=0, description="Per-pod target when containerConcurrency is 0 (100)."
    )
    requests_per_second_target_default: float = Field(
        default=200.0, gt=0, description="Per-pod rps target (200)."
    )
    target: float | None = Field(
        default=None,
        gt=0,
        description="autoscaling.knative.dev/target annotation; overrides the defaults.",
    )
    target_utilization_frac: float = Field(
        default=0.7, gt=0, le=1, description="container-concurrency-target-percentage (70 %)."
    )
    stable_window_s: float = Field(
        default=60.0, ge=6, le=3600, description="stable-window (60 s; allowed 6 s - 1 h)."
    )
    panic_window_percentage: float = Field(
        default=10.0, ge=1, le=100, description="Panic window as % of stable (10 -> 6 s)."
    )
    panic_threshold_percentage: float = Field(
        default=200.0, gt=100, description="panic-threshold-percentage (200)."
    )
    max_scale_up_rate: float = Field(default=1000.0, gt=1, description="max-scale-up-rate (1000).")
    max_scale_down_rate: float = Field(default=2.0, gt=1, description="max-scale-down-rate (2).")
    enable_scale_to_zero: bool = Field(default=True, description="enable-scale-to-zero (true).")
    scale_to_zero_grace_period_s: float = Field(
        default=30.0, ge=0, description="scale-to-zero-grace-period (30 s)."
    )
    scale_down_delay_s: float = Field(
        default=0.0, ge=0, le=3600, description="scale-down-delay (0 s): max of recent decisions."
    )
    min_scale: int = Field(default=0, ge=0, description="min-scale (0).")
    max_scale: int = Field(default=0, ge=0, description="max-scale (0 = unbounded).")

    @property
    def panic_window_s(self) -> float:
        return self.stable_window_s * self.panic_window_percentage / 100.0

    @property
    def target_per_pod(self) -> float:
        """target.go: max(0.01, total x utilisation); total = annotation, containerConcurrency or
        default."""
        if self.metric == "rps":
            total = self.target or self.requests_per_second_target_default
        else:
            total = (
                self.target
                or self.container_concurrency
                or self.container_concurrency_target_default
            )
        return max(0.01, total * self.target_utilization_frac)


SPEC = PolicySpec(
    name="kpa",
    params=KpaParams,
    build=lazy_build("gpuscale.autoscaling.kpa"),
    summary=(
        "Knative KPA: 60 s stable / 6 s panic window averages of concurrency or rps, panic at 200 "
        "%."
    ),
)
