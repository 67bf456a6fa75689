"""Cross-object lookups rules need: scale targets, PodDisruptionBudgets, queues, NodePools."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from gpuscale.audit.loader import Manifest
from gpuscale.audit.values import BadValue

# Kinds that own pods, in the form rules see them.
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "LeaderWorkerSet", "Job", "RayCluster",
                  "ReplicaSet", "CronJob", "Pod", "LLMInferenceService")
# Objects that set a workload's replicas from a signal. An LLMInferenceService is its own
# scaler (its `scaling` section) as well as a workload.
SCALER_KINDS = ("HorizontalPodAutoscaler", "ScaledObject", "PodAutoscaler")
SIGNAL_KINDS = (*SCALER_KINDS, "LLMInferenceService")


def namespace_of(obj: Manifest) -> str:
    """Namespaced objects without `metadata.namespace` land in the kubectl default."""
    return obj.namespace or "default"


def selector_matches(selector: dict | None, labels: dict) -> bool:
    """A LabelSelector (matchLabels + matchExpressions) against a label set; empty = all."""
    if not isinstance(selector, dict):
        return False
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, dict):
        raise BadValue(f"selector.matchLabels: expected a mapping of labels, got {match_labels!r}")
    for key, value in match_labels.items():
        if labels.get(key) != value:
            return False
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list) or not all(isinstance(e, dict) for e in expressions):
        raise BadValue("selector.matchExpressions: expected a list of {key, operator, values}, "
                       f"got {expressions!r}")
    for expr in expressions:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if not isinstance(values, list):
            raise BadValue(f"selector.matchExpressions values: expected a list, got {values!r}")
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


@dataclass
class AuditContext:
    """All objects of one audit, indexed by kind; built once, read by every rule."""

    objects: list[Manifest]
    by_kind: dict[str, list[Manifest]] = field(default_factory=lambda: defaultdict(list))
    # Indexes built once so lookups stay O(1) per object: a scan per lookup made audit
    # roughly cubic (5,000 objects: over a minute; `tests/audit/test_scale.py`).
    _by_name: dict[tuple[str, str, str], Manifest] = field(default_factory=dict, repr=False)
    _scalers: dict[int, list[Manifest]] | None = field(default=None, repr=False)
    _pdbs_by_namespace: dict[str, list[Manifest]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for obj in self.objects:
            self.by_kind[obj.kind].append(obj)
            # setdefault: the first object of a (kind, namespace, name) wins, as the scan did
            self._by_name.setdefault((obj.kind, namespace_of(obj), obj.name), obj)

    def of_kind(self, *kinds: str) -> Iterator[Manifest]:
        for kind in kinds:
            yield from self.by_kind.get(kind, [])

    def find(self, kind: str, namespace: str, name: str) -> Manifest | None:
        return self._by_name.get((kind, namespace, name))

    def scale_target(self, scaler: Manifest) -> Manifest | None:
        """The workload an HPA, ScaledObject or PodAutoscaler scales, when it is part of the
        input (an LLMInferenceService scales itself)."""
        if scaler.kind == "LLMInferenceService":
            return scaler
        ref = scaler.get("spec", "scaleTargetRef") or {}
        kind = ref.get("kind") or "Deployment"  # KEDA's default target kind
        return self.find(kind, namespace_of(scaler), str(ref.get("name", "")))

    def scalers_of(self, workload: Manifest) -> list[Manifest]:
        if self._scalers is None:
            self._scalers = defaultdict(list)
            for scaler in self.of_kind(*SCALER_KINDS):
                target = self.scale_target(scaler)
                if target is not None:
                    self._scalers[id(target)].append(scaler)
        return list(self._scalers.get(id(workload), ()))

    def pdbs_selecting(self, namespace: str, labels: dict) -> list[Manifest]:
        if self._pdbs_by_namespace is None:
            self._pdbs_by_namespace = defaultdict(list)
            for pdb in self.of_kind("PodDisruptionBudget"):
                self._pdbs_by_namespace[namespace_of(pdb)].append(pdb)
        selecting = []
        for pdb in self._pdbs_by_namespace.get(namespace, ()):
            try:
                if selector_matches(pdb.get("spec", "selector"), labels):
                    selecting.append(pdb)
            except BadValue as exc:  # said of the PDB, not of the workload the rule reads
                raise BadValue(f"{pdb.ref} (line {pdb.line}) spec.{exc}") from None
        return selecting
