"""Karpenter NodePool + EC2NodeClass, KAI Queues -> the scenario's `nodes`, `scheduler` and
the instance type its replicas run on.

A NodePool is taken as `karpenter.sh/v1` writes it (the scenario's NodePoolParams accept the
CRD's camelCase), validated per object so an error names the manifest file. Taints the serving
pod tolerates are dropped from the simulated pool: the simulator's pods tolerate only
`nvidia.com/gpu`, and a taint the only workload tolerates changes nothing.
"""

from __future__ import annotations

import math

from gpuscale.audit.loader import Manifest, format_path
from gpuscale.catalog import InstanceType, instance_types
from gpuscale.cluster.groups import DEFAULT_QUEUE
from gpuscale.errors import UserInputError
from gpuscale.provisioning.fit import INSTANCE_TYPE_LABEL
from gpuscale.provisioning.karpenter.nodepool import NodePoolParams, pool_offerings
from gpuscale.scenario.load import validate_mapping
from gpuscale.serving.cold_start import snapshot_image_read_s
from gpuscale.units import GIB, parse_quantity

GPU_TAINT = "nvidia.com/gpu"
KAI_QUEUE_LABELS = ("kai.scheduler/queue", "runai/queue")


class Untolerated(UserInputError):
    """A NodePool the serving pod can never land on (a taint it does not tolerate)."""


def _fail(obj: Manifest, path: tuple, message: str) -> UserInputError:
    line, _ = obj.position(path)
    return UserInputError(f"{message} ({obj.ref}, line {line})", source=obj.source,
                          field=format_path(path))


def tolerates(tolerations: list, taint: dict) -> bool:
    """Kubernetes toleration matching (core/v1 Toleration.ToleratesTaint)."""
    for tol in tolerations:
        if not isinstance(tol, dict):
            continue
        if tol.get("effect") and tol.get("effect") != taint.get("effect", "NoSchedule"):
            continue
        if tol.get("operator", "Equal") == "Exists":
            if not tol.get("key") or tol.get("key") == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and str(tol.get("value", "")) == str(
                taint.get("value", "")):
            return True
    return False


def node_pool(obj: Manifest, tolerations: list, notes: list[str]) -> dict:
    """One NodePool -> a validated NodePoolParams mapping (by field name, for the scenario)."""
    spec = obj.get("spec", "template", "spec", default={}) or {}
    if not isinstance(spec, dict):
        raise _fail(obj, ("spec", "template", "spec"), "expected a mapping")
    if not isinstance(tolerations, list):
        tolerations = []
    data: dict = {"name": obj.name}
    for key in ("requirements", "startupTaints", "expireAfter", "terminationGracePeriod",
                "nodeClassRef"):
        if key in spec:
            data[key] = spec[key]
    kept = []
    taints = spec.get("taints") or []
    if not isinstance(taints, list):
        raise _fail(obj, ("spec", "template", "spec", "taints"), "expected a list of taints")
    for index, taint in enumerate(taints):
        if not isinstance(taint, dict):
            raise _fail(obj, ("spec", "template", "spec", "taints", index), "expected a taint")
        if taint.get("key") == GPU_TAINT:
            kept.append(taint)
        elif tolerates(tolerations, taint):
            notes.append(f"{obj.ref}: taint {taint.get('key')} is tolerated by the serving pod; "
                         "not simulated (no other pods compete for these nodes)")
        else:
            line, _ = obj.position(("spec", "template", "spec", "taints", index))
            raise Untolerated(
                f"the serving pod does not tolerate taint {taint.get('key')}="
                f"{taint.get('value', '')}:{taint.get('effect', 'NoSchedule')}, so it could "
                f"never run on this NodePool; add the toleration ({obj.ref}, line {line})",
                source=obj.source, field=format_path(("spec", "template", "spec", "taints", index)))
    data["taints"] = kept
    labels = obj.get("spec", "template", "metadata", "labels")
    if isinstance(labels, dict):
        data["labels"] = {str(k): str(v) for k, v in labels.items()}
    for key in ("disruption", "limits", "weight"):
        if obj.get("spec", key) is not None:
            data[key] = obj.get("spec", key)
    if obj.api_version == "karpenter.sh/v1beta1":
        _from_v1beta1(obj, data, notes)
    params = validate_mapping(NodePoolParams, data, source=f"{obj.source} ({obj.ref})")
    return params.model_dump(mode="json", exclude_defaults=True) | {"name": obj.name}


def _from_v1beta1(obj: Manifest, data: dict, notes: list[str]) -> None:
    """karpenter.sh/v1beta1 fields in their v1 places, as Karpenter's conversion does (v1
    upgrade guide): WhenUnderutilized -> WhenEmptyOrUnderutilized with consolidateAfter 0s,
    disruption.expireAfter -> template.spec.expireAfter, nodeClassRef.apiVersion -> group."""
    disruption = dict(data.get("disruption") or {})
    if disruption.get("consolidationPolicy") == "WhenUnderutilized":
        disruption["consolidationPolicy"] = "WhenEmptyOrUnderutilized"
        disruption.setdefault("consolidateAfter", "0s")
    if "expireAfter" in disruption:
        data.setdefault("expireAfter", disruption.pop("expireAfter"))
    if disruption:
        data["disruption"] = disruption
    ref = data.get("nodeClassRef")
    if isinstance(ref, dict) and "apiVersion" in ref:
        ref = {k: v for k, v in ref.items() if k != "apiVersion"}
        ref.setdefault("group", str(obj.get("spec", "template", "spec", "nodeClassRef",
                                            "apiVersion", default="")).partition("/")[0])
        data["nodeClassRef"] = ref
    notes.append(f"{obj.ref}: karpenter.sh/v1beta1 read in its v1 form (WhenUnderutilized as "
                 "WhenEmptyOrUnderutilized after 0s, expireAfter on the node template)")


def fitting_offerings(pool: dict, gpus_per_pod: int, node_selector: dict) -> list:
    """(price, instance type name) of the pool's offerings one serving pod fits on."""
    wanted = node_selector.get(INSTANCE_TYPE_LABEL)
    out = []
    for offering in pool_offerings(NodePoolParams.model_validate(pool)):
        it = offering.instance_type
        if it.num_gpus >= gpus_per_pod and (wanted is None or it.name == wanted) and all(
                offering.labels.get(k) == v for k, v in node_selector.items()
                if k in offering.labels):
            out.append((offering.price_usd_per_hour, it.name))
    return out


def pick_instance_type(pools: list[dict], gpus_per_pod: int, node_selector: dict,
                       where: str) -> InstanceType:
    """The cheapest catalog offering any pool allows that fits one serving pod."""
    candidates = [c for pool in pools for c in fitting_offerings(pool, gpus_per_pod, node_selector)]
    if not candidates:
        names = ", ".join(p["name"] for p in pools)
        raise UserInputError(
            f"NodePool(s) {names} allow no instance type of the catalog with >= {gpus_per_pod} "
            "GPUs for the serving pod; add the instance type to a --catalog file", source=where)
    return instance_types()[min(candidates)[1]]


def root_volume(obj: Manifest) -> tuple[float | None, str | None, bool]:
    """(size GiB, volume type, local NVMe RAID0) of an EC2NodeClass's largest EBS volume."""
    best: tuple[float | None, str | None] = (None, None)
    mappings = obj.get("spec", "blockDeviceMappings") or []
    if not isinstance(mappings, list):
        raise _fail(obj, ("spec", "blockDeviceMappings"), "expected a list of block devices")
    for index, mapping in enumerate(mappings):
        ebs = mapping.get("ebs") if isinstance(mapping, dict) else None
        if not isinstance(ebs, dict) or ebs.get("volumeSize") is None:
            continue
        path = ("spec", "blockDeviceMappings", index, "ebs", "volumeSize")
        try:
            size_gib = parse_quantity(ebs["volumeSize"]) / GIB
        except (TypeError, ValueError):
            raise _fail(
                obj, path, f"expected a size like 200Gi, got {ebs['volumeSize']!r}"
            ) from None
        if not size_gib > 0:  # "-300Gi" parsed and ran (a negative disk: no room note)
            raise _fail(obj, path, f"expected a size > 0 like 200Gi, got {ebs['volumeSize']!r}")
        if best[0] is None or size_gib > best[0]:
            best = (size_gib, ebs.get("volumeType"))
    raid0 = obj.get("spec", "instanceStorePolicy") == "RAID0"
    return best[0], best[1], raid0


def prepulled_image_read_s(obj: Manifest, image_size_gb: float, notes: list[str]
                           ) -> float | None:
    """Seconds a fresh node takes to read the serving image from a data volume restored from an
    EBS snapshot (Bottlerocket keeps containerd's images there: pre-pulled images), at the
    volume's provisioned initialization rate; None when no volume comes from a snapshot. A
    snapshot volume without a rate fills at an unpredictable rate (AWS), so its image is
    simulated as pulled, with a note."""
    mappings = obj.get("spec", "blockDeviceMappings") or []
    for index, mapping in enumerate(mappings if isinstance(mappings, list) else []):
        ebs = mapping.get("ebs") if isinstance(mapping, dict) else None
        if not isinstance(ebs, dict) or not ebs.get("snapshotID"):
            continue
        rate = ebs.get("volumeInitializationRate")
        if rate is None:
            notes.append(f"{obj.ref}: blockDeviceMappings[{index}] is restored from a snapshot "
                         "without volumeInitializationRate (filled from S3 at an unpredictable "
                         "rate); images simulated as pulled")
            return None
        path = ("spec", "blockDeviceMappings", index, "ebs", "volumeInitializationRate")
        if isinstance(rate, bool) or not isinstance(rate, int) or not 100 <= rate <= 300:
            raise _fail(obj, path, f"expected an integer 100-300 (MiB/s), got {rate!r}")
        return snapshot_image_read_s(image_size_gb, rate)
    return None


def nodes_for(replicas: int, gpus_per_pod: int, itype: InstanceType) -> int:
    pods_per_node = max(1, itype.num_gpus // gpus_per_pod)
    return math.ceil(replicas / pods_per_node)


def kai_queues(queues: list[Manifest], pod_queue: str | None, notes: list[str]) -> list[dict]:
    """KAI Queue objects -> QueueParams mappings; the serving pod's queue becomes the simulator's
    default queue (its replicas are placed there)."""
    out = []
    names = {q.name for q in queues}
    rename = {pod_queue: DEFAULT_QUEUE} if pod_queue and pod_queue in names else {}
    if rename and DEFAULT_QUEUE in names:
        rename[DEFAULT_QUEUE] = f"{DEFAULT_QUEUE}-original"
    for q in queues:
        gpu = q.get("spec", "resources", "gpu", default={}) or {}
        entry = {"name": rename.get(q.name, q.name)}
        parent = q.get("spec", "parentQueue")
        if parent:
            entry["parent"] = rename.get(parent, parent)
        for api, ours in (("quota", "quota_gpus"), ("limit", "limit_gpus"),
                          ("overQuotaWeight", "over_quota_weight")):
            if gpu.get(api) is not None:
                entry[ours] = gpu[api]
        if q.get("spec", "priority") is not None:
            entry["priority"] = q.get("spec", "priority")
        out.append(entry)
    if rename:
        notes.append(f"KAI queue {pod_queue} (the serving pod's) simulated as {DEFAULT_QUEUE}")
    elif pod_queue:
        notes.append(f"the serving pod's KAI queue {pod_queue} has no Queue object; "
                     f"simulated in {DEFAULT_QUEUE}")
    if not any(e["name"] == DEFAULT_QUEUE for e in out):
        out.append({"name": DEFAULT_QUEUE})
    return out
