"""`load_scale`: more (or fewer) requests on the same clock, the same whatever the seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.workloads import build_requests, parse_workload
from gpuscale.workloads.base import Requests
from gpuscale.workloads.replay import LOAD_JITTER_S, scale_load

FIXTURES = Path(__file__).parent / "fixtures"


def _day(n: int = 20_000, span_s: float = 86_400.0) -> Requests:
    """A day whose rate follows a cosine (4x swing), lengths numbered so rows can be traced."""
    rng = np.random.default_rng(3)
    u = rng.uniform(0, 1, 2 * n)
    t = rng.uniform(0, span_s, 2 * n)
    keep = u < 0.25 + 0.75 * 0.5 * (1 - np.cos(2 * np.pi * t / span_s))
    arrival = np.sort(t[keep])  # about n requests
    return Requests(arrival, np.arange(1, len(arrival) + 1, dtype=np.int64),
                    (np.arange(len(arrival), dtype=np.int64) % 500) + 1)


@pytest.mark.parametrize("scale", [0.7, 1.1, 1.5, 2.0, 3.25])
def test_the_load_scales_on_the_same_clock(scale):
    day = _day()
    out = scale_load(day, scale)
    assert len(out) == pytest.approx(scale * len(day), rel=0.03)
    # every hour holds `scale` times its requests: the curve is kept, not compressed
    hours_in = np.bincount((day.arrival_s // 3600).astype(int), minlength=24)
    hours_out = np.bincount((out.arrival_s // 3600).astype(int), minlength=24)
    assert hours_in.min() > 100
    assert np.allclose(hours_out / hours_in, scale, rtol=0.12)
    assert out.arrival_s[-1] <= day.arrival_s[-1] and out.arrival_s[0] >= 0.0


def test_copies_keep_their_originals_lengths_and_land_near_them():
    day = _day(5_000)
    out = scale_load(day, 1.3)
    # the prompt numbers each original row: a copy carries its original's row
    row = out.prompt_tokens - 1
    assert np.array_equal(out.output_tokens, day.output_tokens[row])
    assert np.all(np.abs(out.arrival_s - day.arrival_s[row]) <= LOAD_JITTER_S + 1e-9)
    counts = np.bincount(row, minlength=len(day))
    assert set(np.unique(counts)) == {1, 2}  # 1.3: each kept once, some twice
    # every original stays at its own time
    assert np.all(np.isin(day.arrival_s, out.arrival_s))


def test_a_scale_below_one_drops_rows_and_moves_none():
    day = _day(5_000)
    out = scale_load(day, 0.6)
    row = out.prompt_tokens - 1
    assert len(np.unique(row)) == len(row)
    assert np.array_equal(out.arrival_s, day.arrival_s[row])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 5000), min_size=1, max_size=200), st.floats(0.05, 4.0))
def test_the_result_is_a_sorted_table_within_the_trace(times, scale):
    arrival = np.sort(np.array(times)) - min(times)
    req = Requests(arrival, np.ones(len(arrival), dtype=np.int64),
                   np.ones(len(arrival), dtype=np.int64))
    out = scale_load(req, scale)  # Requests itself refuses unsorted or negative arrivals
    assert len(out) == 0 or out.arrival_s[-1] <= arrival[-1]
    assert len(out) >= int(scale) * len(arrival)


def test_a_trace_replays_the_same_scaled_requests_whatever_the_seed():
    spec = parse_workload({"kind": "trace", "format": "mooncake",
                           "path": "mooncake_small.jsonl", "load_scale": 1.5})
    one = build_requests(spec, np.random.default_rng(1), FIXTURES)
    two = build_requests(spec, np.random.default_rng(99), FIXTURES)
    plain = build_requests(parse_workload({"kind": "trace", "format": "mooncake",
                                           "path": "mooncake_small.jsonl"}),
                           np.random.default_rng(1), FIXTURES)
    assert np.array_equal(one.arrival_s, two.arrival_s)
    assert len(plain) < len(one) <= 2 * len(plain)
    # the copies carry their originals' prefix blocks (a copy is the same prompt)
    assert one.prefix_blocks is not None and len(one.prefix_blocks) == len(one)
