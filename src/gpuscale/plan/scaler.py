"""The replica scaler of one hardware option: signal, thresholds, window, and the variants the
search simulates.

The analytic choice (`scaler_choice`) reads where a replica spends its time: prefill-bound
replicas scale on queue depth, decode-bound ones on KV-cache use, mixed ones on both (our
rule, docs/plan.md). `scaler_variants` adds what the search also tries: the composite, the
HPA's default 300 s scale-down window (cheaper when it lets nodes go; riskier when the load
comes back within a cold start), and a queue threshold half as high (earlier scale-up for
long prompts, whose queue of a few requests already holds seconds of prefill).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpuscale.catalog import get_model
from gpuscale.plan.hardware import HardwareOption
from gpuscale.plan.inputs import PlanInput, SloInput, WorkloadInput
from gpuscale.plan.model import Refusal
from gpuscale.plan.sizing import KV_TARGET_FRAC, cold_start_estimate_s, queue_threshold
from gpuscale.plan.warm_pool import SIGNAL_LAG_S

# Prefill share of a replica's busy time above which it is prefill-bound (queue depth), below
# which decode-bound (KV cache); in between the signal is a composite (our rule, docs/plan.md).
PREFILL_BOUND_FRAC = 0.6
DECODE_BOUND_FRAC = 0.3
MIN_SCALE_DOWN_WINDOW_S = 300  # the HPA default (layer3 1.8); never shorter
MAX_SCALE_DOWN_WINDOW_S = 3600  # API maximum of stabilizationWindowSeconds


# The HPA behavior the plan ships (manifests/keda.py renders it): scale up at once by 100 % or
# 4 pods a 15 s, whichever is more (the HPA's own default scale-up, written out, layer3 1.8),
# scale down one pod a minute after the stabilization window, so a dip never drops capacity
# at once.
SCALE_UP_POLICIES = (("Percent", 100, 15), ("Pods", 4, 15))
SCALE_DOWN_POLICIES = (("Pods", 1, 60),)


def hpa_behavior(scale_down_window_s: int, scale_up_tolerance: float | None = None) -> dict:
    """The plan's behavior in the scenario's terms (autoscaling/behavior.py); a scale-up
    tolerance (per direction, layer3 1.7) lets a schedule's small steps act
    (plan/schedule.py step_tolerance)."""
    def rules(policies) -> list[dict]:
        return [{"type": t, "value": v, "period_s": p} for t, v, p in policies]
    up: dict = {"stabilization_window_s": 0, "select_policy": "Max",
                "policies": rules(SCALE_UP_POLICIES)}
    if scale_up_tolerance is not None:
        up["tolerance_frac"] = scale_up_tolerance
    return {"scale_up": up,
            "scale_down": {"stabilization_window_s": scale_down_window_s,
                           "policies": rules(SCALE_DOWN_POLICIES)}}


@dataclass(frozen=True)
class ScalerChoice:
    label: str
    signal: str  # "queue_depth", "kv_cache" or "composite"
    signal_why: str
    queue_threshold: int
    scale_down_window_s: int
    cold_start_s: float
    reaction_s: float

    @property
    def triggers(self) -> tuple[dict, ...]:
        return triggers(self.signal, self.queue_threshold)


def window_s(cold_s: float, node_ready_s: float) -> int:
    value = math.ceil(1.5 * (cold_s + node_ready_s) / 60.0) * 60
    return int(min(MAX_SCALE_DOWN_WINDOW_S, max(MIN_SCALE_DOWN_WINDOW_S, value)))


def triggers(signal: str, queue_thr: float) -> tuple[dict, ...]:
    queue = {
        "query": {"metric": "vllm:num_requests_waiting", "aggregation": "sum"},
        "threshold": queue_thr,
    }
    kv = {
        "query": {"metric": "vllm:kv_cache_usage_perc", "aggregation": "sum"},
        "threshold": KV_TARGET_FRAC,
    }
    return {"queue_depth": (queue,), "kv_cache": (kv,), "composite": (queue, kv)}[signal]


def _signal(w: WorkloadInput, opt: HardwareOption, refusals: list[Refusal]) -> tuple[str, str]:
    cap = opt.cap
    prefill_frac = cap.prefill_s * cap.requests_per_s
    auto = ("queue_depth" if prefill_frac >= PREFILL_BOUND_FRAC else
            "kv_cache" if prefill_frac <= DECODE_BOUND_FRAC else "composite")
    why = (
        f"prefill takes {prefill_frac:.0%} of a replica's busy time: "
        + {
            "queue_depth": "prefill-bound, so queued requests (TTFT) saturate first",
            "kv_cache": "decode-bound, so the KV cache (concurrent sequences) saturates first",
            "composite": "mixed, so the scaler takes the larger of queue depth and KV-cache use",
        }[auto]
    )
    if auto == "kv_cache" and cap.kv_frac_at_seq_limit < KV_TARGET_FRAC:
        # A cache larger than the batch limit's sequences need (MLA models, big GPUs): the
        # limit (max_num_seqs) saturates first, requests wait while KV use stays below the
        # target, and a KV trigger alone never fires (a DeepSeek-R1 day on H200: 30 s P99
        # TTFT on a busier day than the plan's, with no scale-up).
        auto = "composite"
        why = (f"prefill takes {prefill_frac:.0%} of a replica's busy time: decode-bound, but "
               "the engine's sequence limit (max_num_seqs) of mean requests holds "
               f"{cap.kv_frac_at_seq_limit:.0%} of the KV cache, below the {KV_TARGET_FRAC:.0%} "
               "target: the limit saturates first and requests queue while KV use stays low, "
               "so the scaler takes the larger of queue depth and KV-cache use")
    if w.scale_on in ("gpu_util", "gpu_memory"):
        metric = "DCGM_FI_DEV_GPU_UTIL" if w.scale_on == "gpu_util" else "DCGM_FI_DEV_FB_USED"
        refusals.append(Refusal(
            f"{w.name}: scale on {metric}", auto.replace("_", " "),
            "GPU duty cycle reads ~100 % from batch size 1 (a kernel is always resident in a "
            "continuous-batching engine) and vLLM pre-allocates GPU memory at start-up, so neither "
            "tracks load: the scaler would grow on the first request and never shrink "
            "(serving-engine-metrics / layer3 section 8, audit GPU001/GPU002)"))
        return auto, why
    if w.scale_on != "auto":
        return w.scale_on, f"as requested ({why})"
    return auto, why


def scaler_choice(plan: PlanInput, w: WorkloadInput, opt: HardwareOption, slo: SloInput,
                  refusals: list[Refusal]) -> ScalerChoice:
    """The analytic scaler of this hardware option."""
    model = get_model(w.model)
    # all the replica's GPUs (TP x PP, across nodes too), as the simulated replica starts:
    # its engine init (P2P check) is the whole group's (serving/cold_start.py)
    cold = w.cold_start_s or cold_start_estimate_s(model, w.precision, opt.it, opt.gpus)
    signal, why = _signal(w, opt, refusals)
    queue_thr = queue_threshold(opt.cap.requests_per_s, slo.ttft_p99_s)
    reaction = SIGNAL_LAG_S + cold + plan.cluster.node_ready_s
    return ScalerChoice(f"{signal.replace('_', ' ')}, queue {queue_thr}", signal, why, queue_thr,
                        window_s(cold, plan.cluster.node_ready_s), cold, reaction)


def scaler_variants(base: ScalerChoice, w: WorkloadInput) -> list[ScalerChoice]:
    """The analytic choice first, then the variants the search also simulates; a signal the
    input asks for explicitly is kept, only its threshold varies."""
    out = [base]
    if w.scale_on == "auto" and base.signal != "composite":
        out.append(replace(base, label=f"composite, queue {base.queue_threshold}",
                           signal="composite", signal_why=base.signal_why + "; the composite "
                           "simulated cheaper"))
    if base.scale_down_window_s > MIN_SCALE_DOWN_WINDOW_S:
        out.append(replace(base, label=f"{base.label}, window {MIN_SCALE_DOWN_WINDOW_S} s",
                           scale_down_window_s=MIN_SCALE_DOWN_WINDOW_S,
                           signal_why=base.signal_why + f"; a {MIN_SCALE_DOWN_WINDOW_S} s "
                           "scale-down window simulated cheaper than the cold-start rule"))
    if base.signal != "kv_cache" and base.queue_threshold > 1:
        half = max(1, base.queue_threshold // 2)
        out.append(replace(base, label=f"{base.signal.replace('_', ' ')}, queue {half}",
                           queue_threshold=half, signal_why=base.signal_why + f"; queue threshold "
                           f"{half} (half the drain-time rule) simulated cheaper"))
    return out
