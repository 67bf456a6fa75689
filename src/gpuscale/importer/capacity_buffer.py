"""CapacityBuffer objects (`autoscaling.x-k8s.io` v1alpha1, v1beta1, v1) -> the node provider's
`capacity_buffers` (provisioning/capacity_buffer.py).

A buffer names its chunk either by `scalableRef` (it must be the serving workload: its pods are
the only ones simulated, so the chunk is one serving pod and `percentage` counts them) or by
`podTemplateRef` (a PodTemplate in the bundle: the GPUs, CPU and memory its containers
request, and its nodeSelector). What the API itself rejects, and what the simulation cannot
express, is refused in one line naming the file, the object and the field.
"""

from __future__ import annotations

from gpuscale.audit.context import namespace_of
from gpuscale.audit.loader import Manifest, format_path
from gpuscale.cluster.objects import GPU_RESOURCE
from gpuscale.errors import UserInputError
from gpuscale.provisioning.capacity_buffer import ACTIVE_CAPACITY, CapacityBufferParams
from gpuscale.scenario.load import validate_mapping
from gpuscale.units import MIB, parse_quantity

GROUP = "autoscaling.x-k8s.io"
KIND = "CapacityBuffer"


def _fail(obj: Manifest, path: tuple, message: str) -> UserInputError:
    line, _ = obj.position(path)
    return UserInputError(f"{message} ({obj.ref}, line {line})", source=obj.source,
                          field=format_path(path))


def find(objects: list[Manifest]) -> list[Manifest]:
    return [o for o in objects if o.kind == KIND and o.api_version.startswith(GROUP + "/")]


# Chunks (virtual pods) one buffer may ask for, and its `percentage` (100x the workload): each
# chunk is a pod placed on every provisioning pass, so `replicas: 1e9` never finished a run.
# 10,000 GPU pods is more than any one simulated cluster holds (docs/input-limits.md).
MAX_BUFFER_CHUNKS = 10_000
MAX_BUFFER_PERCENTAGE = 10_000


def _count(obj: Manifest, key: str) -> int | None:
    value = obj.get("spec", key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(obj, ("spec", key), f"expected an integer >= 0, got {value!r}")
    most = MAX_BUFFER_PERCENTAGE if key == "percentage" else MAX_BUFFER_CHUNKS
    if value > most:
        raise _fail(obj, ("spec", key), f"expected at most {most:,} (the buffer's pods are "
                    f"simulated one by one; docs/input-limits.md), got {value:,}")
    return value


def _requests(obj: Manifest, path: tuple, resources: dict) -> tuple[float, int, int]:
    """(GPUs, CPU millicores, memory MiB) of a resource list such as `limits`."""
    try:
        gpus = float(parse_quantity(str(resources.get(GPU_RESOURCE, 0))))
        cpu_milli = int(parse_quantity(str(resources.get("cpu", 0))) * 1000)
        memory_mib = int(parse_quantity(str(resources.get("memory", 0))) / MIB)
    except (TypeError, ValueError):
        raise _fail(obj, path, "expected Kubernetes quantities (\"8\", \"500m\", "
                    "\"16Gi\")") from None
    return gpus, cpu_milli, memory_mib


def _template_shape(obj: Manifest, objects: list[Manifest], name: str) -> dict:
    """The chunk of a `podTemplateRef`: the PodTemplate's summed container requests."""
    path = ("spec", "podTemplateRef", "name")
    found = [o for o in objects if o.kind == "PodTemplate" and o.name == name
             and namespace_of(o) == namespace_of(obj)]
    if not found:
        raise _fail(obj, path, f"PodTemplate {name!r} is not in the manifests; add it (the "
                    "buffer's chunk is its pod)")
    template = found[0]
    spec = template.get("template", "spec", default={}) or {}
    gpus, cpu_milli, memory_mib = 0.0, 0, 0
    for index, container in enumerate(spec.get("containers") or []):
        resources = container.get("resources") if isinstance(container, dict) else None
        if not isinstance(resources, dict):
            continue
        section = resources.get("requests") or resources.get("limits") or {}
        limits = resources.get("limits") or {}
        if GPU_RESOURCE in limits and GPU_RESOURCE not in section:
            section = {**section, GPU_RESOURCE: limits[GPU_RESOURCE]}
        g, c, m = _requests(template, ("template", "spec", "containers", index, "resources"),
                            section)
        gpus, cpu_milli, memory_mib = gpus + g, cpu_milli + c, memory_mib + m
    if gpus < 1 or gpus != int(gpus):
        raise _fail(template, ("template", "spec", "containers"), f"the buffer's pod requests "
                    f"{gpus:g} {GPU_RESOURCE}; a GPU buffer's chunk needs a whole number >= 1")
    selector = spec.get("nodeSelector") or {}
    return {"gpus_per_pod": int(gpus), "cpu_milli": cpu_milli, "memory_mib": memory_mib,
            "node_selector": {str(k): str(v) for k, v in selector.items()}}


def _one(obj: Manifest, objects: list[Manifest], workload: Manifest, gpus_per_pod: int) -> dict:
    strategy = obj.get("spec", "provisioningStrategy", default=ACTIVE_CAPACITY)
    if strategy != ACTIVE_CAPACITY:
        raise _fail(obj, ("spec", "provisioningStrategy"), f"provisioning strategy "
                    f"{strategy!r} is not simulated; only {ACTIVE_CAPACITY}")
    template_ref = obj.get("spec", "podTemplateRef")
    scalable_ref = obj.get("spec", "scalableRef")
    if (template_ref is None) == (scalable_ref is None):
        raise _fail(obj, ("spec",), "set exactly one of podTemplateRef and scalableRef")
    replicas, percentage = _count(obj, "replicas"), _count(obj, "percentage")
    data: dict = {"name": obj.name}
    limits = obj.get("spec", "limits")
    if limits is not None:
        if not isinstance(limits, dict):
            raise _fail(obj, ("spec", "limits"), "expected a resource list")
        others = sorted(str(k) for k in limits if k != GPU_RESOURCE)
        if others:
            raise _fail(obj, ("spec", "limits"), f"limits on {', '.join(others)} are not "
                        f"simulated (GPU buffers are capped by {GPU_RESOURCE} only)")
        data["limits_gpus"] = _requests(obj, ("spec", "limits"), limits)[0]
        if data["limits_gpus"] > MAX_BUFFER_CHUNKS * max(1, gpus_per_pod):
            raise _fail(obj, ("spec", "limits"), f"expected at most {MAX_BUFFER_CHUNKS:,} "
                        f"pods' GPUs (the buffer's pods are simulated one by one; "
                        f"docs/input-limits.md), got {data['limits_gpus']:g} {GPU_RESOURCE}")
    if scalable_ref is not None:
        kind = scalable_ref.get("kind") if isinstance(scalable_ref, dict) else None
        name = scalable_ref.get("name") if isinstance(scalable_ref, dict) else None
        if kind != workload.kind or name != workload.name:
            raise _fail(obj, ("spec", "scalableRef"), f"scalableRef {kind}/{name} is not the "
                        f"serving workload {workload.kind}/{workload.name}; only its pods are "
                        "simulated")
        data |= {"gpus_per_pod": gpus_per_pod, "scalable_labels": {}}
    else:
        if percentage is not None:
            raise _fail(obj, ("spec", "percentage"), "percentage needs a scalableRef (it is a "
                        "share of the referenced workload's replicas)")
        if replicas is None and limits is None:
            raise _fail(obj, ("spec",), "a podTemplateRef buffer needs replicas or limits")
        data |= _template_shape(obj, objects, str(template_ref.get("name", "")))
    if replicas is None and percentage is None and limits is None:
        raise _fail(obj, ("spec",), "set replicas, percentage or limits (the buffer has no "
                    "size)")
    for key, value in (("replicas", replicas), ("percentage", percentage)):
        if value is not None:
            data[key] = value
    params = validate_mapping(CapacityBufferParams, data, source=f"{obj.source} ({obj.ref})")
    return params.model_dump(mode="json", exclude_defaults=True) | {"name": obj.name}


def buffers(objects: list[Manifest], workload: Manifest, gpus_per_pod: int,
            provider: str | None, notes: list[str]) -> list[dict]:
    """The bundle's CapacityBuffers as `capacity_buffers` entries of the node provider."""
    found = find(objects)
    if not found:
        return []
    if provider is None:
        notes.extend(f"{o.ref} not simulated: no Karpenter NodePool or Cluster Autoscaler in "
                     "the bundle provisions for it" for o in found)
        return []
    out = [_one(o, objects, workload, gpus_per_pod) for o in found]
    if provider == "karpenter":
        notes.append("CapacityBuffer simulated as Karpenter with --feature-gates "
                     "CapacityBuffer=true (alpha since v1.13, off by default)")
    notes.append(f"CapacityBuffer: {len(out)} buffer(s); their nodes are ready at t=0 "
                 "without the vLLM image, and launched again when serving pods take them")
    return out
