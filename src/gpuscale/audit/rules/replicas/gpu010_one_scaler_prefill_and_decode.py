"""GPU010: one autoscaler sizes both the prefill and the decode role of disaggregated serving."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext, namespace_of
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.promql import selectors
from gpuscale.audit.scalers import signals
from gpuscale.audit.workloads import roles

# gpuscale_io_scaler_target: the per-role label gpuscale plan's ServiceMonitor copies
# from the Service.
ROLE_LABELS = (
    "role",
    "service",
    "component",
    "llm_d_ai_role",
    "dynamo_component",
    "sub_component_type",
    "gpuscale_io_scaler_target",
)


def _query_roles(query: str) -> set[str] | None:
    """Roles a query's selectors filter on; None when no selector filters on a role."""
    found: set[str] | None = None
    for selector in selectors(query):
        for label, (_, value) in selector.labels.items():
            if label in ROLE_LABELS:
                found = (found or set()) | {r for r in ("prefill", "decode") if r in value.lower()}
    return found


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    target = ctx.scale_target(obj)
    if target is None:
        return
    target_roles = roles(target)
    if target_roles == {"prefill", "decode"}:
        yield Hit(("spec", "scaleTargetRef"), {"what": f"its target {target.ref} runs both roles"})
        return
    if not target_roles:
        return
    ns = namespace_of(obj)
    other = {"prefill": "decode", "decode": "prefill"}[next(iter(target_roles))]
    peers = [w for w in ctx.objects if namespace_of(w) == ns and other in roles(w)]
    for signal in signals(obj):
        if not signal.query:
            continue
        query_roles = _query_roles(signal.query)
        if query_roles == {"prefill", "decode"} or (query_roles is None and peers):
            reason = ("the query selects both roles" if query_roles else
                      f"the query has no role filter while {peers[0].ref} serves the {other} role "
                      "in the same namespace")
            yield Hit(signal.path, {"what": f"it sizes {target.ref} ({next(iter(target_roles))}) "
                                            f"from a signal of both roles: {reason}"})


RULE = Rule(
    id="GPU010",
    name="one-autoscaler-over-prefill-and-decode",
    severity=Severity.ERROR,
    kinds=("HorizontalPodAutoscaler", "ScaledObject"),
    family="replicas",
    summary="One HPA or ScaledObject sizes prefill and decode workers together.",
    message="one autoscaler for both disaggregated roles: {what}",
    why="Prefill is compute-bound and its load is prompt tokens per second (it drives TTFT); "
    "decode is memory-bandwidth bound and its load is concurrent sequences and KV cache "
    "(it drives ITL). They saturate at different times and need different replica ratios. "
    "One scaler over both grows the idle role with the busy one, or misses the busy one "
    "because the other dilutes the average.",
    fix="Give each role its own workload and its own scaler on a role-filtered signal (prefill: "
    "queued prompt tokens or TTFT; decode: KV-cache use or ITL), or use a P/D-aware planner "
    "(Dynamo Planner, llm-d WVA, the LWS DisaggregatedSetRoleScaler).",
    references=(
        "layer3-replica-autoscaling.md section 5 (Dynamo Planner scales prefill and decode "
        "separately)",
        'serving-engine-metrics.md section 5.3 (Dynamo KEDA example filters `service="prefill"`)',
    ),
    check=check,
)
