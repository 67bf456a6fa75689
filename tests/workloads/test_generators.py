"""Synthetic generators: invariants (hypothesis) and statistics with stated tolerances.

Statistical checks use 5-sigma bounds (or wider) so they fail on a wrong process, not on luck.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.errors import UserInputError
from gpuscale.workloads import build_requests, parse_workload
from gpuscale.workloads.arrivals import diurnal_rate_per_s

HERE = Path(__file__).parent
LENGTHS = {
    "prompt_tokens": {"kind": "uniform", "low": 5, "high": 50, "max_tokens": 40},
    "output_tokens": {"kind": "lognormal", "median_tokens": 100, "sigma": 1, "min_tokens": 2},
}


def build(data: dict, seed: int = 0):
    return build_requests(parse_workload(data), np.random.default_rng(seed), HERE)


rates = st.floats(0.05, 50)
durations = st.floats(1, 2000)
specs = st.one_of(
    st.builds(lambda r, d: {"kind": "poisson", "rate_per_s": r, "duration_s": d}, rates, durations),
    st.builds(
        lambda r, c, d: {"kind": "bursty", "rate_per_s": r, "cv": c, "duration_s": d},
        rates,
        st.floats(0.2, 8),
        durations,
    ),
    st.builds(
        lambda ph, d: {
            "kind": "piecewise",
            "phases": [{"duration_s": a, "rate_per_s": b} for a, b in ph],
            "duration_s": d,
        },
        st.lists(st.tuples(st.floats(1, 300), st.floats(0, 20)), min_size=1, max_size=4),
        st.none() | durations,
    ),
    st.builds(
        lambda lo, extra, p, d: {
            "kind": "diurnal",
            "min_rate_per_s": lo,
            "max_rate_per_s": lo + extra,
            "period_s": p,
            "duration_s": d,
        },
        st.floats(0, 10),
        st.floats(0.1, 20),
        st.floats(10, 5000),
        durations,
    ),
    st.builds(
        lambda at, n, sp: {"kind": "long_prompt_spike", "at_s": at, "count": n, "spread_s": sp},
        st.floats(0, 1e5),
        st.integers(1, 50),
        st.floats(0, 600),
    ),
)


def _horizon_s(data: dict) -> float:
    if data["kind"] == "long_prompt_spike":
        return data["at_s"] + data["spread_s"]
    if data["kind"] == "piecewise" and data["duration_s"] is None:
        return sum(p["duration_s"] for p in data["phases"])
    return data["duration_s"]


@settings(max_examples=80, deadline=None)
@given(spec=specs, seed=st.integers(0, 2**32))
def test_every_generator_returns_a_valid_sorted_table_within_its_horizon(spec, seed):
    data = {**spec, **LENGTHS}
    if spec["kind"] == "long_prompt_spike":
        data["prompt_tokens"] = {"kind": "fixed", "value": 1_000_000}
    req = build(data, seed)
    assert req.arrival_s.dtype == np.float64 and req.prompt_tokens.dtype == np.int64
    assert np.all(np.diff(req.arrival_s) >= 0)
    assert len(req.prompt_tokens) == len(req.output_tokens) == len(req)
    if len(req):
        assert req.arrival_s[0] >= 0 and req.arrival_s[-1] <= _horizon_s(spec)
        assert req.output_tokens.min() >= 2
        if spec["kind"] == "long_prompt_spike":
            assert len(req) == spec["count"] and set(req.prompt_tokens.tolist()) == {1_000_000}
            assert req.arrival_s[0] >= spec["at_s"]
        else:
            assert req.prompt_tokens.min() >= 5 and req.prompt_tokens.max() <= 40


@settings(max_examples=25, deadline=None)
@given(spec=specs, seed=st.integers(0, 2**32))
def test_same_seed_same_table_other_seed_other_table(spec, seed):
    data = dict(spec)
    if spec["kind"] == "long_prompt_spike":
        data["prompt_tokens"] = {"kind": "fixed", "value": 9}
    a, b, c = build(data, seed), build(data, seed), build(data, seed + 1)
    assert np.array_equal(a.arrival_s, b.arrival_s)
    assert np.array_equal(a.output_tokens, b.output_tokens)
    if len(a) > 5 and len(c) > 5 and a.span_s > 0:
        same = len(a) == len(c) and np.array_equal(a.arrival_s, c.arrival_s)
        assert not same


@settings(max_examples=10, deadline=None)
@given(rate=st.floats(5, 200), seed=st.integers(0, 2**32))
def test_poisson_mean_rate_and_exponential_gaps(rate, seed):
    duration = 50_000 / rate  # ~50k expected requests
    req = build({"kind": "poisson", "rate_per_s": rate, "duration_s": duration}, seed)
    expected = rate * duration
    assert abs(len(req) - expected) < 5 * math.sqrt(expected)
    gaps = np.diff(req.arrival_s)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.03)  # exponential: CV 1


@settings(max_examples=10, deadline=None)
@given(cv=st.floats(0.3, 4), seed=st.integers(0, 2**32))
def test_bursty_gaps_have_the_requested_cv_and_mean_rate(cv, seed):
    rate = 20.0
    req = build({"kind": "bursty", "rate_per_s": rate, "cv": cv, "duration_s": 5_000}, seed)
    gaps = np.diff(np.concatenate([[0.0], req.arrival_s]))
    # Sample CV of 100k gamma gaps: relative error ~ sqrt((6 cv^2 + 2) / n) / 2 < 2 % here.
    assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.1)
    assert len(req) / 5_000 == pytest.approx(rate, rel=0.05 + 0.01 * cv)


def test_piecewise_counts_per_phase_and_cycling():
    phases = [
        {"name": "quiet", "duration_s": 600, "rate_per_s": 2},
        {"name": "burst", "duration_s": 120, "rate_per_s": 40},
        {"name": "idle", "duration_s": 60, "rate_per_s": 0},
        {"name": "tail", "duration_s": 300, "rate_per_s": 5},
    ]
    # 2.5 cycles: the last cycle stops inside the burst phase after 1080 * 2 + 660 s.
    req = build({"kind": "piecewise", "phases": phases, "duration_s": 1080 * 2.5}, seed=4)
    edges = np.cumsum([0] + [p["duration_s"] for p in phases])
    for cycle in range(3):
        for i, p in enumerate(phases):
            lo = cycle * 1080 + edges[i]
            hi = min(cycle * 1080 + edges[i + 1], 2700)
            if lo >= 2700:
                continue
            got = np.count_nonzero((req.arrival_s >= lo) & (req.arrival_s < hi))
            mean = p["rate_per_s"] * (hi - lo)
            assert abs(got - mean) <= 5 * math.sqrt(mean), (cycle, p["name"])
    assert req.arrival_s[-1] < 2700


@settings(max_examples=8, deadline=None)
@given(peak_frac=st.floats(0, 1), seed=st.integers(0, 2**32))
def test_diurnal_rate_peaks_at_the_requested_phase(peak_frac, seed):
    period = 1000.0
    spec = {
        "kind": "diurnal",
        "min_rate_per_s": 10,
        "max_rate_per_s": 90,
        "period_s": period,
        "peak_at_s": peak_frac * period,
        "duration_s": 2 * period,
    }
    req = build(spec, seed)
    # The angle of the first Fourier coefficient of the arrival times is the peak's phase.
    angle = np.angle(np.exp(2j * np.pi * req.arrival_s / period).sum())
    measured = (angle / (2 * np.pi)) % 1.0
    assert min(abs(measured - peak_frac), 1 - abs(measured - peak_frac)) < 0.01
    # Counts near the peak and near the trough follow the rate there (max 90, min 10 per s).
    phase = ((req.arrival_s - peak_frac * period) / period) % 1.0  # 0 = peak, 0.5 = trough
    near_peak = np.count_nonzero(np.minimum(phase, 1 - phase) < 0.01)
    near_trough = np.count_nonzero(np.abs(phase - 0.5) < 0.01)
    assert near_peak / near_trough == pytest.approx(9.0, rel=0.3)


def test_diurnal_default_starts_at_the_trough():
    spec = parse_workload(
        {"kind": "diurnal", "min_rate_per_s": 1, "max_rate_per_s": 5, "duration_s": 10}
    )
    assert spec.peak_s == 43_200
    assert diurnal_rate_per_s(np.array([0.0, 43_200.0]), 1, 5, 86_400, 43_200).tolist() == [1, 5]


def test_mix_merges_parts_and_appending_a_part_keeps_the_first():
    base = {"kind": "poisson", "rate_per_s": 3, "duration_s": 200}
    spike = {
        "kind": "long_prompt_spike",
        "at_s": 100,
        "count": 4,
        "spread_s": 1,
        "prompt_tokens": {"kind": "fixed", "value": 1_000_000},
    }
    alone = build({"kind": "mix", "parts": [base]}, seed=9)
    both = build({"kind": "mix", "parts": [base, spike]}, seed=9)
    assert len(both) == len(alone) + 4
    long = both.prompt_tokens == 1_000_000
    assert np.all((both.arrival_s[long] >= 100) & (both.arrival_s[long] <= 101))
    assert np.array_equal(both.arrival_s[~long], alone.arrival_s)


@pytest.mark.parametrize(
    "data, message",
    [
        ({"kind": "poisson", "rate_per_s": 0, "duration_s": 10}, "greater than 0"),
        ({"kind": "poisson", "rate_per_s": 1, "duration_s": -1}, "greater than 0"),
        ({"kind": "bursty", "rate_per_s": 1, "cv": 0, "duration_s": 1}, "greater than 0"),
        ({"kind": "piecewise", "phases": []}, "at least 1"),
        (
            {"kind": "diurnal", "min_rate_per_s": 5, "max_rate_per_s": 1, "duration_s": 9},
            r"max_rate_per_s \(1.0\) must be >= min_rate_per_s \(5.0\)",
        ),
        ({"kind": "long_prompt_spike", "at_s": 0, "count": 1}, "prompt_tokens"),
        ({"kind": "mix", "parts": [{"kind": "poisson"}]}, "rate_per_s"),
        ({"kind": "steady", "rate_per_s": 1}, "does not match any of the expected tags"),
    ],
)
def test_bad_specs_fail_validation_with_the_field_named(data, message):
    with pytest.raises(ValueError, match=message):
        parse_workload(data)


def test_absurd_volume_is_refused_before_allocating():
    with pytest.raises(UserInputError, match="means about 86,400,000,000 requests"):
        build({"kind": "poisson", "rate_per_s": 1e6, "duration_s": 86_400})


DOCS = Path(__file__).resolve().parents[2] / "docs" / "workloads.md"


def test_yaml_examples_in_the_docs_parse_and_build():
    blocks = re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), flags=re.S)
    assert len(blocks) >= 4
    for block in blocks:
        spec = parse_workload(yaml.safe_load(block)["workload"])
        assert parse_workload(spec.model_dump()) == spec  # dump -> load round trip
        if spec.kind != "trace":  # the trace example points at a file outside the repo
            assert len(build_requests(spec, np.random.default_rng(0), HERE)) > 0
