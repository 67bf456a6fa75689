"""Throughput/SLA planner in the manner of NVIDIA Dynamo Planner (kind `sla_planner`).

Every `adjustment_interval_s` it (reference layer3-replica-autoscaling.md 5.1, 5.2):
1. averages what it pulled over the interval (request rate, mean ISL and OSL, TTFT, ITL, the
   batch the replicas ran) into one observation;
2. corrects its performance model by the measured/expected ratios: prefill load is scaled by
   min(1, actual/expected TTFT), the ITL target is divided by actual/expected ITL;
3. predicts the next interval's rate, ISL and OSL with the named predictor;
4. sizes its role from the per-replica capacity at the targets (capacity.py), bounded by
   `min_endpoint` and the GPU budget.

Approximations: the engine publishes the TTFT p99, not the mean Dynamo uses, so the prefill
correction (which can only lower the load) acts only when even p99 beats the model. Dynamo's
budget is shared by the prefill and decode pools; a per-role planner here applies it to its own
role. Scaling is non-blocking, as in Dynamo: the interval should exceed the cold start.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuscale.autoscaling.base import AutoscalerContext, AutoscalerView, NoExplanation
from gpuscale.autoscaling.behavior import clamp
from gpuscale.autoscaling.cadence import Sums, ticks_per_interval
from gpuscale.autoscaling.capacity import (
    ReplicaCapacity,
    prefill_capacity_tokens_per_s,
    prefill_time_s,
    replica_capacity,
    replicas_for,
)
from gpuscale.autoscaling.planner_sla_params import SlaPlannerParams
from gpuscale.autoscaling.predictors import predict
from gpuscale.errors import UserInputError
from gpuscale.serving.performance import StepCost

# Dynamo defaults.py @ 01127723 (reference 5.1): used when neither params nor scenario set them.
DYNAMO_TTFT_S = 0.5
DYNAMO_ITL_S = 0.05


@dataclass(frozen=True)
class Observation:
    """One adjustment interval's load as the planner measured it."""

    rate_per_s: float
    isl_tokens: float
    osl_tokens: float


@dataclass(frozen=True)
class SlaDecision:
    """What the last adjustment saw and decided (for tests and reports)."""

    predicted: Observation
    prefill_correction: float
    decode_correction: float
    capacity: ReplicaCapacity
    replicas: int


@dataclass(frozen=True)
class SlaPlannerState:
    tick: int = 0
    window: Sums = Sums()
    history: tuple[Observation, ...] = ()
    last: SlaDecision | None = None


def observe(view: AutoscalerView) -> dict[str, float | None]:
    """One sample: the fleet signals plus the mean batch of the Running pods."""
    s = view.signals
    rate = s.get("request_rate_per_s")
    running = view.aggregate("vllm:num_requests_running", "avg")
    ttft, tpot = s.get("ttft_p99_s"), s.get("tpot_mean_s")
    return {
        "rate": rate,
        # ISL/OSL are means over the scrape's arrivals, so they are weighted by the rate.
        "isl_x_rate": None if rate is None else rate * s.get("prompt_tokens_mean", 0.0),
        "osl_x_rate": None if rate is None else rate * s.get("output_tokens_mean", 0.0),
        "ttft": ttft if ttft else None,  # 0 = nothing measured yet
        "itl": tpot if tpot else None,
        "batch": running if running else None,
        "ready": s.get("ready_replicas"),
        "waiting": view.aggregate("vllm:num_requests_waiting", "avg"),
    }


class SlaPlanner(NoExplanation):
    """Sizes one role (serve, prefill or decode) from predicted load and the performance model."""

    def __init__(self, params: SlaPlannerParams, context: AutoscalerContext):
        if context.hardware is None or context.engine is None:
            raise UserInputError(
                "sla_planner needs the replica hardware and engine limits; run it in a scenario",
                field="autoscaler.kind",
            )
        if context.role not in ("serve", "prefill", "decode"):
            raise UserInputError(
                f"sla_planner cannot size role {context.role!r}", field="autoscaler"
            )
        self.name = "sla-planner"
        self.params = params
        self.period_s = params.metric_pulling_interval_s
        self.role = context.role
        self.engine = context.engine
        self.cost = StepCost(context.hardware)
        self.ttft_s = params.ttft_target_s or context.slo_ttft_s or DYNAMO_TTFT_S
        self.itl_s = params.itl_target_s or context.slo_tpot_s or DYNAMO_ITL_S
        self._ticks = ticks_per_interval(
            params.adjustment_interval_s, params.metric_pulling_interval_s
        )
        gpus = context.hardware.tp
        self.max_replicas = params.max_gpu_budget // gpus
        if self.max_replicas < params.min_endpoint:
            raise UserInputError(
                f"max_gpu_budget {params.max_gpu_budget} holds {self.max_replicas} replicas of "
                f"{gpus} GPUs, "
                f"below min_endpoint {params.min_endpoint}",
                field="autoscaler.max_gpu_budget",
            )

    def initial_state(self) -> SlaPlannerState:
        return SlaPlannerState()

    def decide(
        self, view: AutoscalerView, state: SlaPlannerState
    ) -> tuple[int | None, SlaPlannerState]:
        window = state.window.add(**observe(view))
        tick = state.tick + 1
        if tick % self._ticks:
            return None, replace(state, tick=tick, window=window)
        obs = self._observation(window, state.history)
        history = (state.history + (obs,))[-self.params.history_points:]
        decision = self.plan(history, window)
        state = SlaPlannerState(tick=tick, window=Sums(), history=history, last=decision)
        return (None if decision.replicas == view.current_replicas else decision.replicas), state

    def _observation(self, window: Sums, history: tuple[Observation, ...]) -> Observation:
        rate_sum = window.total("rate")
        prev = (
            history[-1]
            if history
            else Observation(0.0, self.params.default_isl_tokens, self.params.default_osl_tokens)
        )
        if rate_sum <= 0:  # no arrivals: lengths carry over so the predictor sees no false zero
            return Observation(window.mean("rate") or 0.0, prev.isl_tokens, prev.osl_tokens)
        return Observation(window.mean("rate") or 0.0, window.total("isl_x_rate") / rate_sum,
                           window.total("osl_x_rate") / rate_sum)

    def plan(self, history: tuple[Observation, ...], window: Sums) -> SlaDecision:
        """Correct, predict and size: one Dynamo adjustment."""
        spec = self.params.predictor
        nxt = Observation(
            predict(spec, [o.rate_per_s for o in history]),
            predict(spec, [o.isl_tokens for o in history]) or self.params.default_isl_tokens,
            predict(spec, [o.osl_tokens for o in history]) or self.params.default_osl_tokens,
        )
        last = history[-1]
        c_ttft, c_itl = self._corrections(window, last)
        cap = self._capacity(nxt, self.itl_s / c_itl)
        need = replicas_for(
            self.role,
            nxt.rate_per_s,
            nxt.isl_tokens,
            nxt.osl_tokens,
            cap,
            self.ttft_s,
            prefill_scale=min(1.0, c_ttft),
        )
        replicas = clamp(need, self.params.min_endpoint, self.max_replicas)
        return SlaDecision(nxt, c_ttft, c_itl, cap, replicas)

    def _capacity(self, load: Observation, itl_target_s: float) -> ReplicaCapacity:
        e = self.engine
        return replica_capacity(self.cost, isl_tokens=load.isl_tokens, osl_tokens=load.osl_tokens,
                                ttft_target_s=self.ttft_s, itl_target_s=itl_target_s,
                                budget_tokens=e.max_num_batched_tokens, max_num_seqs=e.max_num_seqs,
                                kv_capacity_tokens=e.num_blocks * e.block_size)

    def _corrections(self, window: Sums, last: Observation) -> tuple[float, float]:
        """actual/expected TTFT and ITL over the interval; 1.0 when either side is unknown.

        Expected TTFT is the unloaded prefill of a mean prompt (Dynamo reads its profile at the
        ISL). Expected ITL is the decode step at the batch the pods ran; an aggregated replica
        also spends a share p of its time on prefill chunks, which stretches every token
        interval by 1 / (1 - p), so that share is part of the expectation, not an error to
        correct. An interval in which the engines queued (mean waiting >= 1 per pod) or whose
        prefill alone saturates the replicas (p >= 1) measured overload, not model error, and
        leaves the ITL factor at 1. Both factors are bounded by `max_correction_factor`.
        """
        if self.params.no_correction:
            return 1.0, 1.0
        ttft, itl, batch = window.mean("ttft"), window.mean("itl"), window.mean("batch")
        isl = max(1, round(last.isl_tokens))
        budget = self.engine.max_num_batched_tokens
        c_ttft = (
            1.0 if ttft is None else self._bounded(ttft / prefill_time_s(self.cost, isl, budget))
        )
        if itl is None or batch is None or (window.mean("waiting") or 0.0) >= 1.0:
            return c_ttft, 1.0
        b = max(1, round(batch))
        expected = self.cost.decode_step_s(b, b * (last.isl_tokens + last.osl_tokens / 2.0))
        if self.role == "serve":
            ready = max(1.0, window.mean("ready") or 1.0)
            share = (
                last.rate_per_s
                * isl
                / ready
                / prefill_capacity_tokens_per_s(self.cost, isl, budget)
            )
            if share >= 1.0:
                return c_ttft, 1.0
            expected /= 1.0 - share
        return c_ttft, self._bounded(itl / expected)

    def _bounded(self, factor: float) -> float:
        f = self.params.max_correction_factor
        return min(f, max(1.0 / f, factor))


def build(params: SlaPlannerParams, context: AutoscalerContext) -> list[SlaPlanner]:
    return [SlaPlanner(params, context)]
