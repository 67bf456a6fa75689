"""Wire a scenario into the core loop, run each strategy on the same workload, return results."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from gpuscale.autoscaling import build_autoscalers
from gpuscale.autoscaling.base import AutoscalerView, PodMetrics
from gpuscale.catalog import get_instance_type, get_model
from gpuscale.catalog.specs import Precision
from gpuscale.cluster.objects import Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, RandomStreams, Simulation
from gpuscale.engine.basic_layers import FirstFitScheduler, NodePool
from gpuscale.engine.fleet import Fleet
from gpuscale.errors import UserInputError
from gpuscale.metrics.store import MetricsStore, PodSample
from gpuscale.metrics.summary import request_summary, time_weighted_mean
from gpuscale.scenario.models import Duration, FixedSeconds, Scenario, Strategy
from gpuscale.serving.kv_cache import num_kv_blocks
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.serving.replica import EngineConfig
from gpuscale.serving.requests_table import RequestColumns, RequestTable
from gpuscale.serving.router import ROUTERS
from gpuscale.units import MIB, SECONDS_PER_HOUR
from gpuscale.workloads import build_requests
from gpuscale.workloads.base import Requests

Progress = Callable[[float], None]


@dataclass
class RunResult:
    name: str
    summary: dict
    requests: RequestColumns
    series: dict[str, np.ndarray]
    extra: dict = field(default_factory=dict)


def replica_hardware(scenario: Scenario) -> ReplicaHardware:
    instance = get_instance_type(scenario.cluster.instance_type)
    model = get_model(scenario.model.name)
    tp = scenario.model.tp
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
    big_gpu = hw.gpu.memory_gib >= 70 and not hw.gpu.name.startswith("A100")
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
        max_num_seqs=settings.max_num_seqs or (1024 if big_gpu else 256),
        max_num_batched_tokens=settings.max_num_batched_tokens or (8192 if big_gpu else 2048),
        block_size=settings.block_size,
        num_blocks=blocks,
        max_model_len=settings.max_model_len or hw.model.max_context_tokens,
        request_timeout_s=scenario.request_timeout_s,
    )


def draw_duration(spec: Duration, rng: np.random.Generator) -> float:
    if isinstance(spec, FixedSeconds):
        return spec.value_s
    value = float(spec.median_s * math.exp(spec.sigma * rng.standard_normal()))
    return min(value, spec.max_s) if spec.max_s else value


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
        cluster_cfg = scenario.cluster
        node_rng = self.streams.get("provisioning.node_launch")
        self.pool = NodePool(self.sim, self.cluster, self.instance,
                             capacity_type=cluster_cfg.capacity_type,
                             max_nodes=cluster_cfg.max_nodes,
                             launch_delay_s=lambda: draw_duration(cluster_cfg.node_launch, node_rng),
                             empty_node_ttl_s=cluster_cfg.empty_node_ttl_s)
        self.scheduler = FirstFitScheduler(self.sim, self.cluster, self.pool.notify_unschedulable)
        self.fleet = Fleet(name=scenario.model.name.lower(), hw=self.hw, engine_cfg=self.cfg,
                           sim=self.sim, cluster=self.cluster, table=self.table,
                           cold_start_s=self._cold_start_s, router=ROUTERS[scenario.router](),
                           evicted_requests=scenario.evicted_requests)
        self.fb_used_mib = scenario.engine.gpu_memory_utilization * self.hw.gpu.memory_bytes / MIB
        self.controllers = build_autoscalers(strategy.autoscaler)

    # -- cold start ---------------------------------------------------------------------------
    def _cold_start_s(self, pod: Pod) -> float:
        cold = self.scenario.cold_start
        rng = self.streams.get("serving.cold_start")
        pull = 0.0
        if not (cold.image_cached_on_warm_nodes and pod.node_name in self._image_nodes):
            pull = draw_duration(cold.image_pull, rng)
            self._image_nodes.add(pod.node_name or "")
        load = self.hw.model.weight_bytes(self.hw.weight_precision) / (cold.storage_gbps * 1e9)
        return pull + load + draw_duration(cold.engine_init, rng)

    # -- set-up -------------------------------------------------------------------------------
    def _initial_state(self) -> None:
        scenario = self.scenario
        for _ in range(scenario.cluster.ready_nodes):
            node = self.pool.add_ready_node(0.0)
            self._image_nodes.add(node.name)  # the warm floor has the image
        initial = scenario.initial_replicas
        self.fleet.scale_to(initial, 0.0)
        self.fleet.scale_events = 0
        self.fleet.markers.clear()
        self.scheduler.cycle()
        for slot in list(self.fleet.slots.values()):
            if slot.pod.node_name is not None:
                self.fleet.make_ready_now(slot.pod, 0.0)

    def _schedule_arrivals(self) -> None:
        arrivals = self.table.arrival_s
        if not arrivals:
            return
        fleet = self.fleet
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
        samples = []
        pending = 0
        starting = 0
        waiting = running = 0
        kv = []
        util = []
        interval = self.scenario.metrics.scrape_interval_s
        for slot, values in self.fleet.replica_samples(now_s, interval, self._prev_busy,
                                                       self.fb_used_mib):
            bound = slot.pod.node_name is not None
            pending += not bound
            ready = slot.replica is not None and slot.state == "ready"
            starting += bound and slot.replica is None
            samples.append(PodSample(slot.pod.name, "Running" if bound else "Pending", ready, values))
            if "vllm:num_requests_waiting" in values:
                waiting += values["vllm:num_requests_waiting"]
                running += values["vllm:num_requests_running"]
                kv.append(values["vllm:kv_cache_usage_perc"])
                util.append(values["DCGM_FI_DEV_GPU_UTIL"])
        self.store.latest = samples
        for replica in self.fleet.ready:
            if replica.ttft_observations:
                self.store.observe_ttft(now_s, replica.ttft_observations)
                replica.ttft_observations = []
        self.fleet.expire_gateway(now_s, self.scenario.request_timeout_s)
        arrived = self.table.num_arrived
        done = self.table.num_completed
        drops = self.table.num_dropped
        prev_arrived, prev_done, prev_drops = self._last_counts
        self._last_counts = (arrived, done, drops)
        nodes = list(self.cluster.nodes.values())
        nodes_ready = sum(1 for n in nodes if n.state.value == "ready")
        self.store.record_row((
            now_s, arrived - prev_arrived, done - prev_done, drops - prev_drops, waiting, running,
            len(self.fleet.gateway), float(np.mean(kv)) if kv else 0.0,
            float(np.mean(util)) if util else 0.0, self.store.ttft_p99_window_s(),
            self.fleet.desired, self.fleet.num_ready(), starting, pending, nodes_ready,
            len(nodes) - nodes_ready, sum(n.num_gpus for n in nodes),
            self.cluster.gpus_allocated(),
            sum(self.hw.tp for r in self.fleet.ready if r.state != 0), self._cost_usd(now_s),
        ))
        if self.progress is not None:
            self.progress(min(1.0, now_s / self.end_s))

    def _controller_tick(self, controller, state_box: list) -> Callable[[float], None]:
        def tick(now_s: float) -> None:
            pods = tuple(PodMetrics(s.name, s.phase, s.ready, s.values) for s in self.store.latest)
            view = AutoscalerView(now_s=now_s, current_replicas=self.fleet.desired, pods=pods,
                                  signals={"ttft_p99_s": self.store.ttft_p99_window_s()})
            desired, state_box[0] = controller.decide(view, state_box[0])
            if desired is not None and desired != self.fleet.desired:
                self.fleet.scale_to(desired, now_s)
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
        for controller in self.controllers:
            state_box = [controller.initial_state()]
            self.sim.every(controller.period_s, Priority.CONTROLLER,
                           self._controller_tick(controller, state_box),
                           start_s=controller.period_s, until_s=self.end_s)
        self.sim.run(until_s=self.end_s)
        return self._result()

    def _result(self) -> RunResult:
        scenario = self.scenario
        end_s = self.end_s
        cols = self.table.columns()
        series = self.store.series()
        summary = {"name": self.strategy.name}
        summary.update(request_summary(cols, ttft_slo_s=scenario.slo.ttft_s,
                                       tpot_slo_s=scenario.slo.tpot_s,
                                       window_s=scenario.duration_s))
        ready = series["replicas_ready"]
        gpu_s = self._gpu_s(end_s)
        busy_gpu_s = self.fleet.busy_gpu_s(end_s)
        summary["replicas"] = {
            "initial": scenario.initial_replicas,
            "peak": int(self.fleet.peak_replicas),
            "mean": round(time_weighted_mean(series["time_s"], ready, end_s), 4),
        }
        summary["scale_events"] = int(self.fleet.scale_events)
        summary["gpu_hours"] = round(gpu_s / SECONDS_PER_HOUR, 6)
        summary["cost_usd"] = round(self._cost_usd(end_s), 4)
        summary["idle_gpu_minutes"] = round(max(0.0, gpu_s - busy_gpu_s) / 60.0, 4)
        waits = np.asarray(self.pool.launch_waits_s)
        summary["nodes"] = {
            "peak": int(series["nodes_ready"].max() + series["nodes_launching"].max())
            if len(series["time_s"]) else 0,
            "launched": len(self._all_nodes()) - scenario.cluster.ready_nodes,
            "provisioning_wait_s": {
                "p50": round(float(np.percentile(waits, 50)), 3) if len(waits) else None,
                "p99": round(float(np.percentile(waits, 99)), 3) if len(waits) else None,
            },
            "evictions": dict(sorted(self.cluster.evictions_by_cause.items())),
        }
        summary["drops_by_reason"] = dict(sorted(self.table.drop_reasons.items()))
        summary["preemptions"] = int(cols.num_preemptions.sum())
        extra = {"gpu_seconds": gpu_s, "busy_gpu_seconds": busy_gpu_s,
                 "num_events": self.sim.num_events, "markers": list(self.fleet.markers)}
        return RunResult(self.strategy.name, summary, cols, series, extra)


def run_strategy(scenario: Scenario, strategy: Strategy, requests: Requests,
                 progress: Progress | None = None) -> RunResult:
    return _Run(scenario, strategy, requests, progress).run()
