"""The rule registry: one module per rule under `rules/<family>/`, listed here in id order.

A duplicate id or name fails at import (kube-linter's registry habit); ids are never reused,
and a renamed id stays resolvable through `REDIRECTS` (ruff's rule_redirects).
"""

from __future__ import annotations

import difflib
import importlib

from gpuscale.audit.model import Rule

_MODULES = (
    "signals.gpu001_gpu_duty_cycle",
    "signals.gpu002_preallocated_memory",
    "signals.gpu003_cpu_memory_of_gpu_pod",
    "signals.gpu004_removed_vllm_metric",
    "signals.gpu005_label_not_emitted",
    "signals.gpu006_query_many_series",
    "signals.gpu007_average_with_averagevalue",
    "signals.gpu008_counter_without_rate",
    "replicas.gpu010_one_scaler_prefill_and_decode",
    "replicas.gpu011_scale_to_zero",
    "replicas.gpu012_hpa_window_shorter_than_cold_start",
    "replicas.gpu013_keda_cooldown_shorter_than_cold_start",
    "replicas.gpu014_competing_autoscalers",
    "nodes.gpu020_consolidates_underutilized_gpu_nodes",
    "nodes.gpu021_consolidates_too_soon",
    "nodes.gpu022_no_gpu_limit",
    "nodes.gpu023_no_gpu_taint",
    "nodes.gpu024_budget_allows_all_nodes",
    "nodes.gpu025_job_without_do_not_disrupt",
    "nodes.gpu026_gpu_node_disk_too_small",
    "nodes.gpu027_ca_provision_timeout_too_short",
    "nodes.gpu028_ca_scale_down_too_soon",
    "nodes.gpu029_budget_schedule_unusable",
    "scheduling.gpu030_multi_pod_without_gang",
    "scheduling.gpu031_min_member_below_pods_needed",
    "scheduling.gpu032_pod_larger_than_any_node",
    "scheduling.gpu033_tensor_parallel_beyond_nvlink",
    "queues.gpu040_queue_limit_forbids_resource",
    "queues.gpu041_inference_preemptible_by_training",
    "availability.gpu050_no_engine_readiness_probe",
    "availability.gpu051_no_pod_disruption_budget",
)

# Old id -> current id. Add an entry when a rule is renamed or merged; never delete one.
REDIRECTS: dict[str, str] = {}


def build_registry(modules: tuple[str, ...] = _MODULES) -> dict[str, Rule]:
    registry: dict[str, Rule] = {}
    names: set[str] = set()
    for module in modules:
        rule = importlib.import_module(f"{__name__}.{module}").RULE
        if rule.id in registry or rule.id in REDIRECTS:
            raise ValueError(f"duplicate rule id {rule.id} in {module}")
        if rule.name in names:
            raise ValueError(f"duplicate rule name {rule.name} in {module}")
        registry[rule.id] = rule
        names.add(rule.name)
    return registry


RULES: dict[str, Rule] = build_registry()


def resolve(key: str, registry: dict[str, Rule] | None = None,
            redirects: dict[str, str] | None = None) -> Rule:
    """A rule by id, renamed id or name; an unknown key suggests close matches."""
    registry = RULES if registry is None else registry
    redirects = REDIRECTS if redirects is None else redirects
    key = key.strip()
    upper = redirects.get(key.upper(), key.upper())
    if upper in registry:
        return registry[upper]
    for rule in registry.values():
        if rule.name == key:
            return rule
    known = list(registry) + [r.name for r in registry.values()]
    close = difflib.get_close_matches(key, known, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise KeyError(f"unknown rule {key!r}{hint}")
