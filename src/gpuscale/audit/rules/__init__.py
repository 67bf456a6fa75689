"""The rule registry: one module per rule under `rules/<family>/`, listed here in id order.

`RULES` is a `gpuscale.registry.Registry` keyed by id (the helper every layer uses): a
duplicate id or name fails at import (kube-linter's registry habit); ids are never reused, and
a renamed id stays resolvable through `REDIRECTS` (ruff's rule_redirects).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping

from gpuscale.audit.model import Rule
from gpuscale.registry import Registry

_MODULES = (
    "signals.gpu001_gpu_duty_cycle",
    "signals.gpu002_preallocated_memory",
    "signals.gpu003_cpu_memory_of_gpu_pod",
    "signals.gpu004_removed_vllm_metric",
    "signals.gpu005_label_not_emitted",
    "signals.gpu006_query_many_series",
    "signals.gpu007_average_with_averagevalue",
    "signals.gpu008_counter_without_rate",
    "signals.gpu009_metric_not_in_engine_version",
    "replicas.gpu010_one_scaler_prefill_and_decode",
    "replicas.gpu011_scale_to_zero",
    "replicas.gpu012_hpa_window_shorter_than_cold_start",
    "replicas.gpu013_keda_cooldown_shorter_than_cold_start",
    "replicas.gpu014_competing_autoscalers",
    "replicas.gpu015_windows_longer_than_traffic_gaps",
    "nodes.gpu020_consolidates_underutilized_gpu_nodes",
    "nodes.gpu021_consolidates_too_soon",
    "nodes.gpu022_no_gpu_limit",
    "nodes.gpu023_no_gpu_taint",
    "nodes.gpu024_budget_allows_all_nodes",
    "nodes.gpu025_job_without_do_not_disrupt",
    "nodes.gpu026_gpu_node_disk_too_small",
    "nodes.gpu027_ca_provision_timeout_too_short",
    "nodes.gpu028_ca_scale_down_too_soon",
    "nodes.gpu029_balanced_consolidation_on_gpu_pool",
    "scheduling.gpu030_multi_pod_without_gang",
    "scheduling.gpu031_min_member_below_pods_needed",
    "scheduling.gpu032_pod_larger_than_any_node",
    "scheduling.gpu033_tensor_parallel_beyond_nvlink",
    "nodes.gpu034_budget_schedule_unusable",
    "scheduling.gpu035_parallelism_exceeds_pod_gpus",
    "queues.gpu040_queue_limit_forbids_resource",
    "queues.gpu041_inference_preemptible_by_training",
    "availability.gpu050_no_engine_readiness_probe",
    "availability.gpu051_no_pod_disruption_budget",
    "availability.gpu052_spot_serves_slo_critical",
)

# Old id -> current id. Add an entry when a rule is renamed or merged; never delete one.
REDIRECTS: dict[str, str] = {}


def build_registry(modules: tuple[str, ...] = _MODULES) -> Registry[Rule]:
    registry: Registry[Rule] = Registry("rule id")
    names: Registry[str] = Registry("rule name")
    for module in modules:
        rule = importlib.import_module(f"{__name__}.{module}").RULE
        if rule.id in REDIRECTS:
            raise ValueError(f"duplicate rule id {rule.id!r}: it is redirected ({module})")
        registry.register(rule.id, rule)
        names.register(rule.name, rule.id)
    return registry


RULES: Registry[Rule] = build_registry()


def resolve(key: str, registry: Mapping[str, Rule] | None = None,
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
