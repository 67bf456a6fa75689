"""HPA `behavior` (autoscaling/v2): stabilization windows and rate policies, as small pure
functions.

Every function mirrors one function of kubernetes/kubernetes
`pkg/controller/podautoscaler/horizontal.go` (named in its docstring) so the timing edge cases
match: a recommendation exactly at a window's cutoff counts on the legacy path
(`!Before(cutoff)`) but not on the behavior path (`After(cutoff)`); a scale event exactly
`periodSeconds` old no longer counts.
Reference: ../shared/reference/layer3-replica-autoscaling.md section 1.8.

The controller's memory (recommendations, scale events) is kept as tuples of `Stamped` and
updated the way the controller does it: the last entry that has aged out is overwritten,
otherwise the new one is appended. That keeps the lists bounded by window / sync period.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SelectPolicy = Literal["Max", "Min", "Disabled"]


class ScalingPolicy(BaseModel):
    """One rate limit: at most `value` pods (or percent) changed per `period_s`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["Pods", "Percent"] = Field(
        description="Pods: absolute count; Percent: of the replicas at period start."
    )
    value: int = Field(gt=0, description="Pods or percent allowed per period (API: > 0).")
    period_s: int = Field(gt=0, le=1800, description="Look-back period in seconds (API: 1-1800).")


class ScalingRules(BaseModel):
    """`HPAScalingRules` for one direction; unset fields take the API defaults.

    `resolve_rules` fills them in."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stabilization_window_s: int | None = Field(
        default=None,
        ge=0,
        le=3600,
        description="Window over past recommendations, s. Unset: 0 for scaleUp, the controller's "
        "downscale stabilization (300 s) for scaleDown (defaults.go, "
        "maybeInitScaleDownStabilizationWindow).",
    )
    select_policy: SelectPolicy | None = Field(
        default=None,
        description=(
            "Max (most permissive policy, default), Min, or "
            "Disabled (no scaling this way)."
        ),
    )
    policies: tuple[ScalingPolicy, ...] | None = Field(
        default=None,
        min_length=1,
        description=(
            "Rate policies. Unset: scaleUp Pods 4/15 s + Percent 100/15 s; scaleDown Percent "
            "100/15 s (defaults.go)."
        ),
    )
    tolerance_frac: float | None = Field(
        default=None,
        ge=0,
        description=(
            "Per-direction tolerance (KEP-4951, alpha 1.33, beta 1.34). Unset: the controller "
            "tolerance (0.1)."
        ),
    )


class Behavior(BaseModel):
    """`spec.behavior`; its presence switches the HPA from the legacy path to the behavior path."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scale_up: ScalingRules | None = Field(
        default=None, description="Scale-up rules; unset = defaults."
    )
    scale_down: ScalingRules | None = Field(
        default=None, description="Scale-down rules; unset = defaults."
    )


@dataclass(frozen=True)
class ResolvedRules:
    """`ScalingRules` with every default filled in."""

    stabilization_window_s: float
    select_policy: SelectPolicy
    policies: tuple[ScalingPolicy, ...]
    tolerance_frac: float | None

    @property
    def longest_period_s(self) -> int:
        return max(p.period_s for p in self.policies)


# kubernetes/kubernetes pkg/apis/autoscaling/v2/defaults.go (15 s periods; reference 1.8 note).
_DEFAULT_UP_POLICIES = (
    ScalingPolicy(type="Pods", value=4, period_s=15),
    ScalingPolicy(type="Percent", value=100, period_s=15),
)
_DEFAULT_DOWN_POLICIES = (ScalingPolicy(type="Percent", value=100, period_s=15),)


def resolve_rules(
    rules: ScalingRules | None, *, scale_up: bool, downscale_stabilization_s: float
) -> ResolvedRules:
    """Fill API defaults (GenerateHPAScaleUpRules / GenerateHPAScaleDownRules)."""
    rules = rules or ScalingRules()
    if rules.stabilization_window_s is not None:
        window = float(rules.stabilization_window_s)
    else:
        window = 0.0 if scale_up else float(downscale_stabilization_s)
    policies = rules.policies or (_DEFAULT_UP_POLICIES if scale_up else _DEFAULT_DOWN_POLICIES)
    return ResolvedRules(
        window, rules.select_policy or "Max", tuple(policies), rules.tolerance_frac
    )


@dataclass(frozen=True)
class Stamped:
    """A timestamped integer: a recommendation or a scale event's replica change."""

    time_s: float
    value: int


def clamp(replicas: int, min_replicas: int, max_replicas: int) -> int:
    """Bound a replica count to [min, max]."""
    return max(min_replicas, min(max_replicas, replicas))


def replace_or_append(
    entries: tuple[Stamped, ...], is_old: Callable[[Stamped], bool], new: Stamped
) -> tuple[Stamped, ...]:
    """Overwrite the last aged-out entry with `new`, else append it (the controller's reuse
    rule)."""
    old = [i for i, e in enumerate(entries) if is_old(e)]
    if old:
        i = old[-1]
        return entries[:i] + (new,) + entries[i + 1 :]
    return entries + (new,)


def stabilize_legacy(
    recs: tuple[Stamped, ...], now_s: float, proposal: int, window_s: float
) -> tuple[int, tuple[Stamped, ...]]:
    """`stabilizeRecommendation`: max of the proposals not older than the window, then record this
    one."""
    cutoff = now_s - window_s
    best = proposal
    last_old = -1  # `replace_or_append`'s last aged-out entry, found in the same pass
    for i, r in enumerate(recs):
        if r.time_s >= cutoff:  # Go: !rec.timestamp.Before(cutoff)
            if r.value > best:  # max(best, r.value)
                best = r.value
        elif r.time_s < cutoff:
            last_old = i
    new = Stamped(now_s, proposal)
    if last_old >= 0:
        return best, recs[:last_old] + (new,) + recs[last_old + 1:]
    return best, recs + (new,)


def stabilize_with_behavior(
    recs: tuple[Stamped, ...],
    now_s: float,
    current: int,
    proposal: int,
    up: ResolvedRules,
    down: ResolvedRules,
) -> tuple[int, tuple[Stamped, ...]]:
    """`stabilizeRecommendationWithBehaviors`: scale up only to the smallest, down only to the
    largest recent proposal."""
    up_cut = now_s - up.stabilization_window_s
    down_cut = now_s - down.stabilization_window_s
    up_floor = down_ceil = proposal
    for r in recs:
        if r.time_s > up_cut:
            up_floor = min(up_floor, r.value)
        if r.time_s > down_cut:
            down_ceil = max(down_ceil, r.value)
    result = max(current, up_floor)
    result = min(result, down_ceil)
    recs = replace_or_append(
        recs, lambda r: r.time_s < up_cut and r.time_s < down_cut, Stamped(now_s, proposal)
    )
    return result, recs


def change_in_period(events: tuple[Stamped, ...], now_s: float, period_s: float) -> int:
    """`getReplicasChangePerPeriod`: replicas changed by events younger than the period."""
    cutoff = now_s - period_s
    return sum(e.value for e in events if e.time_s > cutoff)


def _period_start(
    current: int,
    up_events: tuple[Stamped, ...],
    down_events: tuple[Stamped, ...],
    now_s: float,
    period_s: float,
) -> int:
    return (
        current
        - change_in_period(up_events, now_s, period_s)
        + change_in_period(down_events, now_s, period_s)
    )


def policy_limit(
    current: int,
    up_events: tuple[Stamped, ...],
    down_events: tuple[Stamped, ...],
    rules: ResolvedRules,
    now_s: float,
    *,
    scale_up: bool,
) -> int:
    """The count the policies allow now: `calculateScaleUpLimitWithScalingRules` (scale_up) or
    `calculateScaleDownLimitWithBehaviors`. Max picks the most permissive policy, Min the least."""
    if rules.select_policy == "Disabled":
        return current
    permissive = rules.select_policy != "Min"
    pick = max if permissive == scale_up else min
    limits = []
    for p in rules.policies:
        start = _period_start(current, up_events, down_events, now_s, p.period_s)
        if p.type == "Pods":
            limits.append(start + p.value if scale_up else start - p.value)
        elif scale_up:  # rounded up so a small target can still grow (comment in horizontal.go)
            limits.append(math.ceil(float(start) * (1 + float(p.value) / 100)))
        else:  # Go's int32(float64) conversion truncates toward zero, as int() does
            limits.append(int(float(start) * (1 - float(p.value) / 100)))
    return pick(limits)


def rate_limited(
    current: int, desired: int, min_replicas: int, max_replicas: int,
    up_events: tuple[Stamped, ...], down_events: tuple[Stamped, ...],
    up: ResolvedRules, down: ResolvedRules, now_s: float,
) -> int:
    """`convertDesiredReplicasWithBehaviorRate`: apply the policies and the min/max bounds."""
    if desired > current:
        limit = max(
            policy_limit(current, up_events, down_events, up, now_s, scale_up=True), current
        )
        return min(desired, max_replicas, limit)
    if desired < current:
        limit = min(
            policy_limit(current, up_events, down_events, down, now_s, scale_up=False), current
        )
        return max(desired, min_replicas, limit)
    return desired


def legacy_scale_up_limit(current: int) -> int:
    """`calculateScaleUpLimit`: max(2 x current, 4) (scaleUpLimitFactor 2.0, scaleUpLimitMinimum
    4.0)."""
    return int(max(2.0 * current, 4.0))


def legacy_bounded(current: int, desired: int, min_replicas: int, max_replicas: int) -> int:
    """`convertDesiredReplicasWithRules`: cap the scale-up rate, then bound to [min, max]."""
    upper = min(max_replicas, legacy_scale_up_limit(current))
    if desired < min_replicas:
        return min_replicas
    return min(desired, upper)


def store_scale_event(
    events: tuple[Stamped, ...], now_s: float, change: int, longest_period_s: float
) -> tuple[Stamped, ...]:
    """`storeScaleEvent` for one direction: events older than the longest policy period are
    reused."""
    cutoff = now_s - longest_period_s
    return replace_or_append(events, lambda e: e.time_s < cutoff, Stamped(now_s, change))
