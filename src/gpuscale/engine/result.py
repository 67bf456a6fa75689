"""Turn a finished run into its summary: requests, latency, replicas, nodes, cost, oracle.

Split from `engine/run.py` so the loop-wiring module stays small; everything here reads the
run's state after `Simulation.run` returned and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from gpuscale.engine.basic_layers import FirstFitScheduler, NodePool
from gpuscale.engine.fleet import Fleet
from gpuscale.metrics.oracle import oracle_summary
from gpuscale.metrics.summary import request_summary, slo_breach_minutes, time_weighted_mean
from gpuscale.serving.requests_table import RequestColumns
from gpuscale.units import SECONDS_PER_HOUR

if TYPE_CHECKING:
    from gpuscale.engine.run import _Run


@dataclass
class RunResult:
    name: str
    summary: dict
    requests: RequestColumns
    series: dict[str, np.ndarray]
    extra: dict = field(default_factory=dict)


def _markers_of(fleets: dict[str, Fleet]) -> list[tuple[float, str, str]]:
    """Scale events and evictions of every pool, in time order (role-tagged when split)."""
    tag = len(fleets) > 1
    out = [(t, kind, f"{role}: {detail}" if tag else detail)
           for role, fleet in fleets.items() for t, kind, detail in fleet.markers]
    return sorted(out, key=lambda m: m[0])


def _nodes_common(run: "_Run", series: dict) -> dict:
    """Node facts every provider reports the same way, from the engine's own view."""
    evicted = run.table.num_retries
    return {
        "peak": int((series["nodes_ready"] + series["nodes_launching"]).max())
        if len(series["time_s"]) else 0,
        "launched": len(run._all_nodes()) - run.initial_node_count,
        "evictions": dict(sorted(run.cluster.evictions_by_cause.items())),
        "requests_retried_after_eviction": int(sum(evicted)),
        "requests_failed_by_eviction": int(run.table.drop_reasons.get("evicted", 0)),
    }


def _pool_nodes_summary(run: "_Run", series: dict) -> dict:
    waits = np.asarray(run.pool.launch_waits_s)
    out = _nodes_common(run, series)
    out["provisioning_wait_s"] = {
        "p50": round(float(np.percentile(waits, 50)), 3) if len(waits) else None,
        "p99": round(float(np.percentile(waits, 99)), 3) if len(waits) else None,
    }
    return out

def _provider_nodes_summary(run: "_Run", series: dict) -> dict:
    out = _nodes_common(run, series)
    out.update(run.pool.summary())
    out["provider"] = run.pool.kind
    return out

def build_result(run: "_Run") -> RunResult:
    """The run's summary (the public JSON keys), request columns, series and extras."""
    scenario = run.scenario
    end_s = run.end_s
    cols = run.table.columns()
    series = run.store.series()
    summary = {"name": run.strategy.name}
    summary.update(request_summary(cols, ttft_slo_s=scenario.slo.ttft_s,
                                   tpot_slo_s=scenario.slo.tpot_s,
                                   window_s=scenario.duration_s))
    ready = series["replicas_ready"]
    gpu_s = run._gpu_s(end_s)
    fleets = run.fleets
    busy_gpu_s = sum(f.busy_gpu_s(end_s) for f in fleets.values())
    initial = (scenario.initial_replicas if scenario.disaggregation is None else
               scenario.disaggregation.prefill.initial_replicas
               + scenario.disaggregation.decode.initial_replicas)
    summary["replicas"] = {
        "initial": initial,
        "peak": int(sum(f.peak_replicas for f in fleets.values())),
        "mean": round(time_weighted_mean(series["time_s"], ready, end_s), 4),
    }
    if scenario.disaggregation is not None:
        summary["roles"] = {
            role: {"peak": int(fleets[role].peak_replicas),
                   "mean": round(time_weighted_mean(series["time_s"],
                                                    series[f"{role}_ready"], end_s), 4),
                   "scale_events": int(fleets[role].scale_events)}
            for role in ("prefill", "decode")}
    summary["scale_events"] = int(sum(f.scale_events for f in fleets.values()))
    # Minutes in which the sliding-window P99 TTFT exceeded the SLO (one scrape = one slice),
    # from the request columns so requests that never got a first token count as breaches.
    summary["slo_breach_minutes"] = round(slo_breach_minutes(
        cols, scenario.slo.ttft_s, series["time_s"], scenario.metrics.scrape_interval_s,
        run.store.ttft_window_s), 3)
    summary["gpu_hours"] = round(gpu_s / SECONDS_PER_HOUR, 6)
    summary["cost_usd"] = round(run._cost_usd(end_s), 4)
    summary["idle_gpu_minutes"] = round(max(0.0, gpu_s - busy_gpu_s) / 60.0, 4)
    if not isinstance(run.pool, NodePool):
        summary["nodes"] = _provider_nodes_summary(run, series)
    else:
        summary["nodes"] = _pool_nodes_summary(run, series)
    if not isinstance(run.scheduler, FirstFitScheduler):
        summary["scheduling"] = run.scheduler.summary()
    summary["drops_by_reason"] = dict(sorted(run.table.drop_reasons.items()))
    summary["preemptions"] = int(cols.num_preemptions.sum())
    summary.update(oracle_summary(run.hw, run.cfg, cols, scenario.slo, scenario.duration_s,
                                  summary["gpu_hours"], seed=scenario.seed))
    summary["cold_start_s"] = {k: round(float(np.mean([p.get(k, 0.0) for p in
                                                      run.cold_starts])), 3)
                               for k in sorted({k for p in run.cold_starts for k in p})}
    extra = {"gpu_seconds": gpu_s, "busy_gpu_seconds": busy_gpu_s,
             "num_events": run.sim.num_events, "markers": _markers_of(run.fleets)}
    return RunResult(run.strategy.name, summary, cols, series, extra)
