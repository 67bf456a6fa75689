"""Fit a deployment's host time and efficiency factors to the user's own measurements.

Inputs (`read_points` tells them apart by shape): vLLM `bench serve` result JSON
(calibration/fit_bench.py: each point replayed through the real engine) and a Prometheus
range-query export of the server's histograms and gauges (calibration/fit_prometheus.py: one
point per step window, predicted by the step-time model).

Fitted, where the points identify them: `hbm_efficiency` (decode steps stream the weights and
the KV cache), `compute_efficiency` (prefill GEMMs: TTFT, and large batches) and the engine's
exposed host time per step `host_step_s` (serving/engines.py: an absolute time per step, beside
the GPU's kernels, not a multiplier). All three are fitted, then the standard error of each
at the fit is computed from the sensitivities (sigma^2 (J^T J)^-1, sigma = the error left, at
least MEASUREMENT_ERROR); the worst one above its limit is put back to the catalog's / engine
profile's value and the rest refitted, until every fitted one is determined. Which data
identify what: TTFT (a prefill is compute-bound) carries `compute_efficiency`; decode TPOT
carries `hbm_efficiency`; host time separates from HBM efficiency only on decode points at
different batch sizes (host time is the same each step, the HBM term grows with the KV read),
so one bench-serve rate or one load level leaves it at the engine's value, said so. Not
fitted: the per-sequence host time (it grows with the batch as the KV read does: confounded
with HBM efficiency on every input here) and the launch cost without CUDA graphs.

Search: coordinate-wise golden-section for a start, then Levenberg-Marquardt, on Huber-robust
log errors, within BOUNDS.
The overlay written is a catalog file `--catalog` takes: `gpus:` for the efficiencies and
`engines:` for the host time (an engine property: it applies to every GPU the engine runs on).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import numpy as np

from gpuscale.calibration.fit_bench import BenchPoint, bench_items, bench_points, predict
from gpuscale.calibration.fit_prometheus import is_prometheus_export, read_export
from gpuscale.catalog import Precision, get_gpu, get_model
from gpuscale.catalog.specs import GpuSpec, ModelSpec
from gpuscale.errors import UserInputError
from gpuscale.inputs import check_json_depth, read_text
from gpuscale.serving.engines import EngineProfile, get_engine_profile, with_engine
from gpuscale.serving.performance import ReplicaHardware

__all__ = ["BenchPoint", "FitResult", "fit", "predict", "read_points"]

PARAMS = ("hbm_efficiency", "compute_efficiency", "host_step_s")
BOUNDS = {"hbm_efficiency": (0.05, 1.0), "compute_efficiency": (0.05, 1.0),
          "host_step_s": (0.0, 0.02)}  # an efficiency is a fraction of the datasheet peak
ROUNDS = 2  # coordinate sweeps: a start inside the right basin for Levenberg-Marquardt
GOLDEN_STEPS = 14
# Identifiability: a real server's statistics are at least this noisy (run-to-run spread of a
# bench-serve mean, a 15 s window's mean); a parameter whose standard error under that noise
# (or the larger error left at the fit) exceeds MAX_STD_FRAC of its value (host time: or
# MAX_HOST_STD_MS) is kept at the catalog's / profile's value, not fitted.
MEASUREMENT_ERROR = 0.02
MAX_STD_FRAC = 0.3
MAX_HOST_STD_MS = 0.1
FEW_POINTS = 10  # below, the result says the fit rests on too few points to check the model


class FitPoint(Protocol):
    @property
    def label(self) -> str: ...
    @property
    def measured(self) -> dict[str, float]: ...
    @property
    def decode_batch(self) -> float: ...
    def predict_stats(self, hw: ReplicaHardware) -> dict[str, float]: ...


@dataclass(frozen=True)
class Deployment:
    """What was measured: the GPU, model, precision, TP degree and engine."""

    gpu: GpuSpec
    model: ModelSpec
    precision: Precision
    tp: int
    engine: EngineProfile

    def start(self) -> dict[str, float]:
        return {"hbm_efficiency": self.gpu.hbm_efficiency,
                "compute_efficiency": self.gpu.compute_efficiency,
                "host_step_s": self.engine.host_step_s}

    def hardware(self, values: dict[str, float]) -> ReplicaHardware:
        gpu = replace(self.gpu, hbm_efficiency=values["hbm_efficiency"],
                      compute_efficiency=values["compute_efficiency"])
        hw = with_engine(ReplicaHardware(gpu, self.model, self.precision, self.precision,
                                         self.tp), self.engine)
        return replace(hw, host_step_s=values["host_step_s"])


@dataclass
class FitResult:
    gpu: str
    engine: str
    values: dict[str, float]
    fitted: dict[str, str]  # parameter -> what identified it
    kept: dict[str, str]  # parameter -> why it was not fitted (catalog / profile value kept)
    points: list[dict]  # per point: measured, predicted, error
    input_format: str = "bench-serve"
    notes: list[str] = field(default_factory=list)

    @property
    def hbm_efficiency(self) -> float:
        return self.values["hbm_efficiency"]

    @property
    def compute_efficiency(self) -> float:
        return self.values["compute_efficiency"]

    @property
    def host_step_s(self) -> float:
        return self.values["host_step_s"]

    def overlay(self, source: str) -> dict:
        what = f"fit to {len(self.points)} {self.input_format} point(s) in {source}"
        out: dict = {}
        effs = [p for p in ("hbm_efficiency", "compute_efficiency") if p in self.fitted]
        if effs:
            out["gpus"] = {self.gpu: {
                "hbm_efficiency": round(self.hbm_efficiency, 4),
                "compute_efficiency": round(self.compute_efficiency, 4),
                "efficiency_source": f"{what} ({', '.join(effs)} fitted; the rest kept)"}}
        if "host_step_s" in self.fitted:
            out["engines"] = {self.engine: {
                "host_step_ms": round(self.host_step_s * 1e3, 4),
                "source": f"{what} on {self.gpu}"}}
        return out

    def as_json(self, source: str) -> dict:
        return {"gpu": self.gpu, "engine": self.engine, "input_format": self.input_format,
                **self.values, "fitted": self.fitted, "kept": self.kept, "notes": self.notes,
                "points": self.points, "overlay": self.overlay(source)}


def read_points(path: Path, max_num_seqs: int, max_num_batched_tokens: int | None = None
                ) -> tuple[str, list, list[str]]:
    """(format, points, notes) of a measurement file: Prometheus export or bench results."""
    # Read like every input (size capped, devices and FIFOs refused), nesting checked
    # before json recurses (gpuscale/inputs.py).
    text = read_text(path, what="vLLM bench serve result or Prometheus export (JSON)")
    check_json_depth(text, str(path))
    items = bench_items(text, str(path))
    if len(items) == 1 and is_prometheus_export(items[0]):
        windows = read_export(items[0], str(path), max_num_batched_tokens)
        return "prometheus", windows.points, windows.notes
    return "bench-serve", bench_points(items, str(path), max_num_seqs, max_num_batched_tokens), []


def _log_errors(predicted: dict[str, float], measured: dict[str, float]) -> list[float]:
    return [math.log(max(predicted[k], 1e-12) / measured[k]) for k in measured
            if _usable(measured[k])]


def _usable(value: float) -> bool:
    """A measured statistic the fit can compare with (a window's ratio of huge or empty
    counters is not one)."""
    return 0 < value < math.inf


def _log_predictions(dep: Deployment, points: list, values: dict[str, float]) -> np.ndarray:
    hw = dep.hardware(values)
    out = []
    for p in points:
        pred = p.predict_stats(hw)
        out += [math.log(max(pred[k], 1e-12)) for k in p.measured if _usable(p.measured[k])]
    return np.asarray(out)


def _jacobian(dep: Deployment, points: list, values: dict[str, float],
              free: list[str]) -> np.ndarray:
    """d log(prediction) / d x for x in the scaled space (log efficiency, host time in ms),
    by central differences over FD_STEP (a replay's means move in small jumps, whole steps,
    which a narrow difference would read as the slope)."""
    columns = []
    for name in free:
        x = _to_x(name, values[name])
        up = {**values, name: _from_x(name, x + FD_STEP)}
        down = {**values, name: _from_x(name, x - FD_STEP)}
        span = _to_x(name, up[name]) - _to_x(name, down[name])
        columns.append((_log_predictions(dep, points, up)
                        - _log_predictions(dep, points, down)) / span)
    return np.column_stack(columns)


def _carrier(points: list, column: np.ndarray) -> str:
    """The statistic whose predictions move most with a parameter."""
    labels = [k for p in points for k in p.measured if _usable(p.measured[k])]
    weight: dict[str, float] = {}
    for label, v in zip(labels, column, strict=True):
        weight[label] = weight.get(label, 0.0) + abs(float(v))
    return max(weight, key=lambda k: weight[k])


def _limit(name: str, value: float) -> float:
    """The standard error a fitted parameter may keep (scaled units: log, or ms)."""
    if name == "host_step_s":
        return max(MAX_HOST_STD_MS, MAX_STD_FRAC * value * 1e3)
    return MAX_STD_FRAC


def standard_errors(dep: Deployment, points: list, values: dict[str, float],
                    free: list[str]) -> dict[str, float]:
    """Standard error of each free parameter (scaled units) at `values`: sigma^2 (J^T J)^-1,
    sigma = the rms log error left at the fit, at least MEASUREMENT_ERROR; inf when the
    points cannot tell the parameters apart at all (J^T J singular)."""
    jac = _jacobian(dep, points, values, free)
    residual = _residuals(dep, points, values)
    sigma = max(MEASUREMENT_ERROR, float(np.sqrt(np.mean(residual ** 2))))
    normal = jac.T @ jac
    try:
        if not np.all(np.isfinite(normal)) or np.linalg.matrix_rank(normal) < len(free):
            return dict.fromkeys(free, math.inf)
        std = np.sqrt(np.abs(np.diag(np.linalg.inv(normal)))) * sigma
    except np.linalg.LinAlgError:  # absurd measurements: nothing is determined
        return dict.fromkeys(free, math.inf)
    return {n: float(v) for n, v in zip(free, std, strict=True)}


def _shown_std(name: str, std: float) -> str:
    return f"+-{std * 1e3:.0f} us" if name == "host_step_s" else f"+-{std:.0%}"


def _golden(f, lo: float, hi: float, steps: int = GOLDEN_STEPS) -> float:
    ratio = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(steps):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = f(d)
    return (a + b) / 2


def _search(dep: Deployment, points: list, values: dict[str, float],
            free: list[str]) -> dict[str, float]:
    def loss(trial: dict[str, float]) -> float:
        hw = dep.hardware(trial)
        return sum(_robust(e) ** 2 for p in points
                   for e in _log_errors(p.predict_stats(hw), p.measured))

    current = dict(values)
    for _ in range(ROUNDS if len(free) > 1 else 1):  # a global start for the local search
        for name in free:
            current[name] = _golden(lambda x, n=name: loss({**current, n: x}), *BOUNDS[name])
    return {k: float(v) for k, v in current.items()}


def _rows(dep: Deployment, points: list, values: dict[str, float]) -> list[dict]:
    hw = dep.hardware(values)
    rows = []
    for p in points:
        pred = p.predict_stats(hw)
        rows.append({"point": p.label,
                     "request_rate_per_s": getattr(p, "request_rate_per_s", None),
                     "decode_batch": round(p.decode_batch, 2),
                     "measured": dict(p.measured),
                     "predicted": {k: pred[k] for k in p.measured},
                     "error_frac": {k: math.expm1(math.log(max(pred[k], 1e-12) / v))
                                    for k, v in p.measured.items() if _usable(v)}})
    return rows


def fit(points: list, gpu: str, model: str, tp: int, precision: Precision = Precision.BF16,
        engine: str = "vllm", input_format: str = "bench-serve",
        notes: list[str] | None = None) -> FitResult:
    """Fit what `points` identify, keep the rest; the per-point errors at the fit."""
    if not points:
        raise UserInputError("no measurement points to fit")
    dep = Deployment(get_gpu(gpu), get_model(model), precision, tp, get_engine_profile(engine))
    start = dep.start()
    free = list(PARAMS)
    kept: dict[str, str] = {}
    values = dict(start)
    while free:
        values = _levenberg_marquardt(dep, points, _search(dep, points, values, free), free)
        std = standard_errors(dep, points, values, free)
        worst = max(free, key=lambda n: std[n] / _limit(n, values[n]))
        if std[worst] <= _limit(worst, values[worst]):
            break
        kept[worst] = (f"not separable on these points: a {MEASUREMENT_ERROR:.0%} error would "
                       f"move it by {_shown_std(worst, std[worst])} (measure more batch sizes: "
                       "several request rates, or low- and high-load windows)"
                       if math.isfinite(std[worst]) else "the points do not depend on it")
        free.remove(worst)
        values = {**values, worst: start[worst]}
    jac = _jacobian(dep, points, values, free) if free else None
    fitted = {n: f"mostly from {_carrier(points, jac[:, i])}, "
                 f"{_shown_std(n, std[n])}" for i, n in enumerate(free)} if jac is not None \
        else {}
    for name in free:  # a bound reached: the model cannot explain the points there
        lo, hi = BOUNDS[name]
        if min(values[name] - lo, hi - values[name]) < 1e-3 * (hi - lo):
            fitted[name] += f"; at its bound {values[name]:.4g}: the model misses these points"
    notes = list(notes or [])
    if len(points) < FEW_POINTS:
        notes.append(f"only {len(points)} point(s): the standard errors assume the model is "
                     "right on each; measure more (request rates, or a longer export)")
    return FitResult(gpu, engine, values, fitted, kept, _rows(dep, points, values),
                     input_format, notes)


def dumps(result: FitResult, source: str) -> str:
    return json.dumps(result.as_json(source), indent=2)


# Levenberg-Marquardt in a scaled space: log of each efficiency, host time in ms. Coordinate
# search alone crawls along the host-time / HBM valley (both lengthen decode steps).
def _to_x(name: str, value: float) -> float:
    return value * 1e3 if name == "host_step_s" else math.log(value)


def _from_x(name: str, x: float) -> float:
    lo, hi = BOUNDS[name]
    value = x / 1e3 if name == "host_step_s" else math.exp(x)
    return min(hi, max(lo, value))


FD_STEP = 0.1  # finite-difference step in the scaled space (10 % / 100 us)
LM_ITERATIONS = 40


HUBER_LOG_ERROR = 0.1  # beyond a 10 % error a point counts linearly, not squared (outliers)


def _robust(e: float) -> float:
    """Huber's loss as a residual: e^2 below the threshold, linear beyond (a window of a drain
    or a burst, or a replay's jump, must not steer the fit)."""
    d = HUBER_LOG_ERROR
    return e if abs(e) <= d else math.copysign(math.sqrt(2 * d * abs(e) - d * d), e)


def _residuals(dep: Deployment, points: list, values: dict[str, float]) -> np.ndarray:
    hw = dep.hardware(values)
    return np.asarray([_robust(e) for p in points
                       for e in _log_errors(p.predict_stats(hw), p.measured)])


def _levenberg_marquardt(dep: Deployment, points: list, values: dict[str, float],
                         free: list[str]) -> dict[str, float]:
    current = dict(values)
    r = _residuals(dep, points, current)
    cost = float(r @ r)
    damping = 1e-2
    for _ in range(LM_ITERATIONS):
        x = np.array([_to_x(n, current[n]) for n in free])
        # Residuals are robust log errors: the log predictions' slopes times the Huber
        # residual's own slope (1 inside the threshold, threshold / residual beyond).
        slope = np.array([1.0 if abs(v) <= HUBER_LOG_ERROR else HUBER_LOG_ERROR / abs(v)
                          for v in r])
        jac = _jacobian(dep, points, current, free) * slope[:, None]
        normal = jac.T @ jac
        gradient = jac.T @ r
        improved = False
        while damping < 1e8:
            try:
                delta = np.linalg.solve(normal + damping * np.diag(np.diag(normal) + 1e-12),
                                        -gradient)
            except np.linalg.LinAlgError:
                break
            trial = {**current, **{n: _from_x(n, x[j] + delta[j]) for j, n in enumerate(free)}}
            r_trial = _residuals(dep, points, trial)
            cost_trial = float(r_trial @ r_trial)
            if cost_trial < cost:
                improved = cost - cost_trial > 1e-12 * max(cost, 1e-30)
                current, r, cost = trial, r_trial, cost_trial
                damping = max(damping / 3.0, 1e-9)
                break
            damping *= 4.0
        if not improved:
            break
    return {k: float(v) for k, v in current.items()}
