"""One-off writer of tests/audit/diagnose/<cause>.json, each a `kubectl get ... -o json` List."""

import json
from pathlib import Path


def node(name, gpus=8, free_taint=True, labels=None, allocatable=None, ready=True, taints=None):
    lab = {"kubernetes.io/hostname": name, "node.kubernetes.io/instance-type": "p5.48xlarge",
           "karpenter.sh/nodepool": "gpu", "nvidia.com/gpu.present": "true", **(labels or {})}
    alloc = gpus if allocatable is None else allocatable
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": lab},
        "spec": {
            "taints": taints
            if taints is not None
            else [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
        },
        "status": {
            "capacity": {"nvidia.com/gpu": str(gpus)},
            "allocatable": {"nvidia.com/gpu": str(alloc)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(name, gpus, node_name="", ns="serve", labels=None, annotations=None, selector=None,
        tolerate=True, scheduler="default-scheduler", priority=""):
    spec = {"schedulerName": scheduler,
            "containers": [{"name": "main", "image": "vllm/vllm-openai:v0.11.0",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if tolerate:
        spec["tolerations"] = [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
        ]
    if node_name:
        spec["nodeName"] = node_name
    if selector:
        spec["nodeSelector"] = selector
    if priority:
        spec["priorityClassName"] = priority
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": spec,
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def nodepool(limit=None, types=("p5.48xlarge",), used=None):
    spec = {
        "template": {
            "spec": {
                "requirements": [
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": list(types),
                    }
                ],
                "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
            }
        }
    }
    if limit is not None:
        spec["limits"] = {"nvidia.com/gpu": str(limit)}
    status = {"resources": {"nvidia.com/gpu": str(used)}} if used is not None else {}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu"},
        "spec": spec,
        "status": status,
    }


def event(pod_name, message, ns="serve"):
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{pod_name}.1", "namespace": ns},
        "involvedObject": {"kind": "Pod", "name": pod_name, "namespace": ns},
        "reason": "FailedScheduling",
        "message": message,
    }


def queue(name, quota, limit, allocated):
    gpu = {"quota": quota, "overQuotaWeight": 1}
    if limit is not None:
        gpu["limit"] = limit
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {
            "resources": {
                "gpu": gpu,
                "cpu": {"quota": -1, "limit": -1},
                "memory": {"quota": -1, "limit": -1},
            }
        },
        "status": {"allocated": {"nvidia.com/gpu": str(allocated)}},
    }


def podgroup(name, min_member, level=None, ns="train"):
    spec = {"minMember": min_member, "queue": "research"}
    if level:
        spec["topologyConstraint"] = {"topology": "cluster", "requiredTopologyLevel": level}
    return {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def busy(node_name, used, prefix="busy"):
    return pod(f"{prefix}-{node_name}", used, node_name=node_name)


S = {}
# 3 nodes with 4 + 4 + 2 free GPUs: 10 free in total, the pod wants 8 on one node.
S["fragmentation"] = [
    node("n1"),
    node("n2"),
    node("n3"),
    busy("n1", 4),
    busy("n2", 4),
    busy("n3", 6),
    pod("llama-0", 8),
    nodepool(limit=24, used=24),
    event("llama-0", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."),
]
S["taints"] = [
    node("n1", taints=[{"key": "dedicated", "value": "training", "effect": "NoSchedule"}]),
    pod("llama-0", 8),
]
S["selector"] = [
    node("n1"),
    pod("llama-0", 8, selector={"node.kubernetes.io/instance-type": "p5en.48xlarge"}),
]
S["nodepool-requirements"] = [nodepool(types=("g6e.2xlarge",)), pod("llama-0", 8)]
S["nodepool-limits"] = [node("n1"), busy("n1", 8), nodepool(limit=8, used=8), pod("llama-0", 8)]
S["nodeclaim-launching"] = [
    nodepool(limit=64, used=8),
    pod("llama-0", 8),
    {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "gpu-abcde"},
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"}
        },
        "status": {
            "conditions": [
                {"type": "Launched", "status": "True"},
                {"type": "Registered", "status": "False"},
                {"type": "Initialized", "status": "False"},
            ]
        },
    },
]
S["device-plugin-not-ready"] = [node("n1", allocatable=0), pod("llama-0", 8)]
S["queue-over-limit"] = [node("n1"), queue("research", 8, 8, 8),
                         pod("trainer-0", 8, ns="train", labels={"kai.scheduler/queue": "research"},
                             scheduler="kai-scheduler")]
S["queue-over-quota"] = [
    node("n1"),
    queue("serving", 4, -1, 4),
    pod(
        "llama-0",
        4,
        labels={"kai.scheduler/queue": "serving"},
        scheduler="kai-scheduler",
        priority="inference",
    ),
]
S["gang-waiting"] = [node("n1"), node("n2"), podgroup("trainer", 4),
                     *[pod(f"trainer-{i}", 8, ns="train", annotations={"pod-group-name": "trainer"},
                           scheduler="kai-scheduler") for i in range(2)]]
S["topology"] = [node("n1", labels={"topology.k8s.aws/network-node-layer-3": "a"}),
                 node("n2", labels={"topology.k8s.aws/network-node-layer-3": "b"}),
                 podgroup("trainer", 2, level="topology.k8s.aws/network-node-layer-3"),
                 *[pod(f"trainer-{i}", 8, ns="train", annotations={"pod-group-name": "trainer"},
                       scheduler="kai-scheduler") for i in range(2)]]
S["insufficient-gpus"] = [node("n1"), busy("n1", 8), pod("llama-0", 8)]
# A pool could launch a p5.48xlarge, yet no NodeClaim exists: Karpenter is not acting.
S["provisioner-not-acting"] = [
    node("n1"),
    busy("n1", 8),
    nodepool(limit=64, used=8),
    pod("llama-0", 8),
]

root = Path(__file__).parent / "diagnose"
root.mkdir(exist_ok=True)
for cause, items in S.items():
    (root / f"{cause}.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2) + "\n"
    )
