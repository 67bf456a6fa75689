"""GPU004: a scaler or recording rule reads a vLLM metric that vLLM renamed or removed."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import SIGNAL_KINDS, AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.promql import metric_names
from gpuscale.audit.scalers import signals

# serving-engine-metrics.md sections 1.1-1.3: old name -> (replacement, history).
RENAMED = {
    "gpu_cache_usage_perc": (
        "vllm:kv_cache_usage_perc",
        "deprecated in 0.9, hidden in 0.10, gone by 0.12",
    ),
    "time_per_output_token_seconds": (
        "vllm:inter_token_latency_seconds",
        "deprecated in 0.11, hidden in 0.12, removal planned for 0.13",
    ),
    "gpu_prefix_cache_queries": ("vllm:prefix_cache_queries_total", "deprecated in 0.9"),
    "gpu_prefix_cache_hits": ("vllm:prefix_cache_hits_total", "deprecated in 0.9"),
    "num_requests_swapped": ("nothing (the V1 engine has no swap)", "removed with the V0 engine"),
    "cpu_cache_usage_perc": (
        "nothing (the V1 engine has no CPU swap space)",
        "removed with the V0 engine",
    ),
}


def _old_name(metric: str) -> str | None:
    """`vllm:gpu_cache_usage_perc` or its adapter spelling `vllm_gpu_cache_usage_perc`."""
    lower = metric.lower()
    for prefix in ("vllm:", "vllm_"):
        if lower.startswith(prefix):
            rest = lower[len(prefix):]
            for old in RENAMED:
                if rest == old or rest.startswith(old + "_"):  # _bucket, _sum, _total ...
                    return old
    return None


def _queries(obj: Manifest) -> Iterator[tuple[tuple, list[str]]]:
    if obj.kind == "PrometheusRule":
        for g, group in enumerate(obj.get("spec", "groups") or []):
            for r, rule in enumerate((group or {}).get("rules") or []):
                expr = str((rule or {}).get("expr", ""))
                yield ("spec", "groups", g, "rules", r, "expr"), metric_names(expr)
        return
    for signal in signals(obj):
        yield signal.path, signal.names


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    for path, names in _queries(obj):
        for metric in names:
            old = _old_name(metric)
            if old:
                new, history = RENAMED[old]
                yield Hit(path, {"metric": metric, "new": new, "history": history})


RULE = Rule(
    id="GPU004",
    name="scaler-reads-removed-vllm-metric",
    severity=Severity.ERROR,
    kinds=(*SIGNAL_KINDS, "PrometheusRule"),
    family="signals",
    summary=(
        "A scaler query or recording rule reads a vLLM metric name that vLLM has deprecated or "
        "removed."
    ),
    message="reads `{metric}` ({history}); current vLLM exports {new}",
    why="vLLM deprecates a metric in one minor release, hides it in the next and removes it in the "
    "one after. When the series disappears the query returns nothing; KEDA's Prometheus "
    "scaler treats an empty result as 0 (`ignoreNullValues` defaults to true) and scales in "
    "while the servers are saturated.",
    fix="Query the replacement name and pin the vLLM version the query was written for; add an "
    "alert on `absent(...)` of the metric the autoscaler depends on.",
    references=(
        "serving-engine-metrics.md sections 1.1-1.3 (renames and deprecation policy)",
        "serving-engine-metrics.md section 5.5, pitfall 4",
        "vllm-project/vllm docs/design/metrics.md",
    ),
    check=check,
)
