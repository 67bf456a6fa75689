"""Predictors on synthetic series whose next value is known by construction."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from gpuscale.autoscaling.predictors import (
    ArimaPredictor,
    ConstantPredictor,
    HoltWintersPredictor,
    MovingAveragePredictor,
    predict,
)

frac = st.floats(0.05, 1.0)
level = st.floats(0.0, 1000.0)
slope = st.floats(-5.0, 20.0)


def line(a: float, b: float, n: int) -> list[float]:
    return [a + b * t for t in range(n)]


def test_constant_is_the_last_value_and_moving_average_the_window_mean():
    series = [1.0, 5.0, 2.0, 8.0]
    assert predict(ConstantPredictor(), series) == 8.0
    assert predict(MovingAveragePredictor(window_points=2), series) == 5.0
    assert (
        predict(MovingAveragePredictor(window_points=10), series) == 4.0
    )  # fewer points: all of them


def test_empty_history_forecasts_zero_and_counts_never_go_negative():
    assert predict(ArimaPredictor(), []) == 0.0
    falling = line(50.0, -10.0, 8)  # next is -30
    assert predict(ArimaPredictor(), falling) == 0.0
    assert predict(HoltWintersPredictor(), falling) == 0.0


@given(a=level, b=slope, alpha=frac, beta=frac, n=st.integers(2, 40))
def test_holt_forecasts_a_line_exactly_for_any_smoothing(a, b, alpha, beta, n):
    series = line(a, b, n)
    expected = a + b * n
    got = predict(HoltWintersPredictor(alpha=alpha, beta=beta), series)
    assert got == pytest.approx(max(0.0, expected), rel=1e-9, abs=1e-6)


@settings(max_examples=50)
@given(a=st.floats(100.0, 1000.0), b=st.floats(-1.0, 5.0), alpha=frac, beta=frac, gamma=frac,
       m=st.integers(2, 12), seasons=st.integers(2, 5), extra=st.integers(0, 11),
       amplitude=st.floats(0.0, 50.0))
def test_holt_winters_forecasts_trend_plus_season_exactly(
    a, b, alpha, beta, gamma, m, seasons, extra, amplitude
):
    pattern = [amplitude * math.sin(2 * math.pi * i / m) for i in range(m)]
    mean = sum(pattern) / m
    pattern = [p - mean for p in pattern]  # the additive form assumes zero-mean seasonals
    n = seasons * m + extra
    series = [a + b * t + pattern[t % m] for t in range(n)]
    expected = a + b * n + pattern[n % m]
    got = predict(
        HoltWintersPredictor(alpha=alpha, beta=beta, gamma=gamma, season_points=m), series
    )
    assert got == pytest.approx(expected, rel=1e-7, abs=1e-6)


def test_holt_winters_without_two_seasons_falls_back_to_double_smoothing():
    series = line(10.0, 2.0, 5)
    assert predict(HoltWintersPredictor(season_points=4), series) == pytest.approx(20.0)


def test_a_season_the_double_form_cannot_see_is_caught_by_the_triple_form():
    pattern = [0.0, 30.0, 0.0, -30.0]
    series = [100.0 + pattern[t % 4] for t in range(16)]  # next is 100 + pattern[0] = 100
    triple = predict(HoltWintersPredictor(season_points=4), series)
    double = predict(HoltWintersPredictor(), series)
    assert triple == pytest.approx(100.0)
    assert abs(double - 100.0) > 5.0


@given(a=level, b=slope, n=st.integers(6, 40), p=st.integers(1, 2))
def test_arima_on_differences_continues_a_line(a, b, n, p):
    spec = ArimaPredictor(ar_order=p, difference=1, min_points=2 * p + 2)
    assert predict(spec, line(a, b, n)) == pytest.approx(max(0.0, a + b * n), rel=1e-7, abs=1e-6)


@given(omega=st.floats(0.2, 2.5), offset=st.floats(50.0, 200.0), n=st.integers(8, 40))
def test_ar2_on_levels_continues_a_sinusoid(omega, offset, n):
    # x_t = c + 2 cos(w) x_{t-1} - x_{t-2} holds exactly for an offset sinusoid: AR(2) with
    # intercept.
    series = [offset + 10.0 * math.sin(omega * t) for t in range(n)]
    expected = offset + 10.0 * math.sin(omega * n)
    spec = ArimaPredictor(ar_order=2, difference=0, min_points=5)
    assert predict(spec, series) == pytest.approx(expected, abs=1e-5)


def test_arima_warms_up_on_the_constant_predictor():
    spec = ArimaPredictor(min_points=7)
    assert predict(spec, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) == 6.0  # 6 points < 7: last value
    assert predict(spec, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]) == pytest.approx(8.0)


def test_arima_needs_enough_points_for_its_order():
    with pytest.raises(ValidationError, match="min_points"):
        ArimaPredictor(ar_order=4, difference=1, min_points=9)  # needs 2 x 4 + 1 + 1 = 10
