"""GPU007: a KEDA trigger divides an already-averaged query by its threshold (AverageValue)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.promql import top_level_aggregator
from gpuscale.audit.scalers import signals


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    for signal in signals(obj):
        if signal.source != "prometheus" or signal.target_type != "AverageValue":
            continue
        agg = top_level_aggregator(signal.query)
        if agg in ("avg", "max", "min", "quantile"):
            yield Hit(signal.path, {"agg": agg})


RULE = Rule(
    id="GPU007",
    name="keda-averagevalue-on-per-pod-average",
    severity=Severity.WARNING,
    kinds=("ScaledObject",),
    family="signals",
    summary=(
        "A KEDA trigger with metricType AverageValue (the "
        "default) scales on a per-pod average."
    ),
    message="trigger query is an `{agg}(...)` across pods but metricType is AverageValue, so "
    "replicas = ceil({agg} / threshold), which stays at 1-2 however many pods are loaded",
    why="With AverageValue the generated HPA computes `ceil(value / threshold)` regardless of the "
    "current pod count; that is right for a total (`sum`) and wrong for an average or a "
    "maximum, which do not grow with the number of pods.",
    fix="Either return a total (`sum(...)`) with AverageValue, or keep the average and set "
    "`metricType: Value`, which multiplies by the ready pods.",
    references=(
        "layer3-replica-autoscaling.md section 1.3 (External AverageValue vs Value)",
        "serving-engine-metrics.md section 5.5, pitfall 2",
    ),
    check=check,
)
