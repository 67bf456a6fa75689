"""Layer 3: replica autoscaling (HPA autoscaling/v2, KEDA, Knative KPA, planners) and the
signals they read.

Belongs here: pure decision logic over `AutoscalerView`. Must not touch engines or nodes.

The registry `AUTOSCALERS` maps the scenario YAML `kind:` to a `PolicySpec`; `AutoscalerSpec`
is the pydantic union a scenario embeds, and `build_autoscalers` turns one into the periodic
controllers the engine runs (KEDA gives two: its operator loop and the HPA it generates).
"""

from __future__ import annotations

from typing import Any

# The planners', KPA's and WVA's controllers load when a run builds one (their `*_params`
# modules hold what the scenario's union needs); HPA and KEDA, which most scenarios use, and
# the one-class `fixed` load with the layer.
from gpuscale.autoscaling import (
    fixed,
    hpa,
    keda,
    kpa_params,
    planner_load_params,
    planner_sla_params,
    wva_params,
)
from gpuscale.autoscaling.base import (
    AutoscalerContext,
    AutoscalerView,
    PodMetrics,
    PolicySpec,
    ReplicaAutoscaler,
)
from gpuscale.autoscaling.fixed import FixedParams
from gpuscale.autoscaling.hpa import HpaParams
from gpuscale.autoscaling.keda import KedaParams
from gpuscale.autoscaling.kpa_params import KpaParams
from gpuscale.autoscaling.planner_load_params import LoadPlannerParams
from gpuscale.autoscaling.planner_sla_params import SlaPlannerParams
from gpuscale.autoscaling.wva_params import WvaParams
from gpuscale.registry import Registry, params_union

AUTOSCALERS: Registry[PolicySpec[Any]] = Registry("autoscaler kind")
for _spec in (hpa.SPEC, keda.SPEC, fixed.SPEC, kpa_params.SPEC, planner_sla_params.SPEC,
              planner_load_params.SPEC, wva_params.SPEC):
    AUTOSCALERS.register(_spec.name, _spec)

# The scenario's `autoscaler:` union, derived from the registry (one list of kinds).
AutoscalerSpec = params_union(AUTOSCALERS)


def promql_queries(spec: Any) -> list[str]:
    """Every PromQL query (`MetricQuery.promql`) in an autoscaler's params, in order: the
    series the run's Prometheus must collect follow from them."""
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("promql"), str):
                out.append(node["promql"])
            for value in node.values():
                walk(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                walk(value)

    if spec is not None:
        walk(spec.model_dump())
    return out


def get_policy(kind: str) -> PolicySpec[Any]:
    """The registry entry for `kind`; an unknown name lists the known ones."""
    return AUTOSCALERS.require(kind, field="kind")


def build_autoscalers(
    spec: Any, context: AutoscalerContext | None = None
) -> list[ReplicaAutoscaler]:
    """Controllers for one validated params model (any member of `AutoscalerSpec`).

    `context` (role, hardware, engine limits, SLO) reaches only policies that declare
    `needs_context`; the engine always passes it.
    """
    policy = get_policy(spec.kind)
    if policy.needs_context:
        return list(policy.build(spec, context or AutoscalerContext()))
    return list(policy.build(spec))


__all__ = [
    "AUTOSCALERS",
    "AutoscalerContext",
    "AutoscalerSpec",
    "AutoscalerView",
    "FixedParams",
    "HpaParams",
    "KedaParams",
    "KpaParams",
    "LoadPlannerParams",
    "PodMetrics",
    "PolicySpec",
    "ReplicaAutoscaler",
    "SlaPlannerParams",
    "WvaParams",
    "build_autoscalers",
    "get_policy",
    "promql_queries",
]
