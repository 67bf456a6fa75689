"""The params model and registry entry of kind `wva` (llm-d's Workload Variant Autoscaler);
the controller is in `wva.py`, imported only when a run builds one (`registry.lazy_build`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuscale.autoscaling.base import PolicySpec
from gpuscale.autoscaling.cadence import ticks_per_interval
from gpuscale.registry import lazy_build


class WvaParams(BaseModel):
    """VariantAutoscaling with the saturation V1 analyzer (reference 6.3).

    Defaults from llm-d @ b08b1c7."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["wva"] = "wva"
    interval_s: float = Field(
        default=60.0, gt=0, description="GLOBAL_OPT_INTERVAL, s (default 60 s)."
    )
    sample_interval_s: float = Field(default=15.0, gt=0, description=(
        "How often the per-pod series are read for max_over_time, s; 15 s = the scrape interval, "
        "the resolution Prometheus itself would have."))
    lookback_s: float = Field(
        default=60.0, gt=0, description="max_over_time range, s ([1m] in the collector)."
    )
    kv_cache_threshold_frac: float = Field(
        default=0.80, gt=0, le=1, description="kvCacheThreshold (0.80)."
    )
    queue_length_threshold: float = Field(
        default=5.0, gt=0, description="queueLengthThreshold (5)."
    )
    kv_spare_trigger_frac: float = Field(
        default=0.10, ge=0, le=1, description="kvSpareTrigger (0.10)."
    )
    queue_spare_trigger: float = Field(default=3.0, ge=0, description="queueSpareTrigger (3).")
    variant_name: str = Field(
        default="default", description="Name of the one variant this run serves."
    )
    variant_cost: float = Field(default=10.0, ge=0, description='variantCost (CR default "10.0").')
    min_replicas: int = Field(
        default=1,
        ge=0,
        description="Floor of the actuating HPA (1); 0 needs KEDA or HPAScaleToZero.",
    )
    max_replicas: int = Field(
        default=10, ge=1, description="Ceiling of the actuating HPA; WVA itself has none."
    )

    @model_validator(mode="after")
    def _check(self) -> WvaParams:
        ticks_per_interval(self.interval_s, self.sample_interval_s)
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"min_replicas {self.min_replicas} > max_replicas {self.max_replicas}")
        return self


SPEC = PolicySpec(
    name="wva",
    params=WvaParams,
    build=lazy_build("gpuscale.autoscaling.wva"),
    summary=(
        "llm-d Workload Variant Autoscaler (saturation V1): KV/queue spare capacity, +-1 per 60 "
        "s, cheapest variant first."
    ),
)
