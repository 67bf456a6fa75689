"""Turn a finished run into its summary: requests, latency, replicas, nodes, cost, oracle.

Split from `sim/run.py` so the loop-wiring module stays small; everything here reads the
parts of a run (`RunParts`, handed over by the runner) after `Simulation.run` returned and
changes nothing. Each component reports its own block (the provider's `summary()`, the
scheduler's, the start-ups' means); this module assembles them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpuscale.catalog import get_instance_type
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Simulation
from gpuscale.metrics import billing
from gpuscale.metrics.oracle import oracle_summary
from gpuscale.metrics.prometheus import SimulatedPrometheus
from gpuscale.metrics.run_summary import (
    NodesSummary,
    PrefixCacheSummary,
    ReplicaStats,
    RoleStats,
    RunSummary,
    run_summary,
)
from gpuscale.metrics.store import MetricsStore
from gpuscale.metrics.summary import request_summary, slo_breach_minutes, time_weighted_mean
from gpuscale.provisioning import NodeProvider
from gpuscale.provisioning.pool import KIND as DEFAULT_POOL_KIND
from gpuscale.scenario.models import Scenario
from gpuscale.scheduling import PodScheduler
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.serving.replica import EngineConfig
from gpuscale.serving.requests_table import RequestColumns, RequestTable
from gpuscale.serving.startup import Startups
from gpuscale.sim.fleet import Fleet
from gpuscale.units import SECONDS_PER_HOUR


@dataclass
class RunResult:
    name: str
    summary: RunSummary
    requests: RequestColumns
    series: dict[str, np.ndarray]
    extra: dict = field(default_factory=dict)
    decisions: list[dict] = field(default_factory=list)  # the decision log, when asked for
    # The run's Prometheus (metrics/prometheus.py) when a query or export read series: its
    # store is what `--metrics-out` writes.
    prometheus: SimulatedPrometheus | None = None


@dataclass(frozen=True)
class RunParts:
    """The finished run's components, as the runner wired them."""

    name: str
    scenario: Scenario
    sim: Simulation
    table: RequestTable
    store: MetricsStore
    fleets: dict[str, Fleet]
    cluster: ClusterState
    provider: NodeProvider
    scheduler: PodScheduler
    startups: Startups
    initial_node_count: int
    initial_replicas: int  # every pool's replicas at t=0 (the strategy's own start)
    hw: ReplicaHardware
    cfg: EngineConfig
    decisions: list[dict]
    prometheus: SimulatedPrometheus | None = None


def _markers_of(fleets: dict[str, Fleet]) -> list[tuple[float, str, str]]:
    """Scale events and evictions of every pool, in time order (role-tagged when split)."""
    tag = len(fleets) > 1
    out = [(t, kind, f"{role}: {detail}" if tag else detail)
           for role, fleet in fleets.items() for t, kind, detail in fleet.markers]
    return sorted(out, key=lambda m: m[0])


def _nodes_summary(run: RunParts, series: dict) -> NodesSummary:
    """Node facts every provider reports the same way, then the provider's own block."""
    evicted = run.table.num_retries
    out = {
        "peak": int((series["nodes_ready"] + series["nodes_launching"]).max())
        if len(series["time_s"]) else 0,
        "launched": len(billing.all_nodes(run.cluster)) - run.initial_node_count,
        "evictions": dict(sorted(run.cluster.evictions_by_cause.items())),
        "requests_retried_after_eviction": int(sum(evicted)),
        "requests_failed_by_eviction": int(run.table.drop_reasons.get("evicted", 0)),
    }
    out.update(run.provider.summary())
    if run.provider.kind != DEFAULT_POOL_KIND:  # the default pool's block predates the key
        out["provider"] = run.provider.kind
    return NodesSummary.model_validate(out)


def _prefix_cache_summary(fleets: dict[str, Fleet]) -> PrefixCacheSummary:
    """Token counters of every replica that ever ran (the fleets keep the sums)."""
    hits = sum(f.prefix_stats.hits_tokens for f in fleets.values())
    queries = sum(f.prefix_stats.queries_tokens for f in fleets.values())
    return PrefixCacheSummary(hit_rate=round(hits / queries, 6) if queries else None,
                              hits_tokens=int(hits), queries_tokens=int(queries))


def build_result(run: RunParts) -> RunResult:
    """The run's summary (the public JSON keys), request columns, series and extras."""
    scenario = run.scenario
    end_s = scenario.duration_s + scenario.drain_s
    cols = run.table.columns()
    series = run.store.series()
    summary: dict = {"name": run.name}
    summary.update(request_summary(cols, ttft_slo_s=scenario.slo.ttft_s,
                                   tpot_slo_s=scenario.slo.tpot_s,
                                   window_s=scenario.duration_s))
    ready = series["replicas_ready"]
    gpu_s = billing.gpu_s(run.cluster, end_s)
    fleets = run.fleets
    busy_gpu_s = sum(f.busy_gpu_s(end_s) for f in fleets.values())
    initial = run.initial_replicas
    summary["replicas"] = ReplicaStats(
        initial=initial, peak=int(sum(f.peak_replicas for f in fleets.values())),
        mean=round(time_weighted_mean(series["time_s"], ready, end_s), 4))
    if scenario.disaggregation is not None:
        summary["roles"] = {
            role: RoleStats(peak=int(fleets[role].peak_replicas),
                            mean=round(time_weighted_mean(series["time_s"],
                                                          series[f"{role}_ready"], end_s), 4),
                            scale_events=int(fleets[role].scale_events))
            for role in ("prefill", "decode")}
    summary["scale_events"] = int(sum(f.scale_events for f in fleets.values()))
    # Minutes in which the sliding-window P99 TTFT exceeded the SLO (one scrape = one slice),
    # from the request columns so requests that never got a first token count as breaches.
    summary["slo_breach_minutes"] = round(slo_breach_minutes(
        cols, scenario.slo.ttft_s, series["time_s"], scenario.metrics.scrape_interval_s,
        run.store.ttft_window_s), 3)
    # GPU-hours and dollars over the traffic's window [0, duration_s]; what the drain (arrivals
    # over, in-flight requests finishing) bills is reported apart, so a long drain does not
    # inflate what a strategy costs for the traffic it served (issue 27).
    window_gpu_s = billing.gpu_s_until(run.cluster, scenario.duration_s, end_s)
    window_usd = billing.cost_usd_until(run.cluster, scenario.duration_s, end_s)
    summary["gpu_hours"] = round(window_gpu_s / SECONDS_PER_HOUR, 6)
    summary["cost_usd"] = round(window_usd, 4)
    summary["drain_gpu_hours"] = round((gpu_s - window_gpu_s) / SECONDS_PER_HOUR, 6)
    summary["drain_cost_usd"] = round(billing.cost_usd(run.cluster, end_s) - window_usd, 4)
    summary["idle_gpu_minutes"] = round(max(0.0, gpu_s - busy_gpu_s) / 60.0, 4)
    summary["nodes"] = _nodes_summary(run, series)
    scheduling = run.scheduler.summary()
    if scheduling is not None:
        summary["scheduling"] = scheduling
    summary["drops_by_reason"] = dict(sorted(run.table.drop_reasons.items()))
    summary["preemptions"] = int(cols.num_preemptions.sum())
    summary["prefix_cache"] = _prefix_cache_summary(fleets)
    # The probe replays the run's hardware: the fleet's StepCost has its memo warm already.
    warm = next((f.cost for f in fleets.values() if f.hw == run.hw), None)
    summary.update(oracle_summary(run.hw, run.cfg, cols, scenario.slo, scenario.duration_s,
                                  summary["gpu_hours"], seed=scenario.seed,
                                  gpus_per_node=get_instance_type(
                                      scenario.cluster.instance_type).num_gpus, cost=warm))
    summary["cold_start_s"] = run.startups.mean_components_s()
    extra = {"gpu_seconds": gpu_s, "busy_gpu_seconds": busy_gpu_s,
             "num_events": run.sim.num_events, "markers": _markers_of(run.fleets)}
    return RunResult(run.name, run_summary(summary), cols, series, extra, run.decisions,
                     run.prometheus)
