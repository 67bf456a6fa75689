"""Node-level checks for one pod: taints, selectors, free GPUs, and what NodePools could add."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuscale.audit.diagnose.snapshot import NodeView, PodView, Snapshot, taints_of
from gpuscale.audit.loader import Manifest
from gpuscale.audit.nodepools import (
    GPU_RESOURCE,
    allowed_instance_types,
    is_gpu_nodepool,
    requirements,
)
from gpuscale.cluster.objects import Taint, tolerates_all
from gpuscale.units import gpus_text, parse_quantity


def _expr_ok(expr: dict, labels: dict) -> bool:
    key, op, values = (
        expr.get("key"),
        expr.get("operator"),
        [str(v) for v in expr.get("values") or []],
    )
    have = labels.get(key)
    if op == "In":
        return have is not None and str(have) in values
    if op == "NotIn":
        return have is None or str(have) not in values
    if op == "Exists":
        return have is not None
    if op == "DoesNotExist":
        return have is None
    if op in ("Gt", "Lt") and have is not None and values:
        try:
            return float(have) > float(values[0]) if op == "Gt" else float(have) < float(values[0])
        except ValueError:
            return False
    return False


def selector_ok(pod: PodView, labels: dict) -> bool:
    if any(str(labels.get(k)) != str(v) for k, v in pod.node_selector.items()):
        return False
    if pod.required_terms:
        return any(all(_expr_ok(e, labels) for e in (term.get("matchExpressions") or []))
                   for term in pod.required_terms if isinstance(term, dict))
    return True


def untolerated(pod: PodView, taints: tuple[Taint, ...]) -> list[Taint]:
    return [t for t in taints if not tolerates_all(pod.tolerations, (t,))]


@dataclass
class NodeFit:
    """How the existing nodes stand for one pod."""

    eligible: list[NodeView] = field(default_factory=list)  # passes taints, selector, Ready
    tainted: dict[str, list[str]] = field(default_factory=dict)  # node -> untolerated taints
    mismatched: list[str] = field(default_factory=list)  # node names failing the selector
    not_ready: list[str] = field(default_factory=list)
    free: dict[str, int] = field(default_factory=dict)  # eligible node -> free GPUs


def node_fit(snap: Snapshot, pod: PodView) -> NodeFit:
    fit = NodeFit()
    for node in snap.nodes:
        bad = untolerated(pod, node.taints)
        if bad:
            fit.tainted[node.name] = [
                f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in bad
            ]
        elif not selector_ok(pod, node.labels):
            fit.mismatched.append(node.name)
        elif not node.ready or node.unschedulable:
            fit.not_ready.append(node.name)
        else:
            fit.eligible.append(node)
            fit.free[node.name] = snap.gpus_free(node)
    return fit


def pool_taints(pool: Manifest) -> tuple[Taint, ...]:
    return taints_of(pool.get("spec", "template", "spec", "taints"))


def pool_labels(pool: Manifest) -> dict:
    labels = dict(pool.get("spec", "template", "metadata", "labels") or {})
    labels["karpenter.sh/nodepool"] = pool.name
    return labels


def pool_admits_selector(pod: PodView, pool: Manifest) -> bool:
    """Could a node from this pool carry the labels the pod's nodeSelector asks for?"""
    labels = pool_labels(pool)
    reqs = {r.get("key"): r for r in requirements(pool)}
    for key, value in pod.node_selector.items():
        if key in labels:
            if str(labels[key]) != str(value):
                return False
        elif key in reqs and reqs[key].get("operator") == "In" and \
                str(value) not in [str(v) for v in reqs[key].get("values") or []]:
            return False
    return True


@dataclass(frozen=True)
class PoolVerdict:
    pool: str
    problem: str  # "" when the pool can launch a fitting node now
    detail: str


def pool_verdict(snap: Snapshot, pod: PodView, pool: Manifest) -> PoolVerdict:
    if untolerated(pod, pool_taints(pool)):
        return PoolVerdict(pool.name, "taints", "pod does not tolerate the pool's taints")
    if not pool_admits_selector(pod, pool):
        return PoolVerdict(pool.name, "selector", "pod's nodeSelector excludes the pool")
    wanted_type = pod.node_selector.get("node.kubernetes.io/instance-type")
    fitting = [it for it in allowed_instance_types(pool)
               if it.num_gpus >= pod.gpus and (wanted_type is None or it.name == wanted_type)]
    if not fitting:
        most = max((it.num_gpus for it in allowed_instance_types(pool)), default=0)
        return PoolVerdict(pool.name, "nodepool-requirements",
                           "no instance type allowed by its requirements has "
                           f"{gpus_text(pod.gpus)} (largest: {most})")
    limit = (pool.get("spec", "limits") or {}).get(GPU_RESOURCE)
    if limit is not None:
        used = (pool.get("status", "resources") or {}).get(GPU_RESOURCE)
        used_gpus = parse_quantity(used) if used is not None else sum(
            n.gpu_capacity for n in snap.nodes if n.nodepool == pool.name)
        smallest = min(it.num_gpus for it in fitting)
        if used_gpus + smallest > parse_quantity(limit):
            return PoolVerdict(
                pool.name,
                "nodepool-limits",
                f"uses {used_gpus:g} of its {parse_quantity(limit):g}-GPU limit; the "
                f"smallest fitting node adds {smallest}",
            )
    return PoolVerdict(pool.name, "", f"can launch {min(fitting, key=lambda it: it.num_gpus).name}")


def pool_verdicts(snap: Snapshot, pod: PodView) -> list[PoolVerdict]:
    return [pool_verdict(snap, pod, p) for p in snap.nodepools if is_gpu_nodepool(p)]
