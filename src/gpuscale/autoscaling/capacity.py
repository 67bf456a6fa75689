"""Per-replica capacity at a latency target, from the roofline step-time model (`StepCost`).

Dynamo's SLA planner reads these from pre-deployment profiling: prefill throughput per GPU vs
ISL at the TTFT target, and the best decode throughput per GPU whose ITL meets the target at
context ISL + OSL/2 (reference layer3-replica-autoscaling.md 5.1, 5.2). gpuscale has the
performance model the engine itself runs, so it derives the same curves from it instead:

- prefill: a replica at full token budget prefills `prefill_capacity_tokens_per_s`; its TTFT is
  modelled as the unloaded prefill time of one prompt plus an M/D/1 wait, which bounds the
  utilisation at the TTFT target (`prefill_utilization_at_ttft`);
- decode: the largest batch whose step time stays under the ITL target, bounded by
  `max_num_seqs` and by the KV cache (capacity tokens / context per sequence);
- aggregated: prefill and decode share the replica's time (chunked prefill is not credited
  for riding on decode steps, which makes the aggregated estimate conservative).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuscale.serving.performance import StepCost


def prefill_time_s(cost: StepCost, prompt_tokens: int, chunk_tokens: int) -> float:
    """Unloaded time to prefill one prompt, split into chunks of the token budget (chunked
    prefill)."""
    total, done = 0.0, 0
    while done < prompt_tokens:
        chunk = min(chunk_tokens, prompt_tokens - done)
        total += cost.step_s(0, 0.0, ((chunk, done),))
        done += chunk
    return total


def prefill_capacity_tokens_per_s(cost: StepCost, prompt_tokens: int, budget_tokens: int) -> float:
    """Prompt tokens per second of a replica that always has prompts waiting.

    Prompts no longer than the budget are packed `budget // isl` to a step; longer ones fill
    whole chunked steps one prompt at a time.
    """
    if prompt_tokens >= budget_tokens:
        return prompt_tokens / prefill_time_s(cost, prompt_tokens, budget_tokens)
    per_step = budget_tokens // prompt_tokens
    step = cost.step_s(0, 0.0, ((prompt_tokens, 0),) * per_step)
    return per_step * prompt_tokens / step


def prefill_utilization_at_ttft(
    service_s: float, min_ttft_s: float, ttft_target_s: float
) -> float | None:
    """Largest utilisation rho with min_ttft + M/D/1 wait <= target; None when min_ttft > target.

    M/D/1 mean wait with service time S: rho S / (2 (1 - rho)); solving for rho with slack
    d = target - min_ttft gives rho = 2d / (S + 2d).
    """
    slack = ttft_target_s - min_ttft_s
    if slack < 0:
        return None
    return 2.0 * slack / (service_s + 2.0 * slack)


def decode_batch_at_itl(
    cost: StepCost, context_tokens: float, itl_target_s: float, max_batch: int
) -> tuple[int, bool]:
    """Largest batch b <= max_batch with step(b, b x context) <= target, and whether b = 1 meets it.

    The step time grows with b (more KV read, more per-sequence overhead), so a bisection finds
    it. When even one sequence misses the target the answer is 1: a replica still serves.
    """
    def step(b: int) -> float:
        return cost.decode_step_s(b, b * context_tokens)

    if max_batch < 1 or step(1) > itl_target_s:
        return 1, False
    lo, hi = 1, max_batch
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if step(mid) <= itl_target_s:
            lo = mid
        else:
            hi = mid - 1
    return lo, True


@dataclass(frozen=True)
class ReplicaCapacity:
    """What one replica sustains at the targets, for one ISL/OSL mix."""

    prefill_tokens_per_s: float  # prompt tokens/s at the TTFT target
    decode_tokens_per_s: float  # output tokens/s at the ITL target
    decode_batch: int
    min_ttft_s: float  # unloaded prefill time of one prompt
    ttft_feasible: bool
    itl_feasible: bool


def replica_capacity(
    cost: StepCost,
    *,
    isl_tokens: float,
    osl_tokens: float,
    ttft_target_s: float,
    itl_target_s: float,
    budget_tokens: int,
    max_num_seqs: int,
    kv_capacity_tokens: int,
) -> ReplicaCapacity:
    """Prefill and decode throughput of one replica that meet the targets."""
    isl = max(1, round(isl_tokens))
    capacity = prefill_capacity_tokens_per_s(cost, isl, budget_tokens)
    min_ttft = prefill_time_s(cost, isl, budget_tokens)
    rho = prefill_utilization_at_ttft(isl / capacity, min_ttft, ttft_target_s)
    # An unmeetable TTFT still gets full-speed prefill; the planner adds Dynamo's SLA floor.
    prefill = capacity * (rho if rho is not None else 1.0)
    context = isl + max(osl_tokens, 1.0) / 2.0
    kv_batch = int(kv_capacity_tokens // context)
    batch, itl_ok = decode_batch_at_itl(
        cost, context, itl_target_s, min(max_num_seqs, max(kv_batch, 1))
    )
    decode = batch / cost.decode_step_s(batch, batch * context)
    return ReplicaCapacity(prefill, decode, batch, min_ttft, rho is not None, itl_ok)


def replicas_for(
    role: str,
    rate_per_s: float,
    isl_tokens: float,
    osl_tokens: float,
    cap: ReplicaCapacity,
    ttft_target_s: float,
    prefill_scale: float = 1.0,
) -> int:
    """Replicas of `role` for the demand (0 for no demand; bounds are the caller's).

    prefill: ceil(rate x isl / prefill throughput), at least Dynamo's `sla_floor`
    ceil(min_ttft / target) when the target cannot be met (reference 5.2);
    decode: ceil(rate x osl / decode throughput); serve: each request costs isl / prefill +
    osl / decode seconds of a replica's time. `prefill_scale` is the planner's
    min(1, actual/expected TTFT) correction of the prefill load.
    """
    if rate_per_s <= 0:
        return 0
    prefill = prefill_scale * rate_per_s * isl_tokens / cap.prefill_tokens_per_s
    decode = rate_per_s * max(osl_tokens, 1.0) / cap.decode_tokens_per_s
    floor = 0 if cap.ttft_feasible else math.ceil(cap.min_ttft_s / ttft_target_s)
    if role == "prefill":
        return max(math.ceil(prefill - 1e-9), floor)
    if role == "decode":
        return math.ceil(decode - 1e-9)
    return max(math.ceil(prefill + decode - 1e-9), floor)
