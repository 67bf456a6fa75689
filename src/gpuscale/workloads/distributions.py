"""Token-length distributions for synthetic workloads (prompt and output lengths).

Each distribution is a frozen pydantic model with a `kind` tag, so scenario YAML can write
`prompt_tokens: {kind: lognormal, median_tokens: 1020, p90_tokens: 2735}`. Every kind has the
same two explicit caps, `min_tokens` and `max_tokens`: a draw outside them is set to the cap,
and nothing else is clipped (STYLE.md section 3: a cap is a named parameter).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

# Standard normal quantile at 0.90, used to turn a p90 into a lognormal sigma:
# p90 = median * exp(sigma * Z90). Value of the inverse normal CDF at 0.9.
Z90 = 1.2815515655446004
# Longest length drawn when `max_tokens` is not set: 10 M tokens, the longest context window
# any served model advertises (Llama 4 Scout). Without it a heavy tail (sigma 1000) drew
# 2^62-token requests that stayed in flight forever.
DEFAULT_CEILING_TOKENS = 10_000_000
# Largest lognormal sigma: exp(10 * Z90) puts the p90 at ~370,000x the median, far past any
# measured length distribution (the Azure traces: p90/median 2.7-3.3, shared/traces/README.md).
MAX_SIGMA = 10.0


class _Caps(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    min_tokens: int = Field(
        1,
        ge=1,
        description="Smallest length drawn, tokens; draws below are raised to it. Default 1 "
        "because a request has at least one token.",
    )
    max_tokens: int | None = Field(
        None,
        ge=1,
        description="Largest length drawn, tokens; draws above are lowered to it. Default "
        "10,000,000 (the longest context any model serves); set it to the model's context "
        "length to keep heavy tails servable.",
    )

    @model_validator(mode="after")
    def _caps_ordered(self):
        if self.max_tokens is not None and self.max_tokens < self.min_tokens:
            raise ValueError(
                f"max_tokens ({self.max_tokens}) must be >= min_tokens ({self.min_tokens})"
            )
        return self

    def median_tokens_drawn(self) -> float | None:
        """The distribution's median before the caps (None: not known without drawing)."""
        return None

    @model_validator(mode="after")
    def _caps_keep_the_median(self):
        """A cap on the wrong side of the median sets more than half of the draws to the cap:
        `max_tokens: 500` under `median_tokens: 1000` made every other request 500 tokens
        long, silently. Refused; a cap in the tail is what caps are for."""
        median = self.median_tokens_drawn()
        if median is None:
            return self
        if self.max_tokens is not None and self.max_tokens < median:
            raise ValueError(f"max_tokens ({self.max_tokens}) is below the median length "
                             f"({median:g}): more than half of the draws would be cut to it; "
                             "raise max_tokens or lower the distribution")
        if self.min_tokens > median:
            raise ValueError(f"min_tokens ({self.min_tokens}) is above the median length "
                             f"({median:g}): more than half of the draws would be raised to it; "
                             "lower min_tokens or raise the distribution")
        return self

    def _apply_caps(self, values: np.ndarray) -> np.ndarray:
        """Integer draws -> int64 within [min_tokens, max_tokens]."""
        hi = self.max_tokens if self.max_tokens is not None else DEFAULT_CEILING_TOKENS
        return np.clip(values, self.min_tokens, hi).astype(np.int64, copy=False)

    def _round_and_cap(self, draws: np.ndarray) -> np.ndarray:
        """Float draws -> nearest integers within the caps, in place (no extra 10M copies).

        Clipping happens on floats first: a heavy tail can exceed the int64 range.
        """
        hi = (
            float(self.max_tokens) if self.max_tokens is not None else float(DEFAULT_CEILING_TOKENS)
        )
        np.clip(draws, self.min_tokens, hi, out=draws)
        np.rint(draws, out=draws)
        return draws.astype(np.int64)


class FixedTokens(_Caps):
    """Every request has the same length."""

    kind: Literal["fixed"] = "fixed"
    value: int = Field(..., ge=1, description="Length of every request, tokens.")

    def median_tokens_drawn(self) -> float | None:
        return float(self.value)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self._apply_caps(np.full(n, self.value, dtype=np.int64))


class LognormalTokens(_Caps):
    """Lognormal lengths given by the median and either `sigma` or the 90th percentile.

    Real prompt and output lengths are right-skewed (see the p50/p90/p99 table of the Azure
    traces in shared/traces/README.md), which a lognormal matches to first order. Draws are
    rounded to the nearest integer before the caps.
    """

    kind: Literal["lognormal"] = "lognormal"
    median_tokens: float = Field(..., gt=0, description="Median length, tokens.")
    sigma: float | None = Field(
        None, gt=0, le=MAX_SIGMA,
        description="Standard deviation of ln(length), at most 10; give this or p90_tokens.",
    )
    p90_tokens: float | None = Field(
        None, gt=0, description="90th-percentile length, tokens; give this or sigma."
    )

    @model_validator(mode="after")
    def _one_spread(self):
        if (self.sigma is None) == (self.p90_tokens is None):
            raise ValueError("lognormal needs exactly one of sigma or p90_tokens")
        if self.p90_tokens is not None and self.sigma_value > MAX_SIGMA:
            raise ValueError(f"p90_tokens / median_tokens means sigma {self.sigma_value:.3g}, "
                             f"past {MAX_SIGMA:g}")
        if self.p90_tokens is not None and self.p90_tokens <= self.median_tokens:
            raise ValueError(
                f"p90_tokens ({self.p90_tokens}) must be > median_tokens ({self.median_tokens})"
            )
        return self

    def median_tokens_drawn(self) -> float | None:
        return self.median_tokens

    @property
    def sigma_value(self) -> float:
        if self.sigma is not None:
            return self.sigma
        assert self.p90_tokens is not None  # the validator requires exactly one of the two
        return math.log(self.p90_tokens / self.median_tokens) / Z90

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        draws = rng.lognormal(math.log(self.median_tokens), self.sigma_value, size=n)
        return self._round_and_cap(draws)


class UniformTokens(_Caps):
    """Integer lengths uniform on [low, high], both ends included."""

    kind: Literal["uniform"] = "uniform"
    low: int = Field(..., ge=1, description="Shortest length, tokens (included).")
    high: int = Field(..., ge=1, description="Longest length, tokens (included).")

    @model_validator(mode="after")
    def _ordered(self):
        if self.high < self.low:
            raise ValueError(f"uniform high ({self.high}) must be >= low ({self.low})")
        return self

    def median_tokens_drawn(self) -> float | None:
        return (self.low + self.high) / 2

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self._apply_caps(rng.integers(self.low, self.high, size=n, endpoint=True))


class EmpiricalTokens(_Caps):
    """Lengths drawn with replacement from a list, e.g. lengths taken from a trace."""

    kind: Literal["empirical"] = "empirical"
    values: list[Annotated[int, Field(ge=1)]] = Field(
        ..., min_length=1, description="Observed lengths, tokens; each is equally likely."
    )

    def median_tokens_drawn(self) -> float | None:
        return float(np.median(self.values))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        pool = np.asarray(self.values, dtype=np.int64)
        return self._apply_caps(pool[rng.integers(0, len(pool), size=n)])


TokenDistribution = Annotated[
    FixedTokens | LognormalTokens | UniformTokens | EmpiricalTokens,
    Field(discriminator="kind"),
]


def sample_tokens(dist: TokenDistribution, rng: np.random.Generator, n: int) -> np.ndarray:
    """Draw `n` lengths (int64, each in [min_tokens, max_tokens]) from `dist`."""
    return dist.sample(rng, int(n))


# Defaults for generators that do not name their lengths: lognormals matched to the p50 / p90
# of the Azure LLM 2023 conversation trace (shared/traces/README.md, "Characterization":
# prompt 1,020 / 2,735 tokens, output 129 / 424 tokens), capped at that trace's maxima
# (14,050 and 1,000 tokens) so a default run never draws a length the trace never saw.
DEFAULT_PROMPT_TOKENS = LognormalTokens(median_tokens=1020, p90_tokens=2735, max_tokens=14050)
DEFAULT_OUTPUT_TOKENS = LognormalTokens(median_tokens=129, p90_tokens=424, max_tokens=1000)
