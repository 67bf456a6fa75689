"""Layer 3: replica autoscaling (HPA autoscaling/v2, KEDA, planners) and the signals they read.

Belongs here: pure decision logic over `AutoscalerView`. Must not touch engines or nodes.

The registry `AUTOSCALERS` maps the scenario YAML `kind:` to a `PolicySpec`; `AutoscalerSpec`
is the pydantic union a scenario embeds, and `build_autoscalers` turns one into the periodic
controllers the engine runs (KEDA gives two: its operator loop and the HPA it generates).
"""

from __future__ import annotations

import difflib
from types import MappingProxyType
from typing import Annotated, Any, Iterable, Mapping, Union

from pydantic import Field

from ..errors import UserInputError
from . import fixed, hpa, keda
from .base import AutoscalerView, PodMetrics, PolicySpec, ReplicaAutoscaler
from .fixed import FixedParams
from .hpa import HpaParams
from .keda import KedaParams


def _index(specs: Iterable[PolicySpec[Any]]) -> Mapping[str, PolicySpec[Any]]:
    """Key specs by name; a duplicate is a programming error and fails at import."""
    out: dict[str, PolicySpec[Any]] = {}
    for spec in specs:
        if spec.name in out:
            raise ValueError(f"duplicate autoscaler kind {spec.name!r}")
        out[spec.name] = spec
    return MappingProxyType(out)


AUTOSCALERS: Mapping[str, PolicySpec[Any]] = _index([hpa.SPEC, keda.SPEC, fixed.SPEC])

AutoscalerSpec = Annotated[Union[HpaParams, KedaParams, FixedParams], Field(discriminator="kind")]


def get_policy(kind: str) -> PolicySpec[Any]:
    """The registry entry for `kind`; an unknown name lists the known ones."""
    try:
        return AUTOSCALERS[kind]
    except KeyError:
        known = sorted(AUTOSCALERS)
        close = difflib.get_close_matches(kind, known, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UserInputError(f"unknown autoscaler kind {kind!r}; known: {', '.join(known)}.{hint}", field="kind") from None


def build_autoscalers(spec: Any) -> list[ReplicaAutoscaler]:
    """Controllers for one validated params model (any member of `AutoscalerSpec`)."""
    return list(get_policy(spec.kind).build(spec))


__all__ = [
    "AUTOSCALERS",
    "AutoscalerSpec",
    "AutoscalerView",
    "FixedParams",
    "HpaParams",
    "KedaParams",
    "PodMetrics",
    "PolicySpec",
    "ReplicaAutoscaler",
    "build_autoscalers",
    "get_policy",
]
