"""Wire a scenario into the core loop, run each strategy on the same workload, return results."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from gpuscale.autoscaling import AutoscalerContext, build_autoscalers
from gpuscale.autoscaling.base import AutoscalerView, PodMetrics
from gpuscale.catalog import get_instance_type, get_model
from gpuscale.cluster.objects import Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, RandomStreams, Simulation
from gpuscale.engine.basic_layers import FirstFitScheduler, NodePool
from gpuscale.engine.fleet import Fleet
from gpuscale.engine.result import RunResult, build_result
from gpuscale.errors import UserInputError
from gpuscale.metrics.store import (GPU_UTIL, KV_USAGE, RUNNING, WAITING, MetricsStore,
                                    PodSample)
from gpuscale.provisioning import build_node_provider
from gpuscale.scheduling import build_scheduler
from gpuscale.scenario.models import Duration, Scenario, Strategy
from gpuscale.serving.cold_start import cold_start_components, draw_seconds
from gpuscale.serving.engine_defaults import default_max_num_batched_tokens, default_max_num_seqs
from gpuscale.serving.kv_cache import num_kv_blocks
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.serving.replica import EngineConfig
from gpuscale.serving.requests_table import RequestTable
from gpuscale.serving.router import ROUTERS
from gpuscale.units import MIB, SECONDS_PER_HOUR
from gpuscale.workloads import build_requests
from gpuscale.workloads.base import Requests

Progress = Callable[[float], None]


def replica_hardware(scenario: Scenario, tp: int | None = None) -> ReplicaHardware:
    instance = get_instance_type(scenario.cluster.instance_type)
    model = get_model(scenario.model.name)
    tp = tp or scenario.model.tp
    if tp > instance.num_gpus:
        raise UserInputError(
            f"tp={tp} needs {tp} GPUs in one pod but {instance.name} has {instance.num_gpus}",
            field="model.tp")
    return ReplicaHardware(gpu=instance.gpu_spec, model=model,
                           weight_precision=scenario.model.precision,
                           kv_precision=scenario.model.kv_precision or scenario.model.precision,
                           tp=tp)


def engine_config(scenario: Scenario, hw: ReplicaHardware) -> EngineConfig:
    """vLLM defaults by GPU size (serving-engine-metrics.md 1.4), overridable per scenario."""
    settings = scenario.engine
    blocks = num_kv_blocks(hw, gpu_memory_utilization=settings.gpu_memory_utilization,
                           block_size=settings.block_size,
                           activation_reserve_gib=settings.activation_reserve_gib,
                           non_torch_gib=settings.non_torch_gib)
    if blocks == 0:
        weights_gib = hw.model.weight_bytes(hw.weight_precision) / hw.tp / 2**30
        raise UserInputError(
            f"{hw.model.name} ({hw.weight_precision.value}) needs {weights_gib:.1f} GiB of weights "
            f"per GPU at tp={hw.tp}, leaving no KV cache on {hw.gpu.name} "
            f"({hw.gpu.memory_gib} GiB); raise tp or use fp8", field="model")
    return EngineConfig(
        max_num_seqs=settings.max_num_seqs or default_max_num_seqs(hw.gpu),
        max_num_batched_tokens=(settings.max_num_batched_tokens
                                or default_max_num_batched_tokens(hw.gpu)),
        block_size=settings.block_size,
        num_blocks=blocks,
        max_model_len=settings.max_model_len or hw.model.max_context_tokens,
        request_timeout_s=scenario.request_timeout_s,
    )


def draw_duration(spec: Duration, rng: np.random.Generator) -> float:
    return draw_seconds(spec, rng)


def scenario_requests(scenario: Scenario, base_dir: Path) -> Requests:
    """The workload every strategy replays (one draw per scenario + seed)."""
    rng = RandomStreams(scenario.seed).get("workloads.arrivals")
    requests = build_requests(scenario.workload, rng, base_dir)
    keep = requests.arrival_s < scenario.duration_s
    return Requests(requests.arrival_s[keep], requests.prompt_tokens[keep],
                    requests.output_tokens[keep])


class _Run:
    """One strategy's simulation: builds the parts and holds the loops' state."""

    def __init__(self, scenario: Scenario, strategy: Strategy, requests: Requests,
                 progress: Progress | None) -> None:
        self.scenario = scenario
        self.strategy = strategy
        self.progress = progress
        self.sim = Simulation()
        self.streams = RandomStreams(scenario.seed)
        self.cluster = ClusterState()
        self.hw = replica_hardware(scenario)
        self.cfg = engine_config(scenario, self.hw)
        self.table = RequestTable(requests)
        self.instance = get_instance_type(scenario.cluster.instance_type)
        self.end_s = scenario.duration_s + scenario.drain_s
        self.store = MetricsStore(scenario.metrics.scrape_interval_s)
        self._prev_busy: dict[str, float] = {}
        self._image_nodes: set[str] = set()
        self._last_counts = (0, 0, 0)
        self.signals: dict[str, float] = {}
        self.cold_starts: list[dict[str, float]] = []  # per replica start, seconds by component
        cluster_cfg = scenario.cluster
        node_rng = self.streams.get("provisioning.node_launch")
        nodes_spec = strategy.nodes or scenario.nodes
        scheduler_spec = strategy.scheduler or scenario.scheduler
        if nodes_spec is None:
            self.pool = NodePool(
                self.sim, self.cluster, self.instance, capacity_type=cluster_cfg.capacity_type,
                max_nodes=cluster_cfg.max_nodes,
                launch_delay_s=lambda: draw_duration(cluster_cfg.node_launch, node_rng),
                empty_node_ttl_s=cluster_cfg.empty_node_ttl_s)
        else:
            self.pool = build_node_provider(nodes_spec)
            self.pool.attach(self.sim, self.cluster, self.streams)
        if scheduler_spec is None:
            self.scheduler = FirstFitScheduler(self.sim, self.cluster,
                                               self.pool.notify_unschedulable)
        else:
            self.scheduler = build_scheduler(scheduler_spec)
            self.scheduler.attach(self.sim, self.cluster, self.streams,
                                  self.pool.notify_unschedulable)
            self.cluster.on_pod_deleted.append(lambda pod: self.scheduler.kick(self.sim.now_s))
        self.fb_used_mib = scenario.engine.gpu_memory_utilization * self.hw.gpu.memory_bytes / MIB
        self.fleets = self._build_fleets()
        self.entry = self.fleets.get("serve") or self.fleets["prefill"]
        split = scenario.disaggregation
        # KV transfer seconds per prompt token (prefill pool's KV bytes over its links), once:
        # _on_prefilled runs for every request of a disaggregated run.
        self._kv_transfer_s_per_token = 0.0 if split is None else (
            self.fleets["prefill"].hw.kv_bytes_per_token
            / (split.kv_transfer_gbps_per_gpu * 1e9 * self.fleets["prefill"].hw.tp))
        self._pd_ttft: list[float] = []
        self.latest_by_role: dict[str, list[PodSample]] = {}
        # (controller, fleets it scales, role whose pods it sees or None for all)
        self.controllers = self._build_controllers()

    def _build_fleets(self) -> dict[str, Fleet]:
        scenario = self.scenario
        base = scenario.model.name.lower()
        common = dict(sim=self.sim, cluster=self.cluster, table=self.table,
                      cold_start_s=self._cold_start_s,
                      evicted_requests=scenario.evicted_requests,
                      pod_annotations=scenario.pod_annotations)
        split = scenario.disaggregation
        if split is None:
            return {"serve": Fleet(name=base, hw=self.hw, engine_cfg=self.cfg,
                                   router=ROUTERS[scenario.router](), **common)}
        fleets: dict[str, Fleet] = {}
        for role in ("prefill", "decode"):
            hw = replica_hardware(scenario, getattr(split, role).tp)
            fleets[role] = Fleet(
                name=f"{base}-{role}", hw=hw, engine_cfg=engine_config(scenario, hw),
                router=ROUTERS[scenario.router](), role=role,
                on_prefilled=self._on_prefilled if role == "prefill" else None,
                retry=(lambda rid, now_s: self.fleets["prefill"].route(rid, now_s))
                if role == "decode" else None, **common)
        return fleets

    def _build_controllers(self) -> list[tuple]:
        scenario, strategy = self.scenario, self.strategy

        def context(role: str, fleet: Fleet) -> AutoscalerContext:
            return AutoscalerContext(role=role, hardware=fleet.hw, engine=fleet.engine_cfg,
                                     slo_ttft_s=scenario.slo.ttft_s,
                                     slo_tpot_s=scenario.slo.tpot_s)

        if strategy.autoscaler is not None:
            # One autoscaler: its decision sets every pool, its metrics span every pool.
            role = "serve" if "serve" in self.fleets else "prefill"
            controllers = build_autoscalers(strategy.autoscaler, context(role, self.entry))
            return [(c, list(self.fleets.values()), None) for c in controllers]
        out = []
        for role in ("prefill", "decode"):
            fleet = self.fleets[role]
            for c in build_autoscalers(getattr(strategy, role), context(role, fleet)):
                out.append((c, [fleet], role))
        return out

    def _on_prefilled(self, rid: int, now_s: float) -> None:
        """A prefill replica is done: ship the KV cache, then the decode pool takes over."""
        transfer_s = self.table.prompt_tokens[rid] * self._kv_transfer_s_per_token
        self.sim.schedule(now_s + transfer_s, Priority.ENGINE, self._kv_arrived, rid)

    def _kv_arrived(self, rid: int) -> None:
        now_s = self.sim.now_s
        table = self.table
        if table.first_token_s[rid] != table.first_token_s[rid]:  # NaN: first token now
            table.first_token_s[rid] = now_s
            self._pd_ttft.append(now_s - table.arrival_s[rid])
        self.fleets["decode"].route(rid, now_s, kv_ready=True)

    # -- cold start ---------------------------------------------------------------------------
    def _cold_start_s(self, pod: Pod) -> float:
        cold = self.scenario.cold_start
        rng = self.streams.get("serving.cold_start")
        pull = not (cold.image_cached_on_warm_nodes and pod.node_name in self._image_nodes)
        self._image_nodes.add(pod.node_name or "")
        parts = cold_start_components(self.hw, cold, rng, pull_image=pull)
        self.cold_starts.append(parts)
        return sum(parts.values())

    # -- set-up -------------------------------------------------------------------------------
    def _initial_state(self) -> None:
        scenario = self.scenario
        if isinstance(self.pool, NodePool):
            floor = [self.pool.add_ready_node(0.0) for _ in range(scenario.cluster.ready_nodes)]
        elif hasattr(self.pool, "adopt_ready_nodes"):
            floor = self.pool.adopt_ready_nodes(scenario.cluster.ready_nodes, self.instance,
                                                scenario.cluster.capacity_type)
        else:
            floor = list(self.cluster.nodes.values())  # the provider's own initial nodes
        self._image_nodes.update(node.name for node in floor)  # the warm floor has the image
        self.initial_node_count = len(floor)
        for role, fleet in self.fleets.items():
            initial = (scenario.initial_replicas if role == "serve"
                       else getattr(scenario.disaggregation, role).initial_replicas)
            fleet.scale_to(initial, 0.0)
            fleet.scale_events = 0
            fleet.markers.clear()
        self._schedule_now()
        for fleet in self.fleets.values():
            for slot in list(fleet.slots.values()):
                if slot.pod.node_name is not None:
                    fleet.make_ready_now(slot.pod, 0.0)

    def _schedule_now(self) -> None:
        """Bind the initial pods at t=0 (the warm floor is already running)."""
        if isinstance(self.scheduler, FirstFitScheduler):
            self.scheduler.cycle()
        else:
            self.sim.run(until_s=0.0)  # the scheduler's own t=0 cycle binds them

    def _schedule_arrivals(self) -> None:
        arrivals = self.table.arrival_s
        if not arrivals:
            return
        fleet = self.entry
        table = self.table
        sim = self.sim
        n = len(arrivals)

        def arrive(rid: int) -> None:
            table.num_arrived = rid + 1
            fleet.route(rid, sim.now_s)
            if rid + 1 < n:
                sim.schedule(arrivals[rid + 1], Priority.ARRIVAL, arrive, rid + 1)

        sim.schedule(arrivals[0], Priority.ARRIVAL, arrive, 0)

    def _scrape(self, now_s: float) -> None:
        samples: list[PodSample] = []
        by_role: dict[str, list[PodSample]] = {}
        pending = starting = 0
        waiting = running = 0.0
        kv: list[float] = []
        util: list[float] = []
        role_rows: dict[str, tuple[float, float, float]] = {}
        interval = self.scenario.metrics.scrape_interval_s
        observed: list[float] = self._pd_ttft
        self._pd_ttft = []
        for role, fleet in self.fleets.items():
            role_samples = by_role.setdefault(role, [])
            role_waiting = 0.0
            role_kv: list[float] = []
            for slot, values in fleet.replica_samples(now_s, interval, self._prev_busy,
                                                      self.fb_used_mib):
                bound = slot.pod.node_name is not None
                pending += not bound
                ready = slot.replica is not None and slot.state == "ready"
                starting += bound and slot.replica is None
                sample = PodSample(slot.pod.name, "Running" if bound else "Pending", ready, values)
                role_samples.append(sample)
                if WAITING in values:
                    role_waiting += values[WAITING]
                    running += values[RUNNING]
                    role_kv.append(values[KV_USAGE])
                    util.append(values[GPU_UTIL])
            samples.extend(role_samples)
            waiting += role_waiting
            kv.extend(role_kv)
            role_rows[role] = (float(fleet.desired), float(fleet.num_ready()), role_waiting,
                               sum(role_kv) / len(role_kv) if role_kv else 0.0)
            for replica in fleet.ready:
                if replica.ttft_observations:
                    observed.extend(replica.ttft_observations)
                    replica.ttft_observations = []
            fleet.expire_gateway(now_s, self.scenario.request_timeout_s)
        self.store.latest = samples
        self.latest_by_role = by_role
        self.store.observe_ttft(now_s, observed)
        arrived = self.table.num_arrived
        self.signals = self._signals(now_s, interval, arrived)
        done = self.table.num_completed
        drops = self.table.num_dropped
        prev_arrived, prev_done, prev_drops = self._last_counts
        self._last_counts = (arrived, done, drops)
        nodes = list(self.cluster.nodes.values())
        nodes_ready = sum(1 for n in nodes if n.state.value == "ready")
        fleets = self.fleets.values()
        prefill = role_rows.get("prefill", (0.0, 0.0, 0.0, 0.0))
        decode = role_rows.get("decode", (0.0, 0.0, 0.0, 0.0))
        self.store.record_row((
            now_s, arrived - prev_arrived, done - prev_done, drops - prev_drops, waiting, running,
            sum(len(f.gateway) for f in fleets), sum(kv) / len(kv) if kv else 0.0,
            sum(util) / len(util) if util else 0.0, self.store.ttft_p99_s,
            sum(f.desired for f in fleets), sum(f.num_ready() for f in fleets), starting,
            pending, nodes_ready, len(nodes) - nodes_ready, sum(n.num_gpus for n in nodes),
            self.cluster.gpus_allocated(),
            sum(f.hw.tp for f in fleets for r in f.ready if r.state != 0), self._cost_usd(now_s),
            prefill[0], prefill[1], prefill[2], decode[0], decode[1], decode[2], decode[3],
        ))
        if self.progress is not None:
            self.progress(min(1.0, now_s / self.end_s))

    def _signals(self, now_s: float, interval_s: float, arrived: int) -> dict[str, float]:
        """Fleet-level signals a planner reads (a gateway or frontend would export these)."""
        table = self.table
        first = self._last_counts[0]
        count = arrived - first
        completed = table.recently_completed
        table.recently_completed = []
        tpots = [(table.finish_s[r] - table.first_token_s[r]) / (table.output_tokens[r] - 1)
                 for r in completed if table.output_tokens[r] > 1]
        return {
            "request_rate_per_s": count / interval_s,
            "prompt_tokens_mean": (sum(table.prompt_tokens[first:arrived]) / count) if count else 0.0,
            "output_tokens_mean": (sum(table.output_tokens[first:arrived]) / count) if count else 0.0,
            "ttft_p99_s": self.store.ttft_p99_s,
            "tpot_mean_s": (sum(tpots) / len(tpots)) if tpots else 0.0,
            "gateway_queue": float(sum(len(f.gateway) for f in self.fleets.values())),
            "ready_replicas": float(sum(f.num_ready() for f in self.fleets.values())),
        }

    def _controller_tick(self, controller, fleets: list[Fleet], role: str | None,
                         state_box: list) -> Callable[[float], None]:
        lead = fleets[0]

        def tick(now_s: float) -> None:
            latest = self.store.latest if role is None else self.latest_by_role.get(role, [])
            pods = tuple(PodMetrics(s.name, s.phase, s.ready, s.values) for s in latest)
            view = AutoscalerView(now_s=now_s, current_replicas=lead.desired, pods=pods,
                                  signals=self.signals)
            desired, state_box[0] = controller.decide(view, state_box[0])
            if desired is not None:
                for fleet in fleets:
                    if desired != fleet.desired:
                        fleet.scale_to(desired, now_s)
        return tick

    # -- accounting ---------------------------------------------------------------------------
    def _all_nodes(self):
        return list(self.cluster.nodes.values()) + self.cluster.gone_nodes

    def _cost_usd(self, now_s: float) -> float:
        return sum(n.billed_s(now_s) * n.price_usd_per_hour for n in self._all_nodes()) \
            / SECONDS_PER_HOUR

    def _gpu_s(self, now_s: float) -> float:
        return sum(n.billed_s(now_s) * n.num_gpus for n in self._all_nodes())

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
        return build_result(self)

def run_strategy(scenario: Scenario, strategy: Strategy, requests: Requests,
                 progress: Progress | None = None) -> RunResult:
    return _Run(scenario, strategy, requests, progress).run()
