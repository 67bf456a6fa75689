"""Synthetic workload generators: scenario-YAML params models that build `Requests`.

Each model has a `kind` tag (the YAML name) and a `generate(rng, base_dir)` method; arrival
times come from `arrivals.py`, lengths from `distributions.py`, in that order from the one
`rng`, so the same seed always gives the same table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuscale.workloads import arrivals
from gpuscale.workloads.base import Requests
from gpuscale.workloads.distributions import (
    DEFAULT_OUTPUT_TOKENS,
    DEFAULT_PROMPT_TOKENS,
    TokenDistribution,
)

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class _Lengths(BaseModel):
    model_config = _FROZEN

    prompt_tokens: TokenDistribution = Field(
        DEFAULT_PROMPT_TOKENS,
        description="Prompt length distribution, tokens. Default: lognormal matched to the Azure "
        "2023 conversation trace (p50 1,020, p90 2,735, cap 14,050).",
    )
    output_tokens: TokenDistribution = Field(
        DEFAULT_OUTPUT_TOKENS,
        description="Output length distribution, tokens. Default: lognormal matched to the Azure "
        "2023 conversation trace (p50 129, p90 424, cap 1,000).",
    )

    def _with_lengths(self, arrival_s: np.ndarray, rng: np.random.Generator) -> Requests:
        n = len(arrival_s)
        return Requests(
            arrival_s, self.prompt_tokens.sample(rng, n), self.output_tokens.sample(rng, n)
        )


class _Timed(_Lengths):
    duration_s: float = Field(..., gt=0, description="Length of the generated load, seconds.")


class PoissonWorkload(_Timed):
    """Homogeneous Poisson arrivals: independent requests at a constant mean rate."""

    kind: Literal["poisson"] = "poisson"
    rate_per_s: float = Field(..., gt=0, description="Mean arrival rate, requests per second.")

    def generate(self, rng: np.random.Generator, base_dir: Path) -> Requests:
        times = arrivals.poisson_arrivals(rng, self.rate_per_s, self.duration_s)
        return self._with_lengths(times, rng)


class BurstyWorkload(_Timed):
    """Gamma-renewal arrivals: a mean rate plus a coefficient of variation of the gaps.

    cv = 1 is Poisson; the Azure 2023 traces measure 1.09 (conv) and 13.15 (code)
    (shared/traces/README.md), so cv between 1 and ~15 spans what production shows.
    """

    kind: Literal["bursty"] = "bursty"
    rate_per_s: float = Field(..., gt=0, description="Mean arrival rate, requests per second.")
    cv: float = Field(
        ...,
        gt=0,
        description="Coefficient of variation of inter-arrival gaps (std/mean); 1 = Poisson, "
        "larger = burstier.",
    )

    def generate(self, rng: np.random.Generator, base_dir: Path) -> Requests:
        times = arrivals.gamma_renewal_arrivals(rng, self.rate_per_s, self.cv, self.duration_s)
        return self._with_lengths(times, rng)


class Phase(BaseModel):
    """One stretch of constant-rate Poisson load inside a piecewise workload."""

    model_config = _FROZEN

    name: str = Field("", description="Label for reports, e.g. 'quiet', 'burst', 'tail'.")
    duration_s: float = Field(..., gt=0, description="Length of the phase, seconds.")
    rate_per_s: float = Field(
        ..., ge=0, description="Mean arrival rate in the phase, requests per second (0 = idle)."
    )


class PiecewiseWorkload(_Lengths):
    """Poisson load whose rate steps through phases, e.g. quiet -> burst -> tail.

    `duration_s` defaults to the sum of the phases; a longer one cycles through them again
    (a daily pattern repeated for a week), a shorter one cuts the run short.
    """

    kind: Literal["piecewise"] = "piecewise"
    phases: list[Phase] = Field(..., min_length=1, description="Phases in time order.")
    duration_s: float | None = Field(
        None, gt=0, description="Length of the load, seconds; default: the phases once."
    )

    @property
    def cycle_s(self) -> float:
        return sum(p.duration_s for p in self.phases)

    def phase_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start_s, duration_s, rate_per_s) of every phase instance within the run."""
        total_s = self.duration_s if self.duration_s is not None else self.cycle_s
        durations = np.array([p.duration_s for p in self.phases])
        rates = np.array([p.rate_per_s for p in self.phases])
        cycles = int(np.ceil(total_s / self.cycle_s))
        phase_starts = np.cumsum(durations) - durations
        starts = (np.arange(cycles)[:, None] * self.cycle_s + phase_starts).ravel()
        ends = np.minimum(starts + np.tile(durations, cycles), total_s)
        inside = starts < total_s
        return starts[inside], (ends - starts)[inside], np.tile(rates, cycles)[inside]

    def generate(self, rng: np.random.Generator, base_dir: Path) -> Requests:
        times = arrivals.piecewise_poisson_arrivals(rng, *self.phase_table())
        return self._with_lengths(times, rng)


class DiurnalWorkload(_Timed):
    """Poisson load whose rate follows a raised cosine between a trough and a peak."""

    kind: Literal["diurnal"] = "diurnal"
    min_rate_per_s: float = Field(..., ge=0, description="Trough rate, requests per second.")
    max_rate_per_s: float = Field(..., gt=0, description="Peak rate, requests per second.")
    period_s: float = Field(86400.0, gt=0, description="Cycle length, seconds; default one day.")
    peak_at_s: float | None = Field(
        None,
        description="Time of the first peak, seconds from the start (any real; the pattern "
        "repeats every period). Default: half a period, so the run starts at the trough and "
        "the autoscaler has to ramp up.",
    )

    @model_validator(mode="after")
    def _ordered(self):
        if self.max_rate_per_s < self.min_rate_per_s:
            raise ValueError(
                f"max_rate_per_s ({self.max_rate_per_s}) must be >= min_rate_per_s "
                f"({self.min_rate_per_s})"
            )
        return self

    @property
    def peak_s(self) -> float:
        return self.peak_at_s if self.peak_at_s is not None else self.period_s / 2

    def generate(self, rng: np.random.Generator, base_dir: Path) -> Requests:
        times = arrivals.diurnal_arrivals(
            rng,
            self.min_rate_per_s,
            self.max_rate_per_s,
            self.period_s,
            self.peak_s,
            self.duration_s,
        )
        return self._with_lengths(times, rng)


class LongPromptSpikeWorkload(_Lengths):
    """A few very long requests at once ("1M-token requests at 2 AM"); mix it with a base load.

    It has no `duration_s`: the spike is `count` requests in [at_s, at_s + spread_s].
    """

    kind: Literal["long_prompt_spike"] = "long_prompt_spike"
    at_s: float = Field(..., ge=0, description="Start of the spike, seconds from the run start.")
    count: int = Field(..., ge=1, description="Number of long requests in the spike.")
    spread_s: float = Field(
        0.0,
        ge=0,
        description="Window the spike's arrivals are spread over uniformly, seconds; default 0 "
        "(all at once, the worst case for a KV cache).",
    )
    prompt_tokens: TokenDistribution = Field(
        ..., description="Prompt length distribution of the long requests, tokens (required)."
    )

    def generate(self, rng: np.random.Generator, base_dir: Path) -> Requests:
        times = arrivals.spike_arrivals(rng, self.at_s, self.count, self.spread_s)
        return self._with_lengths(times, rng)
