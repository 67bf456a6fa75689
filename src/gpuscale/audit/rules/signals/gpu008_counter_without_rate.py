"""GPU008: a scaler reads a counter or histogram bucket directly instead of its rate."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpuscale.audit.context import SIGNAL_KINDS, AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.promql import metric_names
from gpuscale.audit.scalers import signals

_CUMULATIVE = re.compile(r"(_total|_bucket|_count|_sum)$")
_RATE = re.compile(r"\b(rate|irate|increase|delta|deriv|resets|changes)\s*\(")


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    for signal in signals(obj):
        if not signal.query or _RATE.search(signal.query):
            continue
        for metric in metric_names(signal.query):
            # vLLM's iteration_tokens_total is a histogram despite its suffix; still cumulative.
            if _CUMULATIVE.search(metric):
                yield Hit(signal.path, {"metric": metric})
                break


RULE = Rule(
    id="GPU008", name="scaler-reads-counter-without-rate", severity=Severity.WARNING,
    kinds=SIGNAL_KINDS, family="signals",
    summary="A scaler query reads a cumulative counter or histogram series without rate().",
    message="reads cumulative `{metric}` without rate()/increase(); the value only grows, so the "
            "autoscaler scales out once and never back in",
    why="Counters (`*_total`) and histogram parts (`*_bucket`, `*_sum`, `*_count`) count since the "
        "process started. Their raw value tracks uptime, not load, and drops to zero on restart.",
    fix="Wrap counters in `rate(...[1m])` and histograms in "
        "`histogram_quantile(q, sum by (le) (rate(..._bucket[w])))`.",
    references=("serving-engine-metrics.md section 5.5, pitfall 5",
                "serving-engine-metrics.md section 1.2 (counters exposed with `_total`)"),
    check=check,
)
