"""Name the layer and cause that hold each Pending GPU pod, with the evidence.

Checks run from the top of the stack down, as a pod meets them: the KAI queue admits it
(layer 2), its gang must be complete, a topology domain must hold the gang, a node must pass
taints, selectors and have the GPUs free on *one* node (layer 2 filters), and otherwise a
NodePool must be able to launch one (layer 1). The first check that fails is the cause.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple

from gpuscale.audit.diagnose.placement import NodeFit, PoolVerdict, node_fit, pool_verdicts
from gpuscale.audit.diagnose.snapshot import TERMINAL_PHASES, PodView, Snapshot
from gpuscale.audit.loader import Manifest
from gpuscale.audit.structure import check_shape
from gpuscale.audit.values import BadValue
from gpuscale.errors import WRONG_VALUE_ERRORS, UserInputError
from gpuscale.units import gpus_text, parse_quantity

QUEUE_LABEL = "kai.scheduler/queue"  # layer2-scheduling.md 2.1
POD_GROUP_KEYS = ("pod-group-name", "scheduling.x-k8s.io/pod-group", "scheduling.k8s.io/group-name")
LAYER_QUEUE = "layer 2 scheduling: KAI queue"
LAYER_GANG = "layer 2 scheduling: gang"
LAYER_FILTERS = "layer 2 scheduling: node filters"
LAYER_NODES = "layer 1 nodes: provisioning"

CAUSES = {
    "queue-over-limit": LAYER_QUEUE, "queue-over-quota": LAYER_QUEUE,
    "gang-waiting": LAYER_GANG, "topology": LAYER_GANG,
    "fragmentation": LAYER_FILTERS, "taints": LAYER_FILTERS, "selector": LAYER_FILTERS,
    "device-plugin-not-ready": LAYER_NODES, "nodeclaim-launching": LAYER_NODES,
    "nodepool-limits": LAYER_NODES, "nodepool-requirements": LAYER_NODES,
    "insufficient-gpus": LAYER_NODES, "provisioner-not-acting": LAYER_NODES,
    "schedulable": "none (fits now; scheduler not run yet?)",
}


@dataclass(frozen=True)
class Diagnosis:
    pod: str
    gpus: int
    cause: str
    summary: str
    evidence: tuple[str, ...] = field(default_factory=tuple)

    @property
    def layer(self) -> str:
        return CAUSES[self.cause]

    def as_dict(self) -> dict:
        return {"pod": self.pod, "gpus": self.gpus, "layer": self.layer, "cause": self.cause,
                "summary": self.summary, "evidence": list(self.evidence)}


def _gpu(value) -> float | None:
    return None if value is None else float(parse_quantity(value))


class Cause(NamedTuple):
    """Why a pod is Pending: the cause's id (docs/audit.md, diagnose) and one line of why."""

    cause: str
    summary: str


def _queue_check(snap: Snapshot, pod: PodView) -> Cause | None:
    name = pod.labels.get(QUEUE_LABEL)
    queue = next((q for q in snap.queues if q.name == name), None) if name else None
    if queue is None:
        return None
    gpu = queue.get("spec", "resources", "gpu") or {}
    limit, quota = _gpu(gpu.get("limit")), _gpu(gpu.get("quota"))
    used = _gpu(queue.get("status", "allocated", "nvidia.com/gpu")) or _gpu(
        queue.get("status", "allocated", "gpu")
    )
    if used is None:
        used = sum(p.gpus for p in snap.pods if p.labels.get(QUEUE_LABEL) == name and p.node_name
                   and p.phase not in TERMINAL_PHASES)
    if limit is None or limit == 0:
        return Cause(
            "queue-over-limit",
            f"queue {name} has gpu limit {'unset' if limit is None else 0}, "
            "which KAI reads as a cap of 0",
        )
    if limit >= 0 and used + pod.gpus > limit:
        return Cause(
            "queue-over-limit",
            f"queue {name} uses {gpus_text(used)}; +{pod.gpus} would pass its limit of {limit:g}",
        )
    # layer2-scheduling.md 2.3: priority >= 100 (e.g. `inference`) may use only in-quota resources.
    if pod.priority_class in ("inference", "build") and quota is not None and quota >= 0 \
            and used + pod.gpus > quota:
        return Cause("queue-over-quota", (
            f"queue {name} uses {used:g} of its {quota:g}-GPU quota; non-preemptible "
            f"class {pod.priority_class} may not go over quota"
        ))
    return None


def _group_of(snap: Snapshot, pod: PodView) -> Manifest | None:
    name = next(
        (src[k] for src in (pod.annotations, pod.labels) for k in POD_GROUP_KEYS if k in src), None
    )
    return next(
        (
            g
            for g in snap.podgroups
            if g.name == name and (g.namespace or "default") == pod.namespace
        ),
        None,
    )


def _members(snap: Snapshot, group: Manifest) -> list[PodView]:
    return [p for p in snap.pods if (p.namespace == (group.namespace or "default")) and any(
        src.get(k) == group.name for src in (p.annotations, p.labels) for k in POD_GROUP_KEYS)]


def _gang_check(snap: Snapshot, pod: PodView) -> Cause | None:
    group = _group_of(snap, pod)
    if group is None:
        return None
    min_member = int(group.get("spec", "minMember", default=0) or 0)
    members = [p for p in _members(snap, group) if p.phase not in TERMINAL_PHASES]
    if min_member and len(members) < min_member:
        return Cause(
            "gang-waiting",
            f"PodGroup {group.name} has {len(members)} of its minMember {min_member} pods",
        )
    level = group.get("spec", "topologyConstraint", "requiredTopologyLevel")
    if level:
        demand = sum(p.gpus for p in members if not p.node_name)
        domains: dict[str, int] = defaultdict(int)
        for node in node_fit(snap, pod).eligible:
            if level in node.labels:
                domains[node.labels[level]] += snap.gpus_free(node)
        best = max(domains.values(), default=0)
        if best < demand:
            return Cause("topology", (
                f"PodGroup {group.name} needs {gpus_text(demand)} within one {level} domain; "
                f"the best domain has {best} free ({sum(domains.values())} free in total)"
            ))
    return None


def _node_checks(snap: Snapshot, pod: PodView) -> tuple[Cause, list[str]]:
    """The cause and the evidence from the nodes and what could add one, tried in order: room
    on a node now, then what adds capacity (`_capacity_cause`), then the NodePools'
    verdicts, which join the evidence (`_pool_cause`), then placement alone."""
    fit = node_fit(snap, pod)
    evidence = [
        f"node {n}: untolerated taint {', '.join(t)}" for n, t in sorted(fit.tainted.items())
    ]
    evidence += [f"node {n}: labels do not match nodeSelector/affinity" for n in fit.mismatched]
    evidence += [f"node {n}: not Ready or cordoned" for n in fit.not_ready]
    evidence += [f"node {n}: {gpus_text(fit.free[n])} free" for n in sorted(fit.free)]
    found = _capacity_cause(snap, pod, fit)
    if found is None:
        verdicts = pool_verdicts(snap, pod)
        evidence += [f"NodePool {v.pool}: {v.problem or 'ok'}: {v.detail}" for v in verdicts]
        found = _pool_cause(pod, verdicts) or _placement_cause(fit, verdicts)
    if found is None:
        found = Cause("insufficient-gpus", _insufficient_summary(snap, pod))
    return found, evidence


def _capacity_cause(snap: Snapshot, pod: PodView, fit: NodeFit) -> Cause | None:
    """Room on a node now, GPUs not registered yet, free GPUs spread too thin, or a NodeClaim
    on its way."""
    if any(f >= pod.gpus for f in fit.free.values()):
        return Cause("schedulable", "a node has enough free GPUs now")
    warming = [n for n in fit.eligible if n.gpu_allocatable == 0 and n.looks_like_gpu_node]
    if warming:
        names = ", ".join(n.name for n in warming)
        return Cause("device-plugin-not-ready", (
            f"GPU node(s) {names} are Ready but report 0 allocatable "
            "nvidia.com/gpu: the device plugin has not registered the GPUs yet"))
    total = sum(fit.free.values())
    if total >= pod.gpus:
        return Cause("fragmentation", (
            f"{total} GPUs are free across {len(fit.free)} eligible nodes but at most "
            f"{max(fit.free.values(), default=0)} on any one; "
            f"the pod needs {pod.gpus} on one node"))
    launching = [c for c in snap.nodeclaims if not _claim_initialized(c)]
    if launching:
        names = ", ".join(c.name for c in launching)
        return Cause("nodeclaim-launching",
                     f"NodeClaim(s) {names} not yet Initialized: capacity is on its way")
    return None


def _pool_cause(pod: PodView, verdicts: list[PoolVerdict]) -> Cause | None:
    """Every NodePool refuses (the first refusal by kind), or one could launch a node and
    none is launching."""
    if verdicts and not any(v.problem == "" for v in verdicts):
        for cause in ("nodepool-limits", "nodepool-requirements", "taints", "selector"):
            hit = [v for v in verdicts if v.problem == cause]
            if hit:
                return Cause(cause, f"NodePool {hit[0].pool}: {hit[0].detail}")
    ready = [v for v in verdicts if v.problem == ""]
    if ready:
        # A pool can launch a fitting node and none is on its way: saying "no NodePool can add
        # one" here would contradict the pool's own evidence line. Karpenter batches pending
        # pods for 1-10 s before it creates a NodeClaim; longer means it is not acting.
        return Cause("provisioner-not-acting", (
            f"no node has {pod.gpus} free GPUs; NodePool {ready[0].pool} {ready[0].detail} but "
            "no NodeClaim is launching: if this lasts beyond Karpenter's 10 s batch window, "
            "read the Karpenter controller's logs and the pod's events (launch failures such as "
            "InsufficientCapacityError, a NodeClass that is not Ready)"))
    return None


def _placement_cause(fit: NodeFit, verdicts: list[PoolVerdict]) -> Cause | None:
    """No node is eligible and no NodePool to say more: taints or the selector."""
    if fit.eligible or verdicts:
        return None
    if fit.tainted and len(fit.tainted) >= len(fit.mismatched):
        return Cause("taints",
                     f"{len(fit.tainted)} node(s) carry taints the pod does not tolerate")
    if fit.mismatched:
        return Cause("selector",
                     f"{len(fit.mismatched)} node(s) fail the pod's nodeSelector/affinity")
    return None


def _insufficient_summary(snap: Snapshot, pod: PodView) -> str:
    """What holds the pod when no node has room: a `kubectl get nodes,pods` dump has no
    NodePools, so "none can add one" would be a guess; the nodes' pool labels say whether
    Karpenter manages them and what to add to the dump."""
    head = f"no node has {pod.gpus} free GPU{'' if pod.gpus == 1 else 's'}"
    pools = sorted({n.nodepool for n in snap.nodes if n.nodepool})
    if snap.nodepools or not pools:
        return f"{head} and no NodePool in the snapshot can add one"
    return (f"{head}; nodes belong to NodePool {', '.join(pools)}, which the snapshot does not "
            "hold: add `nodepools,nodeclaims` to the `kubectl get` to see whether one can be "
            "added")


def _claim_initialized(claim: Manifest) -> bool:
    conditions = {c.get("type"): c.get("status") for c in claim.get("status", "conditions") or []
                  if isinstance(c, dict)}
    return conditions.get("Initialized") == "True" or conditions.get("Ready") == "True"


def diagnose_pod(snap: Snapshot, pod: PodView) -> Diagnosis:
    events = [f"event {e}" for e in snap.events_for(pod)]
    if pod.unschedulable_message:
        events.insert(0, f"scheduler: {pod.unschedulable_message}")
    for check in (_queue_check, _gang_check):
        found = check(snap, pod)
        if found:
            return Diagnosis(pod.ref, pod.gpus, found.cause, found.summary, tuple(events))
    (cause, summary), evidence = _node_checks(snap, pod)
    return Diagnosis(pod.ref, pod.gpus, cause, summary, tuple(evidence + events))


# What a snapshot is made of (`kubectl get` kinds; the CLI lists the same from a cluster).
SNAPSHOT_KINDS = ("Node", "Pod", "Event", "NodePool", "NodeClaim", "Queue", "PodGroup")


def diagnose(objects: list[Manifest], pod_name: str | None = None) -> list[Diagnosis]:
    """One diagnosis per Pending GPU pod (or only `pod_name`, as `name` or `ns/name`).

    A misshapen snapshot is bad input (one line naming the file and field or object), never a
    traceback: the shapes are checked first, and a value no view can read is named after it."""
    for obj in objects:
        if obj.kind in SNAPSHOT_KINDS:
            check_shape(obj)
    try:
        snap = Snapshot.from_objects(objects)
        pods = snap.pending_gpu_pods()
    except (BadValue, *WRONG_VALUE_ERRORS) as exc:
        raise UserInputError(f"a snapshot object holds a value no cluster would: {exc}",
                             source=_source_of(objects, "")) from None
    if pod_name:
        pods = [p for p in pods if pod_name in (p.name, p.ref)]
    out = []
    for pod in pods:
        try:
            out.append(diagnose_pod(snap, pod))
        except (BadValue, *WRONG_VALUE_ERRORS) as exc:  # the readers' BadValue has no file
            raise UserInputError(f"{pod.ref}: an object it depends on holds a value no cluster "
                                 f"would: {exc}", source=_source_of(objects, pod.ref)) from None
    return out


def _source_of(objects: list[Manifest], ref: str) -> str | None:
    return next((o.source for o in objects if o.ref == ref), objects[0].source if objects else None)
