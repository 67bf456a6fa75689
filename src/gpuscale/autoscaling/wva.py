"""llm-d Workload Variant Autoscaler, saturation (V1) analyzer (kind `wva`).

Reference layer3-replica-autoscaling.md 6.3 (llm-d @ b08b1c7, docs/saturation-analyzer.md):
- every `interval_s` (GLOBAL_OPT_INTERVAL, 60 s), per ready pod, the max over the last minute
  of `vllm:kv_cache_usage_perc` and `vllm:num_requests_waiting`;
- a replica is saturated if KV >= 0.80 or queue >= 5; spare capacity is averaged over the
  non-saturated ones (0.80 - kv, 5 - queue); scale up by 1 if the average spare KV < 0.10 or
  spare queue < 3 (or when every replica is saturated);
- scale down by 1 only if N >= 2 and, with the non-saturated replicas' total load spread over
  one replica fewer, both spares stay at or above the triggers;
- scale-up goes to the cheapest variant, scale-down to the most expensive; a variant with
  pending pods gets no scale-up; a previous desired count not yet reached is kept.

The simulator serves one variant per run, so the controller scales that one variant; the
variant choice is the pure function `pick_variant`, exercised on many variants by the tests.
Actuation is direct (WVA's direct actuator): the HPA or KEDA object that usually reads
`wva_desired_replicas` would add its own sync period and stabilization window on top.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from gpuscale.autoscaling.base import AutoscalerView, NoExplanation
from gpuscale.autoscaling.behavior import clamp
from gpuscale.autoscaling.cadence import Stamp, pods_in_flight, push_window, ticks_per_interval
from gpuscale.autoscaling.wva_params import WvaParams


@dataclass(frozen=True)
class Variant:
    """One way of serving the model (GPU type/count, parallelism) and its replica counts."""

    name: str
    cost_usd_per_hour: float
    capacity: float  # work one replica sustains (any unit shared by the variants); breaks cost ties
    replicas: int = 0
    pending: int = 0  # pods asked for but not ready
    max_replicas: int | None = None


def pick_variant(variants: Sequence[Variant], direction: int) -> str | None:
    """Which variant takes a +1 (cheapest first) or a -1 (most expensive first); None if none can.

    Ties on cost go to the larger capacity for a scale-up (more work for the same money) and
    the smaller for a scale-down; then by name, so the choice never depends on list order.
    Scale-up skips variants with pending pods (they would cascade) or at their maximum;
    scale-down skips variants with no replica.
    """
    if direction > 0:
        able = [
            v
            for v in variants
            if v.pending == 0 and (v.max_replicas is None or v.replicas < v.max_replicas)
        ]
        best = min(able, key=lambda v: (v.cost_usd_per_hour, -v.capacity, v.name), default=None)
    else:
        able = [v for v in variants if v.replicas > 0]
        best = min(able, key=lambda v: (-v.cost_usd_per_hour, v.capacity, v.name), default=None)
    return None if best is None else best.name


@dataclass(frozen=True)
class Saturation:
    """The V1 analysis of one model: -1, 0 or +1 and why."""

    step: int
    spare_kv: float | None
    spare_queue: float | None
    reason: str


def analyze(kv: Sequence[float], queue: Sequence[float], p: WvaParams) -> Saturation:
    """Spare capacity over the non-saturated replicas (kv and queue are per ready replica)."""
    free = [
        (k, q)
        for k, q in zip(kv, queue, strict=True)
        if k < p.kv_cache_threshold_frac and q < p.queue_length_threshold
    ]
    if not kv:
        return Saturation(0, None, None, "no ready replicas")
    if not free:
        return Saturation(1, None, None, "all replicas saturated")
    spare_kv = sum(p.kv_cache_threshold_frac - k for k, _ in free) / len(free)
    spare_q = sum(p.queue_length_threshold - q for _, q in free) / len(free)
    if spare_kv < p.kv_spare_trigger_frac or spare_q < p.queue_spare_trigger:
        return Saturation(1, spare_kv, spare_q, "spare capacity below trigger")
    if len(kv) >= 2 and len(free) >= 2:
        left = len(free) - 1
        kv_after = p.kv_cache_threshold_frac - sum(k for k, _ in free) / left
        q_after = p.queue_length_threshold - sum(q for _, q in free) / left
        if kv_after >= p.kv_spare_trigger_frac and q_after >= p.queue_spare_trigger:
            return Saturation(-1, spare_kv, spare_q, "safe to remove one replica")
    return Saturation(0, spare_kv, spare_q, "steady")


@dataclass(frozen=True)
class WvaState:
    tick: int = 0
    kv: tuple[tuple[str, tuple[Stamp, ...]], ...] = ()  # per pod, samples within the look-back
    queue: tuple[tuple[str, tuple[Stamp, ...]], ...] = ()
    desired: int | None = None  # last published desired count
    last: Saturation | None = None


def _push(series: tuple[tuple[str, tuple[Stamp, ...]], ...], now_s: float, values: dict[str, float],
          lookback_s: float) -> tuple[tuple[str, tuple[Stamp, ...]], ...]:
    """Add this sample per pod; pods that left the view are forgotten, so state stays bounded."""
    old = dict(series)
    return tuple(
        (name, push_window(old.get(name, ()), Stamp(now_s, v), lookback_s))
        for name, v in sorted(values.items())
    )


class WvaController(NoExplanation):
    """Saturation analyzer for the one variant of this run, actuated directly."""

    def __init__(self, params: WvaParams):
        self.name = "wva"
        self.params = params
        self.period_s = params.sample_interval_s
        self._ticks = ticks_per_interval(params.interval_s, params.sample_interval_s)

    def initial_state(self) -> WvaState:
        return WvaState()

    def decide(self, view: AutoscalerView, state: WvaState) -> tuple[int | None, WvaState]:
        p, now = self.params, view.now_s
        ready = [
            pod
            for pod in view.pods
            if pod.phase == "Running" and pod.ready and "vllm:kv_cache_usage_perc" in pod.values
        ]
        kv = _push(
            state.kv,
            now,
            {pod.name: pod.values["vllm:kv_cache_usage_perc"] for pod in ready},
            p.lookback_s,
        )
        queue = _push(
            state.queue,
            now,
            {pod.name: pod.values.get("vllm:num_requests_waiting", 0.0) for pod in ready},
            p.lookback_s,
        )
        tick = state.tick + 1
        state = replace(state, tick=tick, kv=kv, queue=queue)
        if tick % self._ticks:
            return None, state
        current = view.current_replicas
        if state.desired is not None and state.desired != current:
            return state.desired, state  # a previous desired count not applied yet is kept
        if current == 0:  # scale from zero on the gateway's flow-control queue
            desired = p.min_replicas or (1 if view.signals.get("gateway_queue", 0.0) > 0 else 0)
            return (desired or None), replace(state, desired=desired)
        result = analyze(
            [max(s.value for s in w) for _, w in kv], [max(s.value for s in w) for _, w in queue], p
        )
        variant = Variant(p.variant_name, p.variant_cost, 1.0, replicas=current,
                          pending=pods_in_flight(view), max_replicas=p.max_replicas)
        step = result.step if pick_variant([variant], result.step) == p.variant_name else 0
        desired = clamp(current + step, p.min_replicas, p.max_replicas)
        state = replace(state, desired=desired, last=result)
        return (None if desired == current else desired), state


def build(params: WvaParams) -> list[WvaController]:
    return [WvaController(params)]
