"""Recorded against replayed, signal by signal, on the same steps.

- `replicas_within_one_frac`: the share of steps at which the replayed replica count (the
  Deployment's spec: what the autoscaler asked for) is within one of the recorded;
- scale events (changes of that count) matched in order to a replayed change of the same
  direction within MATCH_WINDOW_S, with the lag (replayed - recorded);
- per-step errors of queue depth, KV use, GPUs and the latency quantiles;
- GPU-hours (the GPUs series integrated over the compared steps) and the share of first tokens
  within the TTFT SLO (from each side's TTFT buckets).
The thresholds of `agrees` are the round trip's (issue 31 acceptance, docs/backtest.md): a run
replayed on its own history lands within them. When a signal departs for DIVERGE_S in a row,
the first to do so is named, with what it usually means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MATCH_WINDOW_S = 600.0  # a KEDA cooldown (300 s default) or HPA stabilization either way
DIVERGE_S = 60.0  # a departure counts once it lasts this long (4 steps at 15 s)
AGREE_WITHIN_ONE_FRAC = 0.90
AGREE_GPU_HOURS_FRAC = 0.10
AGREE_SLO_POINTS = 0.03

# (absolute, relative) tolerance of a step: |sim - rec| > abs + rel * max(|rec|, |sim|). In
# cause-first order: at the same step, load departs before the replicas that follow it, and
# replicas before the GPUs that follow them.
TOLERANCES = {
    "queue": (5.0, 0.5),
    "ttft_p99_s": (0.5, 0.5),
    "itl_p50_s": (0.01, 0.25),
    "kv_usage": (0.1, 0.25),
    "replicas": (0.5, 0.0),
    "gpus": (1.0, 0.25),
}
HINTS = {
    "replicas": "the replica count departs while the load signals still agree: a controller "
                "setting the manifests do not carry (the scaler's query, polling, cooldown or "
                "stabilization), or replicas changed by hand",
    "queue": "the queue departs first: the simulated replica serves at another speed than the "
             "recorded one; fit its step time on this export (`gpuscale calibrate --fit`)",
    "ttft_p99_s": "TTFT departs first: prefill speed or queueing differ; fit the step time on "
                  "this export (`gpuscale calibrate --fit`)",
    "itl_p50_s": "inter-token latency departs first: the decode step differs; fit it on this "
                 "export (`gpuscale calibrate --fit`)",
    "kv_usage": "KV use departs first: the cache size (--gpu-memory-utilization, "
                "--max-model-len, --kv-cache-dtype) or the lengths (their pairing, prefix "
                "reuse: not in the export) differ",
    "gpus": "the GPU count departs first: node provisioning or consolidation differ "
            "(NodePool disruption, other pods on the nodes, other pools' nodes in the export)",
}


@dataclass(frozen=True)
class Aligned:
    """Recorded and replayed values on the same steps."""

    recorded: dict[str, np.ndarray]
    simulated: dict[str, np.ndarray]
    step_s: float
    start_s: float  # the first compared step, seconds since the history's first step


def scale_events(values: np.ndarray, step_s: float) -> list[tuple[float, int, float]]:
    """(time s, +1 up / -1 down, new count) of each change of a replica series."""
    held = _held(values)
    out = []
    for i in np.flatnonzero(np.diff(held) != 0) + 1:
        if np.isfinite(held[i - 1]) and np.isfinite(held[i]):
            out.append((i * step_s, int(np.sign(held[i] - held[i - 1])), float(held[i])))
    return out


def _held(values: np.ndarray) -> np.ndarray:
    """NaN steps take the last value seen (a gap is not a scale event)."""
    out = values.astype(float).copy()
    for i in range(1, len(out)):
        if not np.isfinite(out[i]):
            out[i] = out[i - 1]
    return out


def match_events(recorded: list, simulated: list) -> dict:
    """Recorded events matched in time order to the nearest free replayed event of the same
    direction within MATCH_WINDOW_S."""
    free = list(simulated)
    lags = []
    for t_rec, direction, _ in recorded:
        near = [e for e in free if e[1] == direction and abs(e[0] - t_rec) <= MATCH_WINDOW_S]
        if near:
            best = min(near, key=lambda e: abs(e[0] - t_rec))
            free.remove(best)
            lags.append(best[0] - t_rec)
    return {"recorded": len(recorded), "simulated": len(simulated), "matched": len(lags),
            "lag_s_median": float(np.median(lags)) if lags else None,
            "lag_s_max_abs": float(np.max(np.abs(lags))) if lags else None}


def _both(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.isfinite(a) & np.isfinite(b)


def _off(name: str, rec: np.ndarray, sim: np.ndarray) -> np.ndarray:
    absolute, relative = TOLERANCES[name]
    scale = np.fmax(np.abs(rec), np.abs(sim))
    return _both(rec, sim) & (np.abs(sim - rec) > absolute + relative * scale)


def first_divergence(aligned: Aligned) -> dict | None:
    """The signal that departs first for DIVERGE_S in a row, when and why it may."""
    run = max(2, math.ceil(DIVERGE_S / aligned.step_s))
    found = []
    for name in TOLERANCES:
        rec, sim = aligned.recorded.get(name), aligned.simulated.get(name)
        if rec is None or sim is None:
            continue
        off = _off(name, rec, sim).astype(int)
        lasting = np.convolve(off, np.ones(run, dtype=int), mode="valid") == run
        if lasting.any():
            found.append((int(np.argmax(lasting)), list(TOLERANCES).index(name), name))
    if not found:
        return None
    index, _, name = min(found)
    return {"signal": name, "at_s": aligned.start_s + index * aligned.step_s,
            "suggests": HINTS[name]}


def _error(rec: np.ndarray, sim: np.ndarray, relative: bool) -> dict:
    both = _both(rec, sim)
    out: dict = {"recorded_mean": _mean(rec[both]), "simulated_mean": _mean(sim[both])}
    if relative:
        usable = both & (rec > 0)
        err = np.abs(sim[usable] - rec[usable]) / rec[usable]
        out["median_rel_error"] = float(np.median(err)) if len(err) else None
    else:
        out["mean_abs_error"] = _mean(np.abs(sim[both] - rec[both]))
    return out


def _mean(values: np.ndarray) -> float | None:
    return float(np.mean(values)) if len(values) else None


def _gpu_hours(gpus: np.ndarray, step_s: float) -> float:
    return float(np.nansum(gpus) * step_s / 3600.0)


def compare(aligned: Aligned, slo_share: tuple[float | None, float | None]) -> dict:
    """The agreement section's numbers (JSON-ready)."""
    rec, sim = aligned.recorded, aligned.simulated
    both = _both(rec["replicas"], sim["replicas"])
    close = np.abs(sim["replicas"] - rec["replicas"]) <= 1.0
    within_one = float(close[both].mean()) if both.any() else None
    gpu_rec, gpu_sim = _gpu_hours(rec["gpus"], aligned.step_s), _gpu_hours(sim["gpus"],
                                                                             aligned.step_s)
    gpu_err = (gpu_sim - gpu_rec) / gpu_rec if gpu_rec > 0 else None
    slo_rec, slo_sim = slo_share
    slo_points = slo_sim - slo_rec if slo_rec is not None and slo_sim is not None else None
    out = {
        "replicas_within_one_frac": within_one,
        "replicas": _error(rec["replicas"], sim["replicas"], relative=False),
        "scale_events": match_events(scale_events(rec["replicas"], aligned.step_s),
                                     scale_events(sim["replicas"], aligned.step_s)),
        "queue": _error(rec["queue"], sim["queue"], relative=False),
        "kv_usage": _error(rec["kv_usage"], sim["kv_usage"], relative=False),
        **{name: _error(rec[name], sim[name], relative=True)
           for name in ("ttft_p50_s", "ttft_p99_s", "itl_p50_s", "itl_p99_s")},
        "gpu_hours": {"recorded": gpu_rec, "simulated": gpu_sim, "rel_error": gpu_err},
        "ttft_within_slo_frac": {"recorded": slo_rec, "simulated": slo_sim,
                                 "points": slo_points},
        "compared_s": len(rec["replicas"]) * aligned.step_s,
    }
    # Without a replica series on either side there is nothing to agree on: None, said.
    out["agrees"] = None if within_one is None else bool(
        within_one >= AGREE_WITHIN_ONE_FRAC
        and (gpu_err is None or abs(gpu_err) <= AGREE_GPU_HOURS_FRAC)
        and (slo_points is None or abs(slo_points) <= AGREE_SLO_POINTS))
    out["first_divergence"] = first_divergence(aligned)
    return out
