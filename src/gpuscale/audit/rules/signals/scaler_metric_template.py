"""Template: a scaler on a GPU workload reads a metric that does not track serving load.

Instances differ only by the metric names and the reason (kube-linter's check templates).
"""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import SIGNAL_KINDS, AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.scalers import signals
from gpuscale.audit.workloads import is_gpu_inference

METRICS_REF = "serving-engine-metrics.md section 8 (DCGM GPU metrics)"


def scaler_metric_rule(*, id: str, name: str, metrics: tuple[str, ...], severity: Severity,
                       summary: str, what: str, why: str, fix: str,
                       references: tuple[str, ...]) -> Rule:
    wanted = tuple(m.lower() for m in metrics)

    def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
        target = ctx.scale_target(obj)
        if target is not None and not is_gpu_inference(target):
            return  # a DCGM metric on a known non-inference target (e.g. batch) is not this trap
        for signal in signals(obj):
            for metric in signal.names:
                # prometheus-adapter often renames series (lower case, prefixes): match by substring
                if any(w in metric.lower() for w in wanted):
                    yield Hit(signal.path, {"metric": metric, "what": what,
                                            "target": target.ref if target else "its target"})

    return Rule(
        id=id,
        name=name,
        severity=severity,
        kinds=SIGNAL_KINDS,
        summary=summary,
        message="scales {target} on `{metric}`, {what}",
        why=why,
        fix=fix,
        references=references,
        check=check,
        family="signals",
    )
