"""GPU009: a scaler reads a vLLM metric that the target's vLLM image version does not export."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpuscale.audit.context import SIGNAL_KINDS, AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.scalers import signals
from gpuscale.audit.workloads import containers, pod_templates

# serving-engine-metrics.md 1.1-1.3 and the deprecation policy (deprecated in X.Y, hidden in
# X.Y+1, removed in X.Y+2): name -> (first version exporting it, first version hiding it).
# A replacement is dated to the release that deprecated the old name; it may be older, so an
# image older than that is flagged only when the reference says the name was new there.
VERSIONS: dict[str, tuple[tuple[int, int] | None, tuple[int, int] | None]] = {
    "kv_cache_usage_perc": ((0, 9), None),
    "gpu_cache_usage_perc": (None, (0, 10)),
    "inter_token_latency_seconds": ((0, 11), None),
    "time_per_output_token_seconds": (None, (0, 12)),
    "prefix_cache_queries": ((0, 9), None),
    "prefix_cache_hits": ((0, 9), None),
    "gpu_prefix_cache_queries": (None, (0, 10)),
    "gpu_prefix_cache_hits": (None, (0, 10)),
}
_TAG = re.compile(r"vllm[^:@]*:v?(\d+)\.(\d+)")
_SUFFIXES = ("_total", "_bucket", "_sum", "_count")


def _base(metric: str) -> str | None:
    lower = metric.lower()
    for prefix in ("vllm:", "vllm_"):
        if lower.startswith(prefix):
            rest = lower[len(prefix):]
            for suffix in _SUFFIXES:
                if rest.endswith(suffix) and rest[: -len(suffix)] in VERSIONS:
                    return rest[: -len(suffix)]
            return rest if rest in VERSIONS else None
    return None


def engine_version(workload: Manifest) -> tuple[tuple[int, int], bool] | None:
    """(major, minor) of the first vLLM image with a version tag, and whether it re-enables
    hidden metrics (`--show-hidden-metrics-for-version`)."""
    for tpl in pod_templates(workload):
        for container in containers(tpl.template):
            match = _TAG.search(str(container.get("image", "")))
            if match:
                words = " ".join(str(a) for a in (container.get("args") or []) +
                                 (container.get("command") or []))
                return (int(match[1]), int(match[2])), "--show-hidden-metrics-for-version" in words
    return None


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    target = ctx.scale_target(obj)
    if target is None:
        return
    found = engine_version(target)
    if found is None:
        return
    version, shows_hidden = found
    shown = f"{version[0]}.{version[1]}"
    for signal in signals(obj):
        for metric in signal.names:
            base = _base(metric)
            if base is None:
                continue
            since, hidden = VERSIONS[base]
            if since is not None and version < since:
                yield Hit(signal.path, {"metric": metric, "version": shown, "target": target.ref,
                                        "why": f"it first appears in {since[0]}.{since[1]}"})
            elif hidden is not None and version >= hidden and not shows_hidden:
                yield Hit(signal.path, {"metric": metric, "version": shown, "target": target.ref,
                                        "why": f"it is hidden from {hidden[0]}.{hidden[1]} on"})


RULE = Rule(
    id="GPU009",
    name="scaler-metric-not-in-engine-version",
    severity=Severity.ERROR,
    kinds=SIGNAL_KINDS,
    family="signals",
    summary=(
        "A scaler reads a vLLM metric that the vLLM version in its target's image does not "
        "export."
    ),
    message="reads `{metric}`, which vLLM {version} (the image of {target}) does not export: {why}",
    why="vLLM renames metrics on a fixed schedule (deprecated in X.Y, hidden in X.Y+1, removed "
    "in X.Y+2), so a query copied from newer docs reads a series an older image never "
    "exports, and an old query stops working after an upgrade. The query then returns "
    "nothing; KEDA's Prometheus scaler treats that as 0 and scales in while the servers "
    "are saturated.",
    fix="Use the metric name of the vLLM version you run (or upgrade the image), and alert on "
    "`absent(...)` of the metric the autoscaler depends on. A hidden metric can be re-enabled "
    "for one release with `--show-hidden-metrics-for-version=X.Y`.",
    references=(
        "serving-engine-metrics.md sections 1.1-1.3 (renames, deprecation policy)",
        "vllm-project/vllm docs/design/metrics.md",
    ),
    check=check,
)
