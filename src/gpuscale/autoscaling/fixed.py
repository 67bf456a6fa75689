"""A fixed replica count: the baseline every autoscaler is compared against."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gpuscale.autoscaling.base import AutoscalerView, NoExplanation, PolicySpec


class FixedParams(BaseModel):
    """No autoscaling: hold `replicas` (as a Deployment without an HPA does)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["fixed"] = "fixed"
    replicas: int = Field(ge=0, description="Replica count to hold.")
    period_s: float = Field(
        default=15.0,
        gt=0,
        description="How often the count is re-asserted, s; 15 s like the HPA sync period.",
    )


class FixedReplicas(NoExplanation):
    """Returns the fixed count whenever the target drifts from it."""

    def __init__(self, params: FixedParams):
        self.name = "fixed"
        self.period_s = params.period_s
        self.replicas = params.replicas

    def initial_state(self) -> None:
        return None

    def decide(self, view: AutoscalerView, state: None) -> tuple[int | None, None]:
        return (None if view.current_replicas == self.replicas else self.replicas), state


def build(params: FixedParams) -> list[FixedReplicas]:
    return [FixedReplicas(params)]


SPEC = PolicySpec(
    name="fixed", params=FixedParams, build=build, summary="Fixed replica count (no autoscaling)."
)
