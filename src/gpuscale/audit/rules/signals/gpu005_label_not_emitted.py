"""GPU005: a query filters a vLLM metric on a label vLLM does not emit (`model` vs `model_name`)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import SIGNAL_KINDS, AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.promql import selectors
from gpuscale.audit.scalers import signals

# serving-engine-metrics.md section 1: vLLM engine metrics carry `model_name` and `engine`
# (plus `finished_reason` on request_success); everything else comes from the scrape config.
VLLM_LABELS = {"model_name", "engine", "finished_reason", "le"}
# Labels Prometheus' Kubernetes service discovery and the operator usually attach.
SCRAPE_LABELS = {"namespace", "pod", "container", "service", "job", "instance", "endpoint",
                 "exported_namespace", "node", "__name__"}
# Labels people write that vLLM never emits, with the one they meant.
MISTAKES = {"model": "model_name", "model_id": "model_name", "served_model_name": "model_name"}


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    for signal in signals(obj):
        if not signal.query:
            continue
        for selector in selectors(signal.query):
            if not selector.metric.startswith("vllm:"):
                continue
            for label in selector.labels:
                if label in MISTAKES:
                    yield Hit(signal.path, {"metric": selector.metric, "label": label,
                                            "right": MISTAKES[label]})


RULE = Rule(
    id="GPU005", name="query-filters-on-label-vllm-does-not-emit", severity=Severity.WARNING,
    kinds=SIGNAL_KINDS, family="signals",
    summary="A scaler query filters a vLLM metric on a label that vLLM does not emit.",
    message="filters `{metric}` on label `{label}`; vLLM labels its metrics `{right}`, so unless "
            "the scrape config adds `{label}` the query matches no series",
    why="vLLM's Prometheus logger labels engine metrics with `model_name` and `engine` only. A "
        "selector such as `vllm:num_requests_waiting{model=\"llama\"}` (as in the production-stack "
        "Helm chart) matches nothing unless a relabelling rule copies the served model into a "
        "`model` label. An empty result reads as 0 for KEDA, so the workload never scales out.",
    fix="Filter on `model_name`, or add the relabelling that creates `model` and suppress this "
        "finding on the object with `gpuscale.io/ignore: GPU005`.",
    references=("serving-engine-metrics.md section 1 (labels `model_name`, `engine`)",
                "serving-engine-metrics.md section 5.1 (production-stack chart uses `model`)"),
    check=check,
)
