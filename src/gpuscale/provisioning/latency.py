"""Node-phase latency distributions and their defaults.

No primary Karpenter or CA document states a GPU launch-to-ready figure (reference
layer1-node-provisioning.md section 1.7). Defaults below follow its simulation suggestion
(launch about 30-90 s, then boot/join, then driver and device-plugin registration) and
calibration row A18 (calibration.md: a fresh GPU node becomes schedulable in 3-10 min unless
images and drivers are pre-baked; the device plugin advertises GPUs about 90 s after launch).
With the defaults the median launch-to-GPU-allocatable time is 45 + 120 + 105 = 270 s (4.5 min).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator


class Latency(BaseModel):
    """A non-negative random duration: `fixed`, `uniform` or `lognormal` (median + sigma)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dist: Literal["fixed", "uniform", "lognormal"] = Field(
        "lognormal", description="Distribution family; lognormal because boot times are "
        "right-skewed (a few nodes take much longer than the median).")
    median_s: float = Field(60.0, ge=0, description="Median seconds (lognormal) or the value "
                            "(fixed).")
    sigma: float = Field(0.3, ge=0, description="Lognormal shape; 0.3 puts 90% of draws "
                         "within about x0.6..x1.6 of the median.")
    low_s: float = Field(0.0, ge=0, description="Lower bound seconds (uniform only).")
    high_s: float = Field(0.0, ge=0, description="Upper bound seconds (uniform only).")

    @model_validator(mode="after")
    def _check_bounds(self) -> Latency:
        if self.dist == "uniform" and self.high_s < self.low_s:
            raise ValueError(f"uniform latency needs high_s >= low_s, got "
                             f"{self.low_s}..{self.high_s}")
        return self

    def draw(self, rng: np.random.Generator) -> float:
        if self.dist == "fixed":
            return self.median_s
        if self.dist == "uniform":
            return float(rng.uniform(self.low_s, self.high_s))
        return float(self.median_s * np.exp(self.sigma * rng.standard_normal()))


def fixed(seconds: float) -> Latency:
    return Latency(dist="fixed", median_s=seconds)


class NodeLatencies(BaseModel):
    """Latency of each NodeClaim phase (reference 1.6: Launched -> Registered -> Initialized)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    launch: Latency = Field(Latency(median_s=45.0), description="Create call until the cloud "
                            "returns an instance (Launched); reference 1.7 suggests 30-90 s.")
    registration: Latency = Field(Latency(median_s=120.0), description="Launched until the Node "
                              "joins (Registered): VM boot + kubelet join; A18 puts 4-6 min "
                              "join-to-pod on AWS, of which about 2 min is boot.")
    initialization: Latency = Field(Latency(median_s=105.0), description="Registered until "
                                "nvidia.com/gpu is allocatable (Initialized): driver + device "
                                "plugin; A18 reports about 90 s after launch with pre-installed "
                                "drivers, 4.5 min with a driver DaemonSet.")

    def draw(self, rng: np.random.Generator) -> tuple[float, float, float]:
        return (self.launch.draw(rng), self.registration.draw(rng),
                self.initialization.draw(rng))
