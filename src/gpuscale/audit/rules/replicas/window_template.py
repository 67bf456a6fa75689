"""Template: a scale-down delay shorter than the workload's cold start (per-instance field)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest, PathKey
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.workloads import cold_start_s, is_slo_critical

# Reads (seconds, path, label) of the delay from the scaler, or None when it does not apply.
DelayReader = Callable[[Manifest], tuple[float, PathKey, str] | None]


def window_rule(*, id: str, name: str, kind: str, read: DelayReader, summary: str, why: str,
                fix: str, references: tuple[str, ...]) -> Rule:
    def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
        target = ctx.scale_target(obj)
        if target is None or not is_slo_critical(target):
            return
        found = read(obj)
        if found is None:
            return
        delay, path, label = found
        cold, source = cold_start_s(target)
        if delay < cold:
            yield Hit(path, {"label": label, "delay": f"{delay:.0f}", "cold": f"{cold:.0f}",
                             "source": source, "target": target.ref})

    return Rule(id=id, name=name, severity=Severity.WARNING, kinds=(kind,), family="replicas",
                summary=summary,
                message="{label} is {delay} s, shorter than the {cold} s cold start of {target} "
                        "({source})",
                why=why, fix=fix, references=references, check=check)
