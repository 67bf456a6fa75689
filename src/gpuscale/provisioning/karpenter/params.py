"""Scenario parameters of the `karpenter` node provider (controller flags + NodePools)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuscale.provisioning.capacity_buffer import CapacityBufferParams
from gpuscale.provisioning.disruption_budget import PodDisruptionBudgetParams
from gpuscale.provisioning.karpenter.nodepool import NodePoolParams, pool_offerings
from gpuscale.provisioning.latency import NodeLatencies
from gpuscale.provisioning.nodes import CapacityType, check_unique, no_items
from gpuscale.provisioning.spot import SpotParams
from gpuscale.units import WALL_CLOCK_RANGE

# Wall times budget schedules can be simulated at (docs/input-limits.md).
START_UTC_RANGE = WALL_CLOCK_RANGE
# A Monday, so weekday budget schedules ("0 9 * * 1-5") line up with the first simulated day.
DEFAULT_START_UTC = datetime(2026, 1, 5, tzinfo=timezone.utc)


class CapacityOutage(BaseModel):
    """A window in which launches of matching offerings fail with insufficient capacity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    instance_type: str = Field(description="Instance type name, or '*' for all.")
    zone: str | None = Field(None, description="Zone; None = every zone.")
    capacity_type: CapacityType | None = Field(None, description="None = every capacity type.")
    start_s: float = Field(0.0, ge=0, description="Outage start, simulation seconds.")
    end_s: float = Field(float("inf"), description="Outage end, simulation seconds.")
    nodes_available: int = Field(0, ge=0, description="Launches of matching offerings that "
                                 "still succeed inside the window before capacity runs out "
                                 "(the zone had that many instances left); 0 = every launch "
                                 "fails. Lets one claim of a batch launch and the next fail.")


class KarpenterParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["karpenter"] = "karpenter"
    node_pools: list[NodePoolParams] = Field(min_length=1, description="NodePools; tried in "
                                             "descending weight.")
    batch_idle_s: float = Field(1.0, gt=0, description="--batch-idle-duration; default 1s "
                                "(reference 1.2).")
    batch_max_s: float = Field(10.0, gt=0, description="--batch-max-duration; default 10s.")
    node_latencies: NodeLatencies = Field(default_factory=NodeLatencies, description="Phase "
                                          "latencies of a fresh GPU node (see latency.py).")
    launch_timeout_s: float = Field(300.0, gt=0, description="NodeClaim deleted if not "
                                    "Launched in time; Karpenter's 5 min (liveness.go).")
    registration_timeout_s: float = Field(900.0, gt=0, description="NodeClaim deleted if not "
                                          "Registered within 15 min of creation.")
    insufficient_capacity_probability_frac: float = Field(0.0, ge=0, le=1, description=
                                                          "Chance that one offering's launch "
                                                          "fails with insufficient capacity.")
    capacity_outages: list[CapacityOutage] = Field(default_factory=no_items)
    unavailable_offering_ttl_s: float = Field(180.0, ge=0, description="How long an offering "
                                              "stays blocked after insufficient capacity; AWS "
                                              "provider's 3 min (cache.go).")
    disruption_period_s: float = Field(10.0, gt=0, description="Disruption controller poll "
                                       "period; 10 s (controller.go).")
    command_validation_delay_s: float = Field(15.0, ge=0, description="Wait before a "
                                              "disruption command is re-checked and executed; "
                                              "15 s (consolidation.go).")
    spot_to_spot_consolidation: bool = Field(False, description="Feature gate "
                                             "SpotToSpotConsolidation; default off.")
    start_utc: datetime = Field(DEFAULT_START_UTC, description="Wall time of simulation t=0 "
                                "for budget schedules; default Monday 2026-01-05 00:00 UTC.")
    spot: SpotParams = Field(default_factory=SpotParams)
    capacity_buffers: list[CapacityBufferParams] = Field(
        default_factory=no_items, description="CapacityBuffers (autoscaling.x-k8s.io, Karpenter's "
        "CapacityBuffer feature gate): room kept for virtual pods; their nodes are ready at "
        "t=0 (without the image) and are launched again when real pods take them "
        "(provisioning/capacity_buffer.py). Empty = none.")
    pod_disruption_budgets: list[PodDisruptionBudgetParams] = Field(
        default_factory=no_items, description="PodDisruptionBudgets: a node with a pod whose PDB "
        "allows no disruption is no consolidation candidate, and drains evict a pod only when "
        "its PDBs allow (until terminationGracePeriod). Empty = none.")

    @model_validator(mode="after")
    def _check(self) -> KarpenterParams:
        check_unique([x.name for x in self.node_pools], "NodePool")
        check_unique([x.name for x in self.capacity_buffers], "capacity buffer")
        check_unique([x.name for x in self.pod_disruption_budgets], "PodDisruptionBudget")
        empty = [p.name for p in self.node_pools if not pool_offerings(p)]
        if empty:  # such a pool can never launch a node: say so instead of a silent no-op
            raise ValueError(f"NodePool {', '.join(empty)}: requirements match no instance "
                             "type, zone and capacity type in the catalog")
        if self.batch_max_s < self.batch_idle_s:
            raise ValueError("batch_max_s must be >= batch_idle_s")
        if self.start_utc.tzinfo is None:
            object.__setattr__(self, "start_utc", self.start_utc.replace(tzinfo=timezone.utc))
        if not START_UTC_RANGE[0] <= self.start_utc < START_UTC_RANGE[1]:
            # Budget schedules add run seconds to it (and walk back a duration): year 1 or 9999
            # would overflow datetime mid-run.
            raise ValueError(f"start_utc {self.start_utc.isoformat()} is outside "
                             f"{START_UTC_RANGE[0]:%Y}-{START_UTC_RANGE[1]:%Y}")
        return self
