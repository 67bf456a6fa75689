"""Draws from a histogram's buckets: inside their buckets, in the buckets' proportions, with
the histogram's own mean."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.backtest import buckets

UPPER = np.array([1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0,
                  5000.0, np.inf])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=40), min_size=len(UPPER),
                max_size=len(UPPER)).filter(lambda c: sum(c[:-1]) > 0),
       st.floats(min_value=0.05, max_value=0.95), st.integers(0, 2**32 - 1))
def test_draws_keep_buckets_and_mean(counts, where, seed):
    counts = np.array(counts[:-1] + [0], dtype=float)
    low, high = buckets.bucket_edges(UPPER)
    # A mean the buckets can hold: each observation `where` across its bucket.
    mean = float((counts * (low + where * (high - low))).sum() / counts.sum())
    n = int(counts.sum()) * 20
    values = buckets.draw(counts, UPPER, mean, n, np.random.default_rng(seed))
    which = np.searchsorted(UPPER, values, side="left")
    assert np.allclose(np.bincount(which, minlength=len(UPPER)) / n, counts / counts.sum(),
                       atol=1.0 / n + 1e-12)  # stratified: the proportions, not just near
    share = buckets.mean_share(counts, low, high, mean)
    if buckets.MAX_TILT > share > 1 - buckets.MAX_TILT:
        spread = float((counts * (high - low)).sum() / counts.sum())
        assert abs(values.mean() - mean) < 0.05 * spread + 1e-9


def test_token_draws_are_whole_and_inside_their_buckets():
    counts = np.array([0, 0, 0, 0, 0, 0, 0, 0, 3, 5, 2, 0, 0], dtype=float)
    values = buckets.draw_tokens(counts, UPPER, 900.0, 1000, np.random.default_rng(0))
    assert values.dtype == np.int64 and values.min() > 200 and values.max() <= 2000
    assert abs(values.mean() - 900.0) < 25.0


def test_without_spread_a_bucket_holds_one_value():
    counts = np.array([0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0], dtype=float)  # all in (10, 20]
    values = buckets.draw(counts, UPPER, 13.0, 10, np.random.default_rng(1), spread=False)
    assert np.allclose(values, 13.0)


def test_share_at_most_interpolates_within_the_bucket():
    counts = np.array([0, 0, 0, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0], dtype=float)
    assert buckets.share_at_most(counts, UPPER, 15.0) == 0.75  # half of (10, 20]
    assert buckets.share_at_most(np.zeros(len(UPPER)), UPPER, 1.0) is None


@pytest.mark.parametrize("truth", ["lognormal", "exponential", "pareto"])
def test_a_smooth_distribution_is_drawn_back_from_its_buckets(truth):
    """Lengths drawn from vLLM's 1-2-5 token buckets and their _sum keep the distribution's
    spread and quantiles (one uniform shape tilted to the mean overstated the variance by a
    quarter on lognormal lengths)."""
    rng = np.random.default_rng(7)
    values = {"lognormal": lambda: rng.lognormal(np.log(180), 0.6, 50_000),
              "exponential": lambda: rng.exponential(300, 50_000),
              "pareto": lambda: 50 * (1 + rng.pareto(1.5, 50_000))}[truth]()
    values = np.clip(np.ceil(values), 1, 4000)
    counts = np.bincount(np.searchsorted(UPPER, values, side="left"),
                         minlength=len(UPPER)).astype(float)
    drawn = buckets.draw_tokens(counts, UPPER, float(values.mean()), len(values), rng)
    assert abs(drawn.var() / values.var() - 1) < 0.06
    both = np.sort(np.concatenate([values, drawn]))
    ks = np.abs(np.searchsorted(np.sort(values), both, side="right")
                - np.searchsorted(np.sort(drawn), both, side="right")).max() / len(values)
    assert ks < 0.02
