"""The cluster state diagnose reasons about, read from loaded objects (nodes, pods, ...)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from gpuscale.audit.loader import Manifest
from gpuscale.audit.workloads import GPU_RESOURCE, gpus_per_pod
from gpuscale.cluster.objects import Taint, Toleration
from gpuscale.units import parse_quantity

# Labels that mark a node as a GPU node before its device plugin reports GPUs
# (layer1-node-provisioning.md 2.4: provider GPU labels; GPU operator / feature discovery).
GPU_NODE_LABELS = ("nvidia.com/gpu.present", "nvidia.com/gpu.count", "nvidia.com/gpu.product",
                   "k8s.amazonaws.com/accelerator", "cloud.google.com/gke-accelerator",
                   "kubernetes.azure.com/accelerator", "karpenter.k8s.aws/instance-gpu-count")
TERMINAL_PHASES = ("Succeeded", "Failed")


def taints_of(items) -> tuple[Taint, ...]:
    """Kubernetes taint dicts (Node spec or NodePool template) -> Taint values."""
    return tuple(
        Taint(
            str(t.get("key", "")), str(t.get("value", "") or ""), str(t.get("effect", "NoSchedule"))
        )
        for t in items or []
        if isinstance(t, dict)
    )


def _gpus(resources: dict | None) -> int:
    return int(parse_quantity((resources or {}).get(GPU_RESOURCE, 0) or 0))


@dataclass(frozen=True)
class NodeView:
    name: str
    labels: dict
    taints: tuple[Taint, ...]
    ready: bool
    unschedulable: bool
    gpu_allocatable: int
    gpu_capacity: int
    nodepool: str

    @property
    def looks_like_gpu_node(self) -> bool:
        return self.gpu_capacity > 0 or any(k in self.labels for k in GPU_NODE_LABELS)


@dataclass(frozen=True)
class PodView:
    name: str
    namespace: str
    phase: str
    node_name: str
    gpus: int
    labels: dict
    annotations: dict
    scheduler: str
    tolerations: tuple[Toleration, ...]
    node_selector: dict
    required_terms: tuple  # nodeAffinity requiredDuringScheduling nodeSelectorTerms
    priority_class: str
    source: Manifest = field(repr=False, compare=False)
    # The scheduler's own reason, as `kubectl get pods -o yaml` carries it without events: the
    # PodScheduled=False condition's message ("0/3 nodes are available: ...").
    unschedulable_message: str = ""

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


def node_view(obj: Manifest) -> NodeView:
    status = obj.get("status") or {}
    conditions = {
        c.get("type"): c.get("status")
        for c in status.get("conditions") or []
        if isinstance(c, dict)
    }
    return NodeView(name=obj.name, labels=obj.labels, taints=taints_of(obj.get("spec", "taints")),
                    ready=conditions.get("Ready") == "True",
                    unschedulable=bool(obj.get("spec", "unschedulable")),
                    gpu_allocatable=_gpus(status.get("allocatable")),
                    gpu_capacity=_gpus(status.get("capacity")),
                    nodepool=str(obj.labels.get("karpenter.sh/nodepool", "")))


def _unschedulable_message(obj: Manifest) -> str:
    for condition in obj.get("status", "conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "PodScheduled" \
                and condition.get("status") == "False":
            return " ".join(str(condition.get("message") or condition.get("reason", "")).split())
    return ""


def pod_view(obj: Manifest) -> PodView:
    spec = obj.get("spec") or {}
    tolerations = tuple(
        Toleration(
            str(t.get("key", "") or ""),
            str(t.get("operator", "Equal") or "Equal"),
            str(t.get("value", "") or ""),
            str(t.get("effect", "") or ""),
        )
        for t in spec.get("tolerations") or []
        if isinstance(t, dict)
    )
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    return PodView(name=obj.name, namespace=obj.namespace or "default",
                   phase=str(obj.get("status", "phase", default="Pending")),
                   node_name=str(spec.get("nodeName", "") or ""), gpus=gpus_per_pod(obj.data),
                   labels=obj.labels, annotations=obj.annotations,
                   scheduler=str(spec.get("schedulerName", "default-scheduler")),
                   tolerations=tolerations, node_selector=dict(spec.get("nodeSelector") or {}),
                   required_terms=tuple(affinity.get("nodeSelectorTerms") or []),
                   priority_class=str(spec.get("priorityClassName", "") or ""), source=obj,
                   unschedulable_message=_unschedulable_message(obj))


@dataclass
class Snapshot:
    """Objects of one dump, by kind, plus derived per-node GPU use."""

    nodes: list[NodeView]
    pods: list[PodView]
    events: list[Manifest]
    nodepools: list[Manifest]
    nodeclaims: list[Manifest]
    queues: list[Manifest]
    podgroups: list[Manifest]

    @classmethod
    def from_objects(cls, objects: list[Manifest]) -> Snapshot:
        def of(kind: str) -> list[Manifest]:
            return [o for o in objects if o.kind == kind]
        return cls(
            nodes=[node_view(o) for o in of("Node")],
            pods=[pod_view(o) for o in of("Pod")],
            events=of("Event"),
            nodepools=of("NodePool"),
            nodeclaims=of("NodeClaim"),
            queues=[q for q in of("Queue") if q.api_version.startswith("scheduling.run.ai/")],
            podgroups=of("PodGroup"),
        )

    def gpus_used(self, node: str) -> int:
        # Summed per node once: a scan of every pod per (pending pod, node) made 2,000 nodes
        # and pods take minutes. The views are not changed after the snapshot is built.
        used = self.__dict__.get("_gpus_used")
        if used is None:
            used = defaultdict(int)
            for pod in self.pods:
                if pod.node_name and pod.phase not in TERMINAL_PHASES:
                    used[pod.node_name] += pod.gpus
            self.__dict__["_gpus_used"] = used
        return used.get(node, 0)

    def gpus_free(self, node: NodeView) -> int:
        return max(0, node.gpu_allocatable - self.gpus_used(node.name))

    def pending_gpu_pods(self) -> list[PodView]:
        return [p for p in self.pods if p.phase == "Pending" and not p.node_name and p.gpus > 0]

    def events_for(self, pod: PodView) -> list[str]:
        by_pod = self.__dict__.get("_events_by_pod")
        if by_pod is None:  # indexed once, in event order
            by_pod = defaultdict(list)
            for event in self.events:
                involved = event.get("involvedObject", default={}) or {}
                if not isinstance(involved, dict):
                    continue
                key = (involved.get("name"), involved.get("namespace") or "default")
                reason, message = event.get("reason", default=""), event.get("message", default="")
                by_pod[key].append(f"{reason}: {' '.join(str(message).split())}")
            self.__dict__["_events_by_pod"] = by_pod
        return list(by_pod.get((pod.name, pod.namespace), ()))
