"""Trace replay: window, rate_scale, repeat and max_requests semantics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.errors import UserInputError
from gpuscale.workloads import build_requests, parse_workload
from gpuscale.workloads.base import Requests
from gpuscale.workloads.replay import scale_rate, tile, trace_period_s, window

FIXTURES = Path(__file__).parent / "fixtures"
RNG = np.random.default_rng(0)


def replay(base_dir: Path = FIXTURES, **fields) -> Requests:
    spec = parse_workload({"kind": "trace", **fields})
    return build_requests(spec, RNG, base_dir)


tables = st.lists(st.floats(0, 1000), min_size=2, max_size=60).map(
    lambda xs: Requests(
        np.sort(np.array(xs)) - min(xs),
        np.arange(1, len(xs) + 1, dtype=np.int64),
        np.ones(len(xs), dtype=np.int64),
    )
)


@settings(max_examples=100, deadline=None)
@given(req=tables, start=st.floats(0, 1000), length=st.floats(0.01, 1000) | st.none())
def test_window_keeps_exactly_the_requests_inside_shifted_to_its_start(req, start, length):
    end = None if length is None else start + length
    cut = window(req, start, end)
    inside = (req.arrival_s >= start) & (True if end is None else req.arrival_s < end)
    assert len(cut) == np.count_nonzero(inside)
    assert np.allclose(cut.arrival_s, req.arrival_s[inside] - start)
    assert np.array_equal(cut.prompt_tokens, req.prompt_tokens[inside])


@settings(max_examples=100, deadline=None)
@given(req=tables, scale=st.floats(0.01, 100))
def test_rate_scale_divides_times_and_multiplies_the_rate(req, scale):
    fast = scale_rate(req, scale)
    assert len(fast) == len(req) and np.allclose(fast.arrival_s * scale, req.arrival_s)
    assert np.array_equal(fast.prompt_tokens, req.prompt_tokens)
    if req.span_s > 0:
        assert (len(fast) / fast.span_s) == pytest.approx(scale * len(req) / req.span_s)


@settings(max_examples=100, deadline=None)
@given(req=tables, repeat=st.integers(1, 7))
def test_tiling_by_the_trace_period_stays_sorted_and_keeps_the_mean_rate(req, repeat):
    period = trace_period_s(req)
    tiled = tile(req, repeat, period)
    assert len(tiled) == repeat * len(req)
    assert np.all(np.diff(tiled.arrival_s) >= 0)
    # Copy k is the original shifted by k periods.
    k = repeat - 1
    assert np.allclose(tiled.arrival_s[k * len(req):], req.arrival_s + k * period)
    # One mean gap past the last request is where the next copy starts.
    if req.span_s > 0:
        assert period == pytest.approx(req.span_s + req.span_s / (len(req) - 1))


def test_trace_spec_reads_relative_to_base_dir_and_windows():
    full = replay(format="generic", path="generic_ties.csv")
    assert full.arrival_s.tolist() == [0.0, 0.5, 0.5, 2.25]
    cut = replay(format="generic", path="generic_ties.csv", start_s=0.5, end_s=2.25)
    assert cut.arrival_s.tolist() == [0.0, 0.0] and cut.prompt_tokens.tolist() == [2000, 7]


def test_trace_spec_repeat_then_rate_scale_then_max_requests():
    # Trace 0, 0.5, 0.5, 2.25: period = 2.25 + 2.25/3 = 3.0 s.
    out = replay(format="generic", path="generic_ties.csv", repeat=3, rate_scale=2.0)
    expected = np.concatenate([np.array([0.0, 0.5, 0.5, 2.25]) + 3.0 * k for k in range(3)]) / 2
    assert np.allclose(out.arrival_s, expected)
    head = replay(format="generic", path="generic_ties.csv", repeat=3, max_requests=5)
    assert len(head) == 5 and head.arrival_s[-1] == pytest.approx(3.0)


def test_repeat_of_a_window_tiles_by_the_window_length():
    out = replay(format="generic", path="generic_ties.csv", end_s=1.0, repeat=2)
    assert out.arrival_s.tolist() == [0.0, 0.5, 0.5, 1.0, 1.5, 1.5]


def test_burstgpt_options_reach_the_reader():
    out = replay(format="burstgpt", path=str(FIXTURES / "burstgpt_release3.csv"), model="GPT-4")
    assert out.prompt_tokens.tolist() == [417, 900]


@pytest.mark.parametrize(
    "fields, message",
    [
        (
            {"format": "generic", "path": "x.csv", "model": "GPT-4"},
            "model only apply to format burstgpt",
        ),
        ({"format": "azure", "path": "x.csv", "drop_failed": False}, "drop_failed only apply"),
        (
            {"format": "generic", "path": "x.csv", "start_s": 5, "end_s": 5},
            r"end_s \(5.0\) must be > start_s",
        ),
        ({"format": "generic", "path": "x.csv", "rate_scale": 0}, "greater than 0"),
        ({"format": "generic", "path": "x.csv", "repeat": 0}, "greater than or equal to 1"),
        ({"format": "csv", "path": "x.csv"}, "'azure', 'generic', 'mooncake' or 'burstgpt'"),
    ],
)
def test_trace_spec_validation(fields, message):
    with pytest.raises(ValueError, match=message):
        parse_workload({"kind": "trace", **fields})


def test_empty_window_and_missing_file_are_user_errors(tmp_path):
    message = r"window \[100, end\) s holds no request; the trace spans 2.25 s"
    with pytest.raises(UserInputError, match=message):
        replay(format="generic", path="generic_ties.csv", start_s=100)
    with pytest.raises(UserInputError, match="trace file not found"):
        replay(base_dir=tmp_path, format="azure", path="AzureLLMInferenceTrace_conv.csv")


@pytest.mark.parametrize("fields", [{"repeat": 3, "rate_scale": 7.3},
                                    {"rate_scale": 0.37, "start_s": 1.0},
                                    {"repeat": 2, "rate_scale": 3.0, "max_requests": 7}])
def test_replay_is_window_tile_scale_head_bit_for_bit(fields):
    # generate() divides its own tiled array in place: the same quotients as scale_rate on the
    # table tiled the documented way, and the trace as read is left as it was.
    spec = parse_workload({"kind": "trace", "format": "azure", "path": "azure_midnight.csv",
                           **fields})
    full = spec.read(FIXTURES)
    kept = full.arrival_s.copy()
    cut = window(full, spec.start_s, spec.end_s)
    if spec.repeat > 1:
        cut = tile(cut, spec.repeat, trace_period_s(full) - spec.start_s)
    want = scale_rate(cut, spec.rate_scale).take(slice(0, spec.max_requests))
    got = build_requests(spec, RNG, FIXTURES)
    assert got.arrival_s.tobytes() == want.arrival_s.tobytes()
    assert got.prompt_tokens.tobytes() == want.prompt_tokens.tobytes()
    assert full.arrival_s.tobytes() == kept.tobytes()
