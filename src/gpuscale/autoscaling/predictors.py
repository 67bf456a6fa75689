"""Load predictors for the SLA planner: forecast the next interval's value from a short history.

NVIDIA Dynamo's planner predicts the next adjustment interval's request count, mean ISL and mean
OSL with a named predictor (constant, ARIMA, Prophet, Kalman) and uses the constant (last value)
predictor while the others warm up (reference layer3-replica-autoscaling.md 5.1, 5.2). Here:

- `constant`: the last value;
- `moving_average`: the mean of the last `window_points` values;
- `holt_winters`: additive exponential smoothing, double (level + trend) or triple (+ season);
- `arima`: ARIMA-*like*: an AR(p) model with intercept fitted by least squares on the history,
  optionally on first differences (d = 1). No MA terms and no model selection, so it is not
  statsmodels' or pmdarima's ARIMA; it captures trends and short cycles, which is what the
  planner needs from it.

Each predictor is a pure function of a tuple of floats; the caller keeps the (bounded) history.
Forecasts are floored at 0 because every predicted quantity (requests, tokens) is a count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Predictor(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ConstantPredictor(_Predictor):
    """Next = last observed value (Dynamo's `constant`, also its warm-up fallback)."""

    kind: Literal["constant"] = "constant"


class MovingAveragePredictor(_Predictor):
    """Next = mean of the last `window_points` observations."""

    kind: Literal["moving_average"] = "moving_average"
    window_points: int = Field(default=3, ge=1, description=(
        "Observations averaged (one per adjustment interval); 3 smooths one noisy interval "
        "without lagging a ramp by more than one interval."))


class HoltWintersPredictor(_Predictor):
    """Additive Holt(-Winters) smoothing; `season_points` unset = double smoothing (no season)."""

    kind: Literal["holt_winters"] = "holt_winters"
    alpha: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="Level smoothing (0..1]; 0.5 follows a change in ~2 intervals.",
    )
    beta: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description="Trend smoothing [0..1]; 0.3 damps interval-to-interval noise.",
    )
    gamma: float = Field(
        default=0.3, ge=0, le=1, description="Season smoothing [0..1]; used only with a season."
    )
    season_points: int | None = Field(default=None, ge=2, description=(
        "Season length in observations (e.g. 480 for a day of 180-s intervals); unset = no season. "
        "Needs two full seasons of history before the seasonal form is used."))


class ArimaPredictor(_Predictor):
    """ARIMA-like: AR(`ar_order`) with intercept, least squares, on differenced data.

    The series is differenced `difference` times before the fit."""

    kind: Literal["arima"] = "arima"
    ar_order: int = Field(
        default=2, ge=1, le=10, description="AR lags p; 2 fits a trend or one cycle."
    )
    difference: Literal[0, 1] = Field(
        default=1, description="d: 1 models changes (follows ramps), 0 levels."
    )
    min_points: int = Field(default=6, ge=2, description=(
        "History needed before fitting; fewer falls back to `constant`, as Dynamo warms up "
        "(reference 5.2). 6 = the fewest that determine AR(2) with intercept on differences: "
        "2p + 1 + d."))

    @model_validator(mode="after")
    def _enough_points(self) -> ArimaPredictor:
        # p lags + intercept need p + 1 rows, each row needs p earlier values, d costs d points.
        need = 2 * self.ar_order + 1 + self.difference
        if self.min_points < need:
            raise ValueError(
                f"min_points {self.min_points} < {need} needed to fit AR({self.ar_order}) with "
                f"d={self.difference}"
            )
        return self


PredictorSpec = Annotated[
    ConstantPredictor | MovingAveragePredictor | HoltWintersPredictor | ArimaPredictor,
    Field(discriminator="kind"),
]


def predict_constant(history: Sequence[float]) -> float:
    return float(history[-1])


def predict_moving_average(history: Sequence[float], window_points: int) -> float:
    tail = history[-window_points:]
    return float(sum(tail) / len(tail))


def predict_holt(history: Sequence[float], alpha: float, beta: float) -> float:
    """Double exponential smoothing; level starts at x0 and trend at x1 - x0, so a straight
    line is forecast exactly whatever alpha and beta are."""
    if len(history) < 2:
        return predict_constant(history)
    level, trend = float(history[0]), float(history[1] - history[0])
    for x in history[1:]:
        prev = level
        level = alpha * x + (1 - alpha) * (level + trend)
        trend = beta * (level - prev) + (1 - beta) * trend
    return level + trend


def predict_holt_winters(
    history: Sequence[float], alpha: float, beta: float, gamma: float, season_points: int
) -> float:
    """Triple (additive) smoothing. Initialised from the first two seasons so that a line plus a
    zero-mean periodic pattern is forecast exactly: trend = (mean of season 2 - mean of season 1)
    / m, level at the end of season 1 = its mean + trend (m - 1) / 2, seasonals = x_i - level
    line."""
    m = season_points
    if len(history) < 2 * m:
        return predict_holt(history, alpha, beta)
    x = np.asarray(history, dtype=float)
    first, second = x[:m].mean(), x[m : 2 * m].mean()
    trend = (second - first) / m
    level = first + trend * (m - 1) / 2.0
    season = [float(x[i] - (level - (m - 1 - i) * trend)) for i in range(m)]
    for t in range(m, len(x)):
        s = season[t % m]
        prev = level
        level = alpha * (x[t] - s) + (1 - alpha) * (level + trend)
        trend = beta * (level - prev) + (1 - beta) * trend
        season[t % m] = gamma * (x[t] - level) + (1 - gamma) * s
    return float(level + trend + season[len(x) % m])


def predict_ar(history: Sequence[float], ar_order: int, difference: int) -> float:
    """Fit x_t = c + sum_k phi_k x_{t-k} by least squares (on differences when d = 1), forecast
    one step.

    numpy's lstsq returns the minimum-norm solution when the lags are collinear (a straight
    line), which still reproduces any series the model can fit exactly.
    """
    x = np.asarray(history, dtype=float)
    y = np.diff(x) if difference else x
    p = ar_order
    if len(y) < p + 1:
        return predict_constant(history)
    rows = np.column_stack([np.ones(len(y) - p)] + [y[p - k : len(y) - k] for k in range(1, p + 1)])
    coef, *_ = np.linalg.lstsq(rows, y[p:], rcond=None)
    latest = np.concatenate(([1.0], y[::-1][:p]))
    step = float(latest @ coef)
    return float(x[-1] + step) if difference else step


def predict(
    spec: ConstantPredictor | MovingAveragePredictor | HoltWintersPredictor | ArimaPredictor,
    history: Sequence[float],
) -> float:
    """Forecast the next value of `history` (oldest first) with `spec`; 0 for an empty history."""
    if not history:
        return 0.0
    if isinstance(spec, MovingAveragePredictor):
        value = predict_moving_average(history, spec.window_points)
    elif isinstance(spec, HoltWintersPredictor):
        if spec.season_points is None:
            value = predict_holt(history, spec.alpha, spec.beta)
        else:
            value = predict_holt_winters(
                history, spec.alpha, spec.beta, spec.gamma, spec.season_points
            )
    elif isinstance(spec, ArimaPredictor):
        if len(history) < spec.min_points:
            value = predict_constant(history)
        else:
            value = predict_ar(history, spec.ar_order, spec.difference)
    else:
        value = predict_constant(history)
    return max(0.0, value)
