"""The traffic rebuilt from a history's histograms: lengths moved from completion back to
the first token bucket by bucket, and waits handed out so that a queue's burst comes back
as a burst."""

import numpy as np

from gpuscale.backtest.traffic import at_first_token, first_token_delays
from gpuscale.backtest.windows import HistogramWindows

STEP_S = 15.0
UPPER = np.array([1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0,
                  np.inf])
SHORT, LONG = 4, 9  # the buckets (10, 20] and (500, 1000]


def _completions(first_token_windows: range, windows: int, per_token_s: float
                 ) -> HistogramWindows:
    """Per window, 10 first tokens of 20-token answers and 10 of 1,000-token answers, seen
    by the histogram when they finish (L - 1 tokens of `per_token_s` later)."""
    counts = np.zeros((windows, len(UPPER)))
    sums = np.zeros(windows)
    for k in first_token_windows:
        for bucket, tokens in ((SHORT, 20), (LONG, 1000)):
            done = k + int((tokens - 1) * per_token_s // STEP_S)
            if done < windows:
                counts[done, bucket] += 10
                sums[done] += 10 * tokens
    return HistogramWindows(UPPER, counts, sums, counts.sum(axis=1))


def test_long_answers_move_back_further_than_short_ones():
    """A climb from window 10: the long answers finish ~7 windows after their first tokens.
    Moved back by one mean lag, the climb's first windows would get short answers only;
    bucket by bucket, each window gets its own half of long ones again."""
    seen = _completions(range(10, 30), 60, per_token_s=0.1)
    assert seen.counts[10:16, LONG].sum() == 0  # as observed: none long in the climb's start
    decode_s = 0.5 * 19 * 0.1 + 0.5 * 999 * 0.1  # the export's mean e2e less mean TTFT
    moved = at_first_token(seen, decode_s, STEP_S)
    # (The observations above sit at whole windows, the lags are not: a window's edge spills.)
    for k in range(11, 29):
        assert abs(moved.counts[k, LONG] - 10) < 0.5 and abs(moved.counts[k, SHORT] - 10) < 0.5
    assert moved.counts[:9].sum() == 0 and moved.counts[30:].sum() == 0
    assert np.isclose(moved.counts.sum(), seen.counts.sum())
    # Each answer's tokens move with it (placed in its bucket by its window's mean: these
    # answers sit on their buckets' upper ends, which a placement holds to 98 %).
    assert np.isclose(moved.sums.sum(), seen.sums.sum(), rtol=0.02)


def test_without_decode_time_nothing_moves():
    seen = _completions(range(5, 10), 20, per_token_s=0.1)
    assert at_first_token(seen, 0.0, STEP_S) is seen


def _ttft(means_s: list[float]) -> HistogramWindows:
    """Per window 20 first tokens, half at a quarter and half at twice the window's mean."""
    upper = np.array([0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, np.inf])
    counts = np.zeros((len(means_s), len(upper)))
    sums = np.zeros(len(means_s))
    for k, mean in enumerate(means_s):
        for value in (0.25 * mean, 2.0 * mean):
            counts[k, np.searchsorted(upper, value)] += 10
            sums[k] += 10 * value
    return HistogramWindows(upper, counts, sums, counts.sum(axis=1))


def _events(windows: int, rng) -> np.ndarray:
    return np.sort((np.repeat(np.arange(windows), 20) + rng.random(20 * windows)) * STEP_S)


def test_a_growing_queue_gives_the_later_first_tokens_the_longer_waits():
    rng = np.random.default_rng(3)
    hist = _ttft([0.2, 0.8, 3.0, 4.0])  # waits grow window by window: a queue building
    events = _events(4, rng)
    delays = first_token_delays(hist, np.full(4, 20), events, STEP_S, rng)
    for k in (1, 2):  # the outer halves of the first and last windows have no trend
        window = delays[20 * k:20 * (k + 1)]
        assert np.all(np.diff(window) >= 0), window
    assert np.isclose(delays.sum(), hist.sums.sum(), rtol=0.05)


def test_a_steady_queue_hands_its_waits_out_at_random():
    rng = np.random.default_rng(3)
    hist = _ttft([0.8, 0.8, 0.8])
    delays = first_token_delays(hist, np.full(3, 20), _events(3, rng), STEP_S, rng)
    assert not np.all(np.diff(delays[20:40]) >= 0)
