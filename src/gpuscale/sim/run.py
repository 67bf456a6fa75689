"""Wire one strategy of a scenario into the core loop and run it (the composition root).

Everything here builds parts and connects them: the node provider and the scheduler (the
scenario's, or the default pool and first fit), the fleets, the KV transfer between P/D pools,
the start-ups, the scrape and the controllers. The work itself lives with the component that
owns the data (metrics/scrape.py, metrics/billing.py, serving/kv_transfer.py,
serving/startup.py, sim/result.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from gpuscale.autoscaling import AutoscalerContext, build_autoscalers, promql_queries
from gpuscale.autoscaling.base import AutoscalerView, ReplicaAutoscaler
from gpuscale.autoscaling.explain import log_replica_decision
from gpuscale.catalog import get_instance_type
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, RandomStreams, Simulation
from gpuscale.core.decisions import DecisionLog
from gpuscale.metrics.prometheus import SimulatedPrometheus, wanted_names
from gpuscale.metrics.scrape import Scraper
from gpuscale.metrics.store import MetricsStore
from gpuscale.promql.rules import Rule
from gpuscale.provisioning import NodeProvider, build_node_provider
from gpuscale.provisioning.pool import NodePool
from gpuscale.scenario.models import Scenario, Strategy
from gpuscale.scenario.start import initial_state
from gpuscale.scheduling import PodScheduler, build_scheduler
from gpuscale.scheduling.first_fit import FirstFitScheduler
from gpuscale.serving.cold_start import draw_seconds
from gpuscale.serving.kv_transfer import KvTransfer
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.serving.replica import EngineConfig
from gpuscale.serving.requests_table import RequestTable
from gpuscale.serving.router import make_router
from gpuscale.serving.startup import Startups
from gpuscale.sim.fleet import Fleet
from gpuscale.sim.replica_setup import engine_config, replica_hardware
from gpuscale.sim.result import RunParts, RunResult, build_result
from gpuscale.units import MIB, epoch_ms
from gpuscale.workloads import build_requests
from gpuscale.workloads.base import Requests

Progress = Callable[[float], None]


def scenario_requests(scenario: Scenario, base_dir: Path) -> Requests:
    """The workload every strategy replays (one draw per scenario + seed)."""
    rng = RandomStreams(scenario.seed).get("workloads.arrivals")
    requests = build_requests(scenario.workload, rng, base_dir)
    arrival_s = requests.arrival_s
    if np.isnan(arrival_s).any():  # no reader or generator makes one; sorting ignores it
        return requests.take(arrival_s < scenario.duration_s)
    # Sorted without NaNs, the rows before `duration_s` are a prefix: a slice keeps exactly
    # the rows of the mask `arrival_s < duration_s`, as views instead of three column copies.
    return requests.take(slice(0, int(np.searchsorted(arrival_s, scenario.duration_s))))


class Controller(NamedTuple):
    autoscaler: ReplicaAutoscaler
    fleets: list[Fleet]  # the pools its decision sets
    role: str | None  # the pool whose metrics it reads (None: all of them)


def _node_provider(scenario: Scenario, strategy: Strategy) -> NodeProvider:
    spec = strategy.nodes or scenario.nodes
    if spec is not None:
        return build_node_provider(spec)
    cluster = scenario.cluster  # no `nodes:`: the default pool the `cluster:` block describes
    return NodePool(get_instance_type(cluster.instance_type),
                    capacity_type=cluster.capacity_type, max_nodes=cluster.max_nodes,
                    launch_delay_s=lambda rng: draw_seconds(cluster.node_launch, rng),
                    empty_node_ttl_s=cluster.empty_node_ttl_s)


def _scheduler(scenario: Scenario, strategy: Strategy) -> PodScheduler:
    spec = strategy.scheduler or scenario.scheduler
    return FirstFitScheduler() if spec is None else build_scheduler(spec)


class _Run:
    """One strategy's simulation: builds the parts, connects them, runs the loop."""

    def __init__(self, scenario: Scenario, strategy: Strategy, requests: Requests,
                 progress: Progress | None, decisions: bool = False,
                 export_series: bool = False) -> None:
        self.scenario = scenario
        self.strategy = strategy
        self.progress = progress
        self.sim = Simulation()
        if decisions:  # every layer's controllers find the log on the simulation
            self.sim.decisions = DecisionLog(strategy.name)
        self.streams = RandomStreams(scenario.seed)
        self.cluster = ClusterState()
        self.hw = replica_hardware(scenario)
        self.cfg = engine_config(scenario, self.hw)
        self.table = RequestTable(requests)
        self.end_s = scenario.duration_s + scenario.drain_s
        self.startups = Startups(self.hw, scenario.cold_start,
                                 self.streams.get("serving.cold_start"))
        self.provider = _node_provider(scenario, strategy)
        self.provider.attach(self.sim, self.cluster, self.streams)
        self.scheduler = _scheduler(scenario, strategy)
        self.scheduler.attach(self.sim, self.cluster, self.streams,
                              self.provider.notify_unschedulable)
        self.kv_transfer: KvTransfer | None = None
        self.fleets = self._build_fleets()
        self.entry = self.fleets.get("serve") or self.fleets["prefill"]
        fb_used_mib = scenario.engine.gpu_memory_utilization * self.hw.gpu.memory_bytes / MIB
        self.scraper = Scraper(MetricsStore(scenario.metrics.scrape_interval_s), self.fleets,
                               self.table, self.cluster, fb_used_mib,
                               ttft_sources=[self.kv_transfer] if self.kv_transfer else [])
        self.prometheus = self._prometheus(export_series)
        self.scraper.prometheus = self.prometheus
        for fleet in self.fleets.values():
            fleet.record_events = self.prometheus is not None and self.prometheus.records_events
        self.controllers = self._build_controllers()

    def _prometheus(self, export_series: bool) -> SimulatedPrometheus | None:
        """The run's Prometheus, when a PromQL query reads series or they are exported."""
        strategy, settings = self.strategy, self.scenario.metrics
        queries = [q for role in ("autoscaler", "prefill", "decode")
                   for q in promql_queries(getattr(strategy, role))]
        if not queries and not export_series:
            return None
        groups = [(g.name, g.interval_s, tuple(Rule(r.record, r.expr, tuple(r.labels.items()))
                                               for r in g.rules))
                  for g in settings.rule_groups]
        rules = [rule for _, _, group in groups for rule in group]
        return SimulatedPrometheus(
            origin_ms=epoch_ms(self.scenario.start_time), namespace=settings.namespace,
            model_name=settings.served_model_name or self.scenario.model.name,
            engine_kind=self.scenario.engine.kind, max_model_len=self.cfg.max_model_len,
            gpu_model=self.hw.gpu.name,
            wanted=None if export_series else wanted_names(queries, rules),
            evaluation_interval_s=settings.evaluation_interval_s, rule_groups=groups,
            end_s=self.end_s, extra_labels=settings.extra_labels)

    def _fleet(self, name: str, hw: ReplicaHardware, cfg: EngineConfig, role: str = "serve",
               on_prefilled: Callable[[int, float], None] | None = None,
               retry: Callable[[int, float], None] | None = None) -> Fleet:
        scenario = self.scenario
        group = scenario.pod_group  # the serving pods' KAI PodGroup, if the scenario has one
        return Fleet(name=name, hw=hw, engine_cfg=cfg, sim=self.sim, cluster=self.cluster,
                     table=self.table, cold_start_s=self.startups.cold_start_s,
                     router=make_router(scenario.router, scenario.prefix_aware_weights.as_tuple()),
                     evicted_requests=scenario.evicted_requests,
                     role=role, on_prefilled=on_prefilled, retry=retry,
                     pod_annotations=scenario.pod_annotations,
                     pod_group=None if group is None else group.spec(),
                     pod_priority=0 if group is None else group.priority)

    def _build_fleets(self) -> dict[str, Fleet]:
        scenario = self.scenario
        base = scenario.metrics.deployment or scenario.model.name.lower()
        split = scenario.disaggregation
        if split is None:
            return {"serve": self._fleet(base, self.hw, self.cfg)}
        fleets: dict[str, Fleet] = {}
        prefill_hw = replica_hardware(scenario, "prefill")
        self.kv_transfer = KvTransfer(
            self.sim, self.table, prefill_hw, split.kv_transfer_gbps_per_gpu,
            deliver=lambda rid, now_s, kv_ready: fleets["decode"].route(rid, now_s, kv_ready))
        # Prefill first: each Fleet subscribes to the cluster, and listeners run in order.
        fleets["prefill"] = self._fleet(f"{base}-prefill", prefill_hw,
                                        engine_config(scenario, prefill_hw), role="prefill",
                                        on_prefilled=self.kv_transfer.on_prefilled)
        decode_hw = replica_hardware(scenario, "decode")
        fleets["decode"] = self._fleet(
            f"{base}-decode", decode_hw, engine_config(scenario, decode_hw), role="decode",
            retry=lambda rid, now_s: fleets["prefill"].route(rid, now_s))
        return fleets

    def _build_controllers(self) -> list[Controller]:
        scenario, strategy = self.scenario, self.strategy

        def context(role: str, fleet: Fleet) -> AutoscalerContext:
            return AutoscalerContext(role=role, hardware=fleet.hw, engine=fleet.engine_cfg,
                                     slo_ttft_s=scenario.slo.ttft_s,
                                     slo_tpot_s=scenario.slo.tpot_s,
                                     start_time=scenario.start_time)

        if strategy.autoscaler is not None:
            # One autoscaler: its decision sets every pool, its metrics span every pool.
            role = "serve" if "serve" in self.fleets else "prefill"
            controllers = build_autoscalers(strategy.autoscaler, context(role, self.entry))
            return [Controller(c, list(self.fleets.values()), None) for c in controllers]
        out: list[Controller] = []
        for role in ("prefill", "decode"):
            fleet = self.fleets[role]
            for c in build_autoscalers(getattr(strategy, role), context(role, fleet)):
                out.append(Controller(c, [fleet], role))
        return out

    # -- set-up -------------------------------------------------------------------------------
    def _initial_state(self) -> None:
        scenario = self.scenario
        serve_initial, ready_nodes = initial_state(scenario, self.strategy)
        self.provider.adopt_ready_nodes(ready_nodes,
                                        get_instance_type(scenario.cluster.instance_type),
                                        scenario.cluster.capacity_type,
                                        group_nodes=self.hw.layout.nodes)
        # The warm floor: every node at t=0, adopted or the provider's own; it has the image.
        floor = list(self.cluster.nodes.values())
        self.startups.add_warm_nodes(node.name for node in floor)
        self.initial_node_count = len(floor)
        self.initial_replicas = 0
        for role, fleet in self.fleets.items():
            initial = (serve_initial if role == "serve"
                       else getattr(scenario.disaggregation, role).initial_replicas)
            self.initial_replicas += initial
            fleet.start_with(initial)
        self.sim.run(until_s=0.0)  # the scheduler's t=0 cycle binds the initial pods
        for fleet in self.fleets.values():
            for slot in list(fleet.slots.values()):
                if slot.all_bound():  # a LeaderWorkerSet group: every pod placed
                    fleet.make_ready_now(slot.pod, 0.0)

    def _schedule_arrivals(self) -> None:
        arrivals = self.table.arrival_s
        if arrivals:
            self.sim.schedule(arrivals[0], Priority.ARRIVAL, self.entry.arrive, 0)

    def _scrape(self, now_s: float) -> None:
        # The gateway's client timeouts are checked on the scrape tick (before the scrape
        # reads the queues and the drop counts).
        for fleet in self.fleets.values():
            fleet.expire_gateway(now_s, self.scenario.request_timeout_s)
        self.scraper.scrape(now_s)
        if self.progress is not None:
            self.progress(min(1.0, now_s / self.end_s))

    def _controller_tick(self, controller: ReplicaAutoscaler, fleets: list[Fleet],
                         role: str | None, state_box: list) -> Callable[[float], None]:
        lead = fleets[0]
        scraper = self.scraper
        log = self.sim.decisions
        prometheus = self.prometheus
        engine = prometheus.engine if prometheus is not None else None
        # What the controller's objects expose (KEDA's trigger values, the HPAs' status).
        publish = None if prometheus is None else prometheus.controller_publisher(
            controller, self.strategy.name, role)

        def tick(now_s: float) -> None:
            view = AutoscalerView(now_s=now_s, current_replicas=lead.desired,
                                  pods=scraper.pods(role), signals=scraper.signals,
                                  prometheus=engine)
            desired, state_box[0] = controller.decide(view, state_box[0])
            if log is not None:
                log_replica_decision(log, controller, view, state_box[0], desired, role)
            if publish is not None:
                publish(view, state_box[0], desired, len(lead.slots))
            if desired is not None:
                for fleet in fleets:
                    if desired != fleet.desired:
                        fleet.scale_to(desired, now_s)
        return tick

    # -- run ----------------------------------------------------------------------------------
    def run(self) -> RunResult:
        scenario = self.scenario
        self._initial_state()
        self._schedule_arrivals()
        self.sim.every(scenario.metrics.scrape_interval_s, Priority.SCRAPE, self._scrape,
                       until_s=self.end_s)
        for controller, fleets, role in self.controllers:
            state_box = [controller.initial_state()]
            self.sim.every(controller.period_s, Priority.CONTROLLER,
                           self._controller_tick(controller, fleets, role, state_box),
                           start_s=controller.period_s, until_s=self.end_s)
        self.sim.run(until_s=self.end_s)
        return build_result(RunParts(
            name=self.strategy.name, scenario=scenario, sim=self.sim, table=self.table,
            store=self.scraper.store, fleets=self.fleets, cluster=self.cluster,
            provider=self.provider, scheduler=self.scheduler, startups=self.startups,
            initial_node_count=self.initial_node_count,
            initial_replicas=self.initial_replicas, hw=self.hw, cfg=self.cfg,
            decisions=self.sim.decisions.records if self.sim.decisions else [],
            prometheus=self.prometheus))


def run_strategy(scenario: Scenario, strategy: Strategy, requests: Requests,
                 progress: Progress | None = None, decisions: bool = False,
                 export_series: bool = False) -> RunResult:
    """One strategy's run; `decisions` keeps its decision log (RunResult.decisions);
    `export_series` collects every series (RunResult.prometheus, for --metrics-out)."""
    return _Run(scenario, strategy, requests, progress, decisions, export_series).run()
