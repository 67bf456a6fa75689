"""Contexts and views for planner tests: real hardware from the catalog, engine limits as the engine
derives them."""

from __future__ import annotations

from gpuscale.autoscaling.base import AutoscalerContext, AutoscalerView, PodMetrics
from gpuscale.catalog import Precision, get_gpu, get_model
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.sim.replica_setup import engine_config

from ..sim.scenarios import small_scenario


def context(gpu: str = "L40S", model: str = "Llama-3.1-8B", tp: int = 1, role: str = "serve",
            ttft_s: float | None = 1.0, tpot_s: float | None = 0.04) -> AutoscalerContext:
    hw = ReplicaHardware(get_gpu(gpu), get_model(model), Precision.BF16, Precision.BF16, tp)
    return AutoscalerContext(role=role, hardware=hw, engine=engine_config(small_scenario(), hw),
                             slo_ttft_s=ttft_s, slo_tpot_s=tpot_s)


def vllm_pods(n: int, *, kv: float = 0.3, waiting: float = 0.0, running: float = 10.0,
              ready: bool = True) -> tuple[PodMetrics, ...]:
    values = {"vllm:kv_cache_usage_perc": kv, "vllm:num_requests_waiting": waiting,
              "vllm:num_requests_running": running}
    return tuple(PodMetrics(f"p{i}", "Running", ready, values if ready else {}) for i in range(n))


def fleet_view(now_s: float, current: int, pods=None, **signals: float) -> AutoscalerView:
    pods = vllm_pods(current) if pods is None else pods
    base = {"request_rate_per_s": 0.0, "prompt_tokens_mean": 0.0, "output_tokens_mean": 0.0,
            "ttft_p99_s": 0.0, "tpot_mean_s": 0.0, "gateway_queue": 0.0,
            "ready_replicas": float(sum(p.ready for p in pods))}
    base.update(signals)
    return AutoscalerView(now_s=now_s, current_replicas=current, pods=tuple(pods), signals=base)
