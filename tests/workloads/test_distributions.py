"""Token-length distributions: caps, spread parameters, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from gpuscale.workloads.distributions import (
    EmpiricalTokens,
    FixedTokens,
    LognormalTokens,
    TokenDistribution,
    UniformTokens,
)

ADAPTER = TypeAdapter(TokenDistribution)
caps = st.tuples(st.integers(1, 5000), st.integers(0, 5000)).map(lambda t: (t[0], t[0] + t[1]))


@settings(max_examples=60, deadline=None)
@given(
    median=st.floats(1, 6000),
    sigma=st.floats(0.01, 4),
    bounds=caps,
    seed=st.integers(0, 2**32),
)
def test_lognormal_draws_stay_within_caps(median, sigma, bounds, seed):
    lo, hi = bounds
    if not lo <= median <= hi:
        # A cap on the wrong side of the median would set most draws to it (issue 30).
        with pytest.raises(ValidationError, match="median length"):
            LognormalTokens(median_tokens=median, sigma=sigma, min_tokens=lo, max_tokens=hi)
        return
    dist = LognormalTokens(median_tokens=median, sigma=sigma, min_tokens=lo, max_tokens=hi)
    out = dist.sample(np.random.default_rng(seed), 500)
    assert out.dtype == np.int64 and len(out) == 500
    assert out.min() >= lo and out.max() <= hi


@settings(max_examples=40, deadline=None)
@given(low=st.integers(1, 1000), width=st.integers(0, 1000), seed=st.integers(0, 2**32))
def test_uniform_covers_both_ends_and_nothing_else(low, width, seed):
    dist = UniformTokens(low=low, high=low + width)
    out = dist.sample(np.random.default_rng(seed), 4000)
    assert out.min() >= low and out.max() <= low + width
    if width <= 3:  # with 4,000 draws every value of a tiny range appears
        assert set(out.tolist()) == set(range(low, low + width + 1))


def test_lognormal_p90_parameter_gives_that_percentile():
    dist = LognormalTokens(median_tokens=1020, p90_tokens=2735)
    out = dist.sample(np.random.default_rng(7), 200_000)
    # The median and p90 of 200k draws sit within ~1 % of the asked ones; rounding adds <1 token.
    assert np.percentile(out, 50) == pytest.approx(1020, rel=0.02)
    assert np.percentile(out, 90) == pytest.approx(2735, rel=0.02)
    assert dist.sigma_value == pytest.approx(math.log(2735 / 1020) / 1.2815515655446004)


def test_caps_clip_only_at_the_named_values():
    # Without caps a lognormal with sigma 3 spans far beyond [50, 500]; with them, the caps
    # themselves become point masses and nothing lies outside.
    dist = LognormalTokens(median_tokens=200, sigma=3, min_tokens=50, max_tokens=500)
    out = dist.sample(np.random.default_rng(3), 10_000)
    assert (out == 50).mean() > 0.2 and (out == 500).mean() > 0.2
    assert ((out > 50) & (out < 500)).any()


def test_fixed_and_empirical():
    rng = np.random.default_rng(0)
    assert set(FixedTokens(value=1_000_000).sample(rng, 5).tolist()) == {1_000_000}
    out = EmpiricalTokens(values=[3, 3, 10]).sample(rng, 30_000)
    assert set(out.tolist()) == {3, 10}
    assert (out == 3).mean() == pytest.approx(2 / 3, abs=0.02)  # with replacement, by weight
    capped = EmpiricalTokens(values=[3, 3, 10], max_tokens=5).sample(rng, 100)
    assert set(capped.tolist()) <= {3, 5}
    # A cap below the median (6.5 of [3, 10]) would set half the draws to it: refused.
    with pytest.raises(ValidationError, match="below the median length"):
        EmpiricalTokens(values=[3, 10], max_tokens=5)


def test_huge_sigma_does_not_overflow_int64():
    from gpuscale.workloads.distributions import DEFAULT_CEILING_TOKENS, MAX_SIGMA

    out = LognormalTokens(median_tokens=1e6, sigma=MAX_SIGMA).sample(np.random.default_rng(1), 1000)
    assert out.min() >= 1 and out.max() <= DEFAULT_CEILING_TOKENS


@pytest.mark.parametrize(
    "data, message",
    [
        ({"kind": "lognormal", "median_tokens": 10}, "exactly one of sigma or p90_tokens"),
        ({"kind": "lognormal", "median_tokens": 10, "sigma": 1, "p90_tokens": 20}, "exactly one"),
        ({"kind": "lognormal", "median_tokens": 10, "p90_tokens": 5}, "must be > median_tokens"),
        ({"kind": "uniform", "low": 10, "high": 5}, "must be >= low"),
        ({"kind": "fixed", "value": 5, "min_tokens": 9, "max_tokens": 3}, "must be >= min_tokens"),
        ({"kind": "fixed", "value": 0}, "greater than or equal to 1"),
        ({"kind": "empirical", "values": []}, "at least 1"),
        ({"kind": "zipf", "value": 3}, "does not match any of the expected tags"),
        ({"kind": "fixed", "value": 3, "cap": 4}, "Extra inputs are not permitted"),
    ],
)
def test_invalid_params_are_rejected_with_a_reason(data, message):
    with pytest.raises(ValidationError, match=message):
        ADAPTER.validate_python(data)
