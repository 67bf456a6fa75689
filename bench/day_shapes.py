"""Synthetic days of LLM traffic in other shapes than the development trace, for checking
`gpuscale plan` beyond it (issue 27: a plan made on one day of a service, replayed over
another day of it).

Each shape is a rate curve over the day (requests/s per minute of the day, UTC) and a
service (model, GPU, SLO). A *day* of a shape is one draw: the curve with the day's own
level (a few per cent up or down), slow noise (a multiplicative log-normal per 10 minutes)
and, where the shape has them, bursts at random times; arrivals are a Poisson process on
that rate. Two days of one shape are two draws of the same service, as ServeGen's two days
are. Prompt and output lengths are log-normal (chat-like unless the shape says otherwise),
the same law every day.

    python bench/day_shapes.py OUT_DIR [--shape NAME ...]   # writes NAME_day1.csv, NAME_day2.csv

Nothing here reads or is tuned to the plan: the curves are written from the shapes' names
(a 2x and a 5x daily swing, a sharp morning ramp, noise with bursts, two peaks, a
reasoning service with long outputs on H200).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MINUTES = 1440
NOISE_BLOCK_MIN = 10  # slow noise: one log-normal factor per 10 minutes
NOISE_SIGMA = 0.06
DAY_LEVEL_SIGMA = 0.03  # a day's own level: a few per cent up or down


def _diurnal(trough: float, peak: float, peak_hour: float) -> Callable[[np.ndarray], np.ndarray]:
    """A cosine day: `peak` at `peak_hour`, `trough` twelve hours away."""
    def rate(minute: np.ndarray) -> np.ndarray:
        phase = 2 * math.pi * (minute / 60.0 - peak_hour) / 24.0
        return trough + (peak - trough) * 0.5 * (1 + np.cos(phase))
    return rate


def _morning_ramp(night: float, day: float) -> Callable[[np.ndarray], np.ndarray]:
    """Night level until 08:00, up to the day level by 08:20 (a sharp ramp), flat until
    18:00, back down to the night level by 23:00."""
    def rate(minute: np.ndarray) -> np.ndarray:
        hours = minute / 60.0
        up = np.clip((hours - 8.0) / (20 / 60), 0, 1)
        down = np.clip((hours - 18.0) / 5.0, 0, 1)
        return night + (day - night) * up * (1 - down)
    return rate


def _two_peaks(trough: float, peak: float) -> Callable[[np.ndarray], np.ndarray]:
    """Peaks at 10:00 and 20:00 (two hours wide), the second 80 % of the first."""
    def rate(minute: np.ndarray) -> np.ndarray:
        hours = minute / 60.0
        bump = (np.exp(-0.5 * ((hours - 10.0) / 2.0) ** 2)
                + 0.8 * np.exp(-0.5 * ((hours - 20.0) / 2.0) ** 2))
        return trough + (peak - trough) * bump
    return rate


@dataclass(frozen=True)
class Shape:
    name: str
    rate_rps: Callable[[np.ndarray], np.ndarray]  # requests/s at each minute of the day
    model: str
    instance_type: str
    slo: dict
    bursts_per_hour: float = 0.0  # short bursts on top of the curve
    burst_factor: float = 1.0
    burst_min: tuple[int, int] = (5, 10)  # a burst's length, minutes (uniform)
    precision: str = "bf16"
    prompt: tuple[float, float, int] = (900.0, 2600.0, 8000)  # median, p90, cap (tokens)
    output: tuple[float, float, int] = (250.0, 700.0, 2000)  # chat-like by default


SHAPES = {s.name: s for s in (
    Shape("swing-2x", _diurnal(2.5, 5.0, 14.0), "Qwen2.5-7B", "g6.2xlarge",
          {"ttft_p99_s": 5.0, "itl_p99_s": 0.2, "goodput_frac": 0.99}),
    Shape("swing-5x", _diurnal(1.2, 6.0, 15.0), "Llama-3.1-8B", "g6.2xlarge",
          {"ttft_p99_s": 3.0, "itl_p99_s": 0.2, "goodput_frac": 0.99}),
    Shape("morning-ramp", _morning_ramp(1.5, 5.5), "Qwen2.5-7B", "g6.2xlarge",
          {"ttft_p99_s": 5.0, "itl_p99_s": 0.2, "goodput_frac": 0.99}),
    Shape("bursty", _diurnal(2.0, 5.0, 13.0), "Llama-3.1-8B", "g6e.2xlarge",
          {"ttft_p99_s": 2.0, "itl_p99_s": 0.1, "goodput_frac": 0.99},
          bursts_per_hour=1.0, burst_factor=1.8),
    Shape("two-peaks", _two_peaks(1.5, 5.0), "Qwen2.5-7B", "g6.2xlarge",
          {"ttft_p99_s": 5.0, "itl_p99_s": 0.2, "goodput_frac": 0.99}),
    # a reasoning service on 8-GPU H200 nodes: a 4.7x daily swing (the reasoning day),
    # long outputs, a 671B model a node per replica, whose cold start (node + image + ~700 GB
    # of weights) is long
    Shape("reasoning-h200", _diurnal(1.5, 7.0, 16.0), "DeepSeek-R1", "p5en.48xlarge",
          {"ttft_p99_s": 5.0, "itl_p99_s": 0.1, "goodput_frac": 0.99}, precision="fp8",
          prompt=(600.0, 2000.0, 8000), output=(1200.0, 4000.0, 16000)),
    # the same service at twice the traffic: 3-14 req/s, a peak of about four 8-GPU replicas
    Shape("reasoning-h200-busy", _diurnal(3.0, 14.0, 16.0), "DeepSeek-R1", "p5en.48xlarge",
          {"ttft_p99_s": 5.0, "itl_p99_s": 0.1, "goodput_frac": 0.99}, precision="fp8",
          prompt=(600.0, 2000.0, 8000), output=(1200.0, 4000.0, 16000)),
)}

# Each shape's draws are seeded by its place here (new shapes go at the end, so the others'
# days stay the same draws).
SEED_ORDER = ("bursty", "morning-ramp", "swing-2x", "swing-5x", "two-peaks", "reasoning-h200",
              "reasoning-h200-busy")


def _lognormal(rng: np.random.Generator, n: int, median: float, p90: float, cap: int
               ) -> np.ndarray:
    sigma = math.log(p90 / median) / 1.2815515655446004  # z of the 90th percentile
    values = np.exp(rng.normal(math.log(median), sigma, n))
    return np.clip(np.round(values), 1, cap).astype(np.int64)


def day_rate_rps(shape: Shape, rng: np.random.Generator) -> np.ndarray:
    """One day's rate per minute: the curve x the day's level x slow noise, plus bursts."""
    minute = np.arange(MINUTES, dtype=np.float64)
    rate = shape.rate_rps(minute) * math.exp(rng.normal(0.0, DAY_LEVEL_SIGMA))
    blocks = MINUTES // NOISE_BLOCK_MIN
    noise = np.exp(rng.normal(0.0, NOISE_SIGMA, blocks))
    rate = rate * np.repeat(noise, NOISE_BLOCK_MIN)
    if shape.bursts_per_hour > 0:
        for _ in range(rng.poisson(shape.bursts_per_hour * 24)):
            start = int(rng.integers(0, MINUTES))
            length = int(rng.integers(shape.burst_min[0], shape.burst_min[1] + 1))
            rate[start:start + length] *= shape.burst_factor
    return rate


def day_requests(shape: Shape, seed: int) -> np.ndarray:
    """(arrival_s, prompt_tokens, output_tokens) rows of one day, sorted by arrival."""
    rng = np.random.default_rng(seed)
    rate = day_rate_rps(shape, rng)
    counts = rng.poisson(rate * 60.0)
    starts = np.repeat(np.arange(MINUTES) * 60.0, counts)
    arrival = np.sort(starts + rng.uniform(0.0, 60.0, len(starts)))
    prompts = _lognormal(rng, len(arrival), *shape.prompt)
    outputs = _lognormal(rng, len(arrival), *shape.output)
    return np.column_stack([arrival, prompts, outputs])


def write_day(rows: np.ndarray, path: Path) -> Path:
    with path.open("w") as f:
        f.write("arrival_s,prompt_tokens,output_tokens\n")
        for a, p, o in rows:
            f.write(f"{a:.3f},{int(p)},{int(o)}\n")
    return path


def write_days(shape: Shape, folder: Path, seed: int = 0) -> tuple[Path, Path]:
    """Day 1 and day 2 of `shape` (two draws), as generic CSV traces."""
    base = 1000 * (1 + SEED_ORDER.index(shape.name)) + seed
    return (write_day(day_requests(shape, base + 1), folder / f"{shape.name}_day1.csv"),
            write_day(day_requests(shape, base + 2), folder / f"{shape.name}_day2.csv"))


def plan_input(shape: Shape, fit: Path, check: Path) -> dict:
    """A plan input for the service: fit on `fit`, check on `check` (another day)."""
    return {"name": shape.name, "cluster": {"name": "prod", "instance_types":
                                            [shape.instance_type], "max_gpus": 64},
            "slo": dict(shape.slo),
            "workloads": [{"name": "svc", "model": shape.model, "precision": shape.precision,
                           "traffic": {"kind": "trace", "format": "generic", "path": str(fit)},
                           "check_traffic": {"kind": "trace", "format": "generic",
                                             "path": str(check)}}]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.shape or sorted(SHAPES):
        one, two = write_days(SHAPES[name], args.out)
        print(f"{name}: {one.name}, {two.name}")


if __name__ == "__main__":
    main()
