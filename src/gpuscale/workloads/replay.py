"""Trace replay: read a trace file, then window, tile, rescale and truncate it.

The order is fixed and documented because it changes the result: window [start_s, end_s)
(relative to the trace's first request) -> shift to 0 -> tile `repeat` times -> divide times
by `rate_scale` -> scale the load by `load_scale` -> keep the first `max_requests`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuscale.errors import UserInputError
from gpuscale.workloads.base import Requests
from gpuscale.workloads.limits import check_trace
from gpuscale.workloads.traces import (
    RECORDS_WALL_CLOCK,
    TRACE_READERS,
    read_burstgpt_csv,
)


def window(requests: Requests, start_s: float, end_s: float | None) -> Requests:
    """Requests with start_s <= arrival < end_s, shifted so `start_s` becomes time 0.

    The shift is by `start_s`, not by the first kept arrival, so the quiet lead-in of the
    window is kept.
    """
    lo = np.searchsorted(requests.arrival_s, start_s, side="left")
    hi = len(requests) if end_s is None else np.searchsorted(requests.arrival_s, end_s, side="left")
    return requests.take(slice(lo, hi)).shifted(start_s)


def tile(requests: Requests, repeat: int, period_s: float) -> Requests:
    """`repeat` back-to-back copies, copy k shifted by k * period_s (period >= the copy's span)."""
    offsets = np.arange(repeat, dtype=np.float64) * period_s
    blocks = requests.prefix_blocks
    # Each copy replays the same prompts, so its blocks are the same blocks (cache hits on the
    # earlier copy, as a replayed day would have).
    return Requests(
        # Row k of the broadcast sum is copy k: the same additions as tiling the arrivals and
        # repeating the offsets, without those two full-length temporaries.
        (requests.arrival_s + offsets[:, np.newaxis]).ravel(),
        np.tile(requests.prompt_tokens, repeat),
        np.tile(requests.output_tokens, repeat),
        None if blocks is None else blocks.take(np.tile(np.arange(len(requests)), repeat)),
        requests.start_time,
    )


def scale_rate(requests: Requests, rate_scale: float) -> Requests:
    """Compress time by `rate_scale` (> 1 = faster arrivals, same requests in the same order)."""
    return Requests(requests.arrival_s / rate_scale, requests.prompt_tokens, requests.output_tokens,
                    requests.prefix_blocks, requests.start_time)


# `load_scale`'s extra copies land within this many seconds of their original: more users of
# the same service, on the same curve at every scale a fleet sizes on (10-minute rates), with
# the minute-scale bursts grown in proportion. An approximation, documented in docs/workloads.md.
LOAD_JITTER_S = 60.0
# A fixed generator, not the run's: a trace replays the same requests whatever the seed
# (plan/trace_search.py relies on it), with or without a load scale.
LOAD_SEED = 20261202


def scale_load(requests: Requests, load_scale: float) -> Requests:
    """The same clock with `load_scale` times the requests: each request kept
    floor(load_scale) times and once more with probability frac(load_scale) (so 0.8 drops a
    fifth, 1.1 copies a tenth); an extra copy arrives within +-LOAD_JITTER_S of its original
    (never before 0 nor after the last arrival), with the original's lengths and prefix."""
    n = len(requests)
    if load_scale == 1.0 or n == 0:
        return requests
    rng = np.random.default_rng(LOAD_SEED)
    whole = int(load_scale)
    copies = np.full(n, whole, dtype=np.int64) + (rng.random(n) < load_scale - whole)
    index = np.repeat(np.arange(n), copies)
    arrival = requests.arrival_s[index]
    extra = np.zeros(len(index), dtype=bool)
    extra[1:] = index[1:] == index[:-1]  # a row's second and later copies (index is sorted)
    jitter = rng.uniform(-LOAD_JITTER_S, LOAD_JITTER_S, len(index))
    arrival = np.where(extra, np.clip(arrival + jitter, 0.0, requests.arrival_s[-1]), arrival)
    order = np.argsort(arrival, kind="stable")
    rows = index[order]
    blocks = requests.prefix_blocks
    return Requests(arrival[order], requests.prompt_tokens[rows], requests.output_tokens[rows],
                    None if blocks is None else blocks.take(rows), requests.start_time)


def head(requests: Requests, max_requests: int | None) -> Requests:
    if max_requests is None or max_requests >= len(requests):
        return requests
    return requests.take(slice(0, max_requests))


def trace_period_s(requests: Requests) -> float:
    """Length of a whole trace for tiling: its span plus one mean gap.

    The last request is not the end of the trace: the next one would have come about a mean
    gap later. Adding that gap keeps the tiled trace's mean rate equal to the original's,
    and keeps copies from colliding at the seam.
    """
    n = len(requests)
    return requests.span_s * n / (n - 1)


class TraceWorkload(BaseModel):
    """Replay a request trace file (formats: azure, generic, mooncake, burstgpt)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["trace"] = "trace"
    format: Literal["azure", "generic", "mooncake", "burstgpt"] = Field(
        ..., description="File format; see docs/workloads.md."
    )
    path: str = Field(
        ...,
        min_length=1,
        description="Trace file; a relative path is relative to the scenario file.",
    )
    start_s: float = Field(
        0.0, ge=0, description="Window start, seconds after the trace's first request."
    )
    end_s: float | None = Field(
        None,
        gt=0,
        description="Window end (excluded), seconds after the first request; default: all.",
    )
    rate_scale: float = Field(
        1.0,
        gt=0,
        description="Arrival-rate multiplier: times are divided by it (2 = twice the rate in half "
        "the time). Default 1 = as recorded.",
    )
    load_scale: float = Field(
        1.0,
        gt=0,
        le=100,
        description="Load multiplier that keeps the clock (unlike rate_scale): 1.2 replays a "
        "fifth of the requests twice, each copy within 60 s of its original, 0.8 drops a "
        "fifth; the same requests whatever the seed. Default 1 = as recorded.",
    )
    repeat: int = Field(
        1,
        ge=1,
        description="Tile the (windowed) trace this many times back to back, e.g. 10 x Azure conv "
        "= ~194k requests. Default 1.",
    )
    max_requests: int | None = Field(
        None, ge=1, description="Keep only the first N requests after all the above; default all."
    )
    model: str | None = Field(None, description="burstgpt only: keep rows of this Model.")
    log_type: str | None = Field(None, description="burstgpt only: keep rows of this Log Type.")
    drop_failed: bool = Field(
        True,
        description="burstgpt only: drop failed requests (Response tokens 0); if false they are "
        "kept with 1 output token.",
    )

    @model_validator(mode="after")
    def _consistent(self):
        if self.end_s is not None and self.end_s <= self.start_s:
            raise ValueError(f"end_s ({self.end_s}) must be > start_s ({self.start_s})")
        if self.format != "burstgpt":
            extra = [k for k in ("model", "log_type") if getattr(self, k) is not None]
            if extra or not self.drop_failed:
                names = ", ".join(extra or ["drop_failed"])
                raise ValueError(f"{names} only apply to format burstgpt, not {self.format}")
        return self

    @property
    def records_wall_clock(self) -> bool:
        """The format's times are wall-clock instants: the replay's `start_time` is the
        (windowed) trace's first request unless the run gives its own."""
        return self.format in RECORDS_WALL_CLOCK

    def read(self, base_dir: Path) -> Requests:
        path = Path(self.path)
        if not path.is_absolute():
            path = Path(base_dir) / path
        if self.format == "burstgpt":
            return read_burstgpt_csv(path, self.model, self.log_type, self.drop_failed)
        return TRACE_READERS[self.format](path)

    def generate(self, rng: np.random.Generator, base_dir: Path) -> Requests:
        """The replayed table; `rng` is unused (a trace is deterministic) but keeps the protocol."""
        full = self.read(base_dir)
        if len(full) == 0:
            raise UserInputError("the trace holds no request (a header alone, or every row "
                                 "filtered out)", source=self.path)
        cut = window(full, self.start_s, self.end_s)
        if len(cut) == 0:
            raise UserInputError(
                f"window [{self.start_s:g}, {self.end_s if self.end_s is not None else 'end'}) s "
                f"holds no request; the trace spans {full.span_s:g} s from its first request",
                source=self.path,
            )
        if self.repeat > 1:
            if len(full) < 2:
                raise UserInputError(
                    "repeat needs a trace of at least 2 requests", source=self.path
                )
            # Tile by the window when it lies inside the trace, else by the trace's own length.
            trace_end_s = trace_period_s(full)
            end_s = trace_end_s if self.end_s is None else min(self.end_s, trace_end_s)
            period_s = end_s - self.start_s
            check_trace(len(cut) * self.repeat, 0.0, self.path)  # the tiled arrays, before tiling
            cut = tile(cut, self.repeat, period_s)
        # `cut.arrival_s` is this call's own array (window and tile each make a new one), so
        # the rate scale divides it in place: the quotients of `scale_rate`, without another
        # full-length array (194k arrivals on the tiled benchmark), still sorted (r > 0).
        np.divide(cut.arrival_s, self.rate_scale, out=cut.arrival_s)
        if self.load_scale != 1.0:
            check_trace(math.ceil(len(cut) * self.load_scale), 0.0, self.path)
            cut = scale_load(cut, self.load_scale)
        replayed = head(cut, self.max_requests)
        end_s = float(replayed.arrival_s[-1]) if len(replayed) else 0.0
        check_trace(len(replayed), end_s, self.path)  # a trace spanning centuries
        return replayed
