"""GPU003: an autoscaler on CPU or memory of a pod whose work happens on the GPU."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import SIGNAL_KINDS, AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.scalers import signals
from gpuscale.audit.workloads import is_gpu_inference


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    target = ctx.scale_target(obj)
    if target is None or not is_gpu_inference(target):
        return
    for signal in signals(obj):
        if signal.source == "resource" and signal.name in ("cpu", "memory"):
            implicit = (
                " (the HPA default when `spec.metrics` is empty)"
                if signal.path == ("spec",)
                else ""
            )
            yield Hit(
                signal.path, {"resource": signal.name, "target": target.ref, "implicit": implicit}
            )


RULE = Rule(
    id="GPU003",
    name="scales-gpu-pod-on-cpu-or-memory",
    severity=Severity.WARNING,
    kinds=SIGNAL_KINDS,
    family="signals",
    summary="An HPA or ScaledObject scales a GPU inference workload on CPU or memory.",
    message="scales GPU inference {target} on {resource}{implicit}",
    why="An LLM server's load is on the GPU: its CPU use is a tokenizer and an HTTP loop, and its "
    "host memory holds a fixed copy of weights. Neither rises with queued requests or KV-cache "
    "pressure, so the autoscaler reacts late or never. An HPA with no `metrics` defaults to "
    "CPU at 80 %, the same trap unseen.",
    fix="Scale on an engine signal (queue depth, KV-cache use, TTFT) through KEDA's Prometheus "
    "scaler or an External metric.",
    references=(
        "layer3-replica-autoscaling.md section 1.2 (metric sources; empty metrics default to cpu "
        "80 %)",
        "serving-engine-metrics.md section 9 (reaction chain)",
    ),
    check=check,
)
