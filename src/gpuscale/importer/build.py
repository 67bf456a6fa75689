"""Manifests + trace -> one `Scenario` the unchanged simulator runs, plus what was assumed.

`import_manifests` reads the bundle (files, directories or `-`), finds the vLLM workload, its
scaler (HPA or ScaledObject whose scaleTargetRef names it), the Karpenter NodePools and their
EC2NodeClasses, KAI Queues and PDBs, and builds the scenario mapping; the scenario's own
validation then checks it. `defaults` lists every value the manifests left open (shown in the
output), `notes` how something was read when it could not be taken literally.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from gpuscale.audit.loader import Manifest, load_inputs
from gpuscale.catalog import Precision, get_instance_type, get_model
from gpuscale.errors import WRONG_VALUE_ERRORS, UserInputError
from gpuscale.importer import (
    capacity_buffer,
    cluster_autoscaler,
    pdb,
    podgroups,
    prometheus_rules,
    scaled_object,
    scalers,
    workload,
)
from gpuscale.importer import nodes as nodes_mod
from gpuscale.importer.promql import QueryContext, engine_equivalents
from gpuscale.importer.traces import detect_format
from gpuscale.metrics.exposition import known_series
from gpuscale.scenario.load import scenario_from_dict
from gpuscale.scenario.models import Scenario
from gpuscale.serving.engine_defaults import DEFAULT_IMAGE_SIZE_GB
from gpuscale.units import gpus_text, outside_wall_clock_range
from gpuscale.workloads.traces import TRACE_READERS

DEFAULT_NAME = "manifests"
KAI_SCHEDULER = "kai-scheduler"


@dataclass
class Imported:
    scenario: Scenario
    data: dict  # the scenario mapping (for --emit-scenario)
    sources: list[str]
    defaults: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"sources": self.sources, "defaults": self.defaults, "notes": self.notes}


def _by_kind(objects: list[Manifest], *kinds: str) -> list[Manifest]:
    return [o for o in objects if o.kind in kinds]


def _same_namespace(a: Manifest, b: Manifest) -> bool:
    """An object without a namespace lands in the one it is applied to: it matches any."""
    return not a.namespace or not b.namespace or a.namespace == b.namespace


def _scaler(objects: list[Manifest], target: str,
            workload_obj: Manifest | None = None) -> tuple[Manifest | None, str]:
    found = [o for o in _by_kind(objects, "HorizontalPodAutoscaler", "ScaledObject")
             if scalers.target_name(o) == target
             and (workload_obj is None or _same_namespace(o, workload_obj))]
    if len(found) > 1:
        refs = ", ".join(f"{o.ref} ({o.source})" for o in found)
        raise UserInputError(f"several autoscalers scale {target}: {refs}; they would fight "
                             "(audit rule GPU014); keep one", field="manifests")
    return (found[0], found[0].kind) if found else (None, "")


def _autoscaler(objects: list[Manifest], wl, defaults: list[str], notes: list[str],
                ctx: QueryContext) -> dict:
    obj, kind = _scaler(objects, wl.obj.name, wl.obj)
    if obj is None:
        elsewhere = [o.ref for o in _by_kind(objects, "HorizontalPodAutoscaler", "ScaledObject")
                     if scalers.target_name(o) == wl.obj.name]
        notes.extend(f"{ref} targets {wl.obj.name} in another namespace than {wl.obj.ref}: "
                     "not its autoscaler" for ref in elsewhere)
        defaults.append(f"autoscaler: none scales {wl.obj.name}; held at spec.replicas "
                        f"({wl.replicas})")
        return {"kind": "fixed", "replicas": wl.replicas}
    spec, more = (
        scalers.hpa(obj) if kind == "HorizontalPodAutoscaler" else scaled_object.read(obj, ctx)
    )
    notes.extend(more)
    return spec


def serving_labels(wl) -> dict:
    """The labels the serving pods' series carry: the Deployment's namespace and name, the
    served model name (`metrics` of the scenario)."""
    namespace = wl.obj.namespace or "default"
    served = str(wl.args.get("served_model_name") or wl.args.get("model"))
    return {"namespace": namespace, "served_model_name": served, "deployment": wl.obj.name}


def bundle_labels(inputs: list[str]) -> dict:
    """`serving_labels` of a bundle's serving workload, read without a trace."""
    return serving_labels(workload.find_serving_workload(load_inputs(inputs)))


def _metrics_labels(objects: list[Manifest], wl) -> tuple[dict, QueryContext]:
    """The labels the simulated series carry and the context the scalers' queries are checked
    in."""
    metrics = serving_labels(wl)
    namespace, served = metrics["namespace"], metrics["served_model_name"]
    ctx = QueryContext(known_series(wl.args.engine), prometheus_rules.recorded_names(objects),
                       {"namespace": namespace, "model_name": served},
                       equivalents=engine_equivalents(wl.args.engine))
    return metrics, ctx


def _queries(node: object) -> list[str]:
    """Every PromQL query in the imported autoscaler section (a `query:` or `promql:` string;
    the shorthand `{metric, ...}` reads an exporter's series, never a rule)."""
    if isinstance(node, dict):
        return [q for key, value in node.items()
                for q in ([value] if key in ("query", "promql") and isinstance(value, str)
                          else _queries(value))]
    if isinstance(node, (list, tuple)):
        return [q for item in node for q in _queries(item)]
    return []


def replica_bounds(autoscaler: dict) -> tuple[int, int]:
    if autoscaler["kind"] == "hpa":
        return autoscaler["min_replicas"], autoscaler["max_replicas"]
    if autoscaler["kind"] == "keda":
        return autoscaler.get("min_replica_count", 0), autoscaler.get("max_replica_count", 100)
    return autoscaler["replicas"], autoscaler["replicas"]


def _initial_replicas(autoscaler: dict, wl, low: int, high: int, notes: list[str]) -> int:
    """The replicas at t=0: the workload's, within the scaler's bounds, except where the
    scaler would not move them (a paused ScaledObject, an HPA whose target is at 0)."""
    if autoscaler["kind"] == "keda" and autoscaler.get("paused_replicas") is not None:
        notes.append(f"{wl.obj.ref} held at {autoscaler['paused_replicas']} replica(s): its "
                     "ScaledObject is paused (autoscaling.keda.sh/paused-replicas)")
        return autoscaler["paused_replicas"]
    if autoscaler["kind"] == "keda" and autoscaler.get("paused"):
        notes.append(f"{wl.obj.ref} held at its {wl.replicas} replica(s): its ScaledObject is "
                     "paused (autoscaling.keda.sh/paused)")
        return wl.replicas
    if autoscaler["kind"] == "hpa" and wl.replicas == 0:
        # horizontal.go: a target at 0 the HPA did not scale there itself is left alone
        # (with minReplicas 0 too: KEP-2021's ScaledToZero condition is not set).
        notes.append(f"{wl.obj.ref} has replicas 0: its HorizontalPodAutoscaler leaves a target "
                     "at 0 alone (ScalingDisabled), so nothing scales it")
        return 0
    return min(max(wl.replicas, low), high)


def _pod_labels(wl) -> dict:
    meta = wl.pod.get("metadata") if isinstance(wl.pod, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else {}


def _unsimulated(objects: list[Manifest], wl, notes: list[str]) -> None:
    """Objects read but not simulated: say so rather than drop them silently."""
    found = cluster_autoscaler.find(objects)
    if found is not None and _by_kind(objects, "NodePool"):
        notes.append(f"{found[0].ref} (Cluster Autoscaler) not simulated: the bundle's Karpenter "
                     "NodePools provision the serving nodes")


def _trace(path: Path, defaults: list[str]) -> tuple[dict, float, dict]:
    if str(path) == "-":
        raise UserInputError("a trace is read from a file, not stdin (the scenario refers to "
                             "it by path; --manifests - reads stdin); save it and give the path",
                             field="--trace")
    fmt = detect_format(path)
    requests = TRACE_READERS[fmt](path)
    if len(requests) == 0:
        raise UserInputError("trace has no requests", source=str(path))
    duration_s = max(1.0, math.ceil(requests.span_s) + 1.0)
    defaults.append(f"workload: {fmt} trace {path.name}, {len(requests)} requests over "
                    f"{duration_s:g} s; drain 600 s")
    clock: dict = {}
    if requests.start_time is not None:  # the cron triggers read the trace's own wall clock
        if (why := outside_wall_clock_range(requests.start_time)) is not None:
            raise UserInputError(f"the first request's time: {why}", source=str(path))
        clock["start_time"] = requests.start_time.isoformat()
        defaults.append(f"start_time: {clock['start_time']}, the trace's first request")
    return {"kind": "trace", "format": fmt, "path": str(path.resolve())}, duration_s, clock


def _cluster_and_nodes(objects, wl, tp: int, initial: int, max_replicas: int,
                       model_name: str, defaults: list[str], notes: list[str],
                       cold_start: dict) -> tuple[dict, dict | None]:
    tolerations = wl.pod_spec.get("tolerations") or []
    selector = wl.pod_spec.get("nodeSelector") or {}
    where = ", ".join(sorted({o.source for o in objects})) or "manifests"
    pools = _serving_pools(objects, tolerations, selector, tp, notes, where)
    if pools:
        itype = nodes_mod.pick_instance_type(pools, tp, selector, where)
        nodes = {"kind": "karpenter", "node_pools": pools}
        defaults.append("nodes: Karpenter node latencies launch 45 s + registration 120 s + "
                        "initialization 105 s (medians; docs/provisioning.md)")
        _node_class(objects, pools, itype, model_name, cold_start, defaults, notes)
    elif (found := cluster_autoscaler.find(objects)) is not None:
        # No NodePool but a Cluster Autoscaler Deployment: its flags are layer 1.
        nodes, itype = cluster_autoscaler.provider_section(
            found[0], found[1], selector.get(nodes_mod.INSTANCE_TYPE_LABEL), tp, initial,
            max_replicas, defaults, notes, objects=objects)
    else:
        name = selector.get(nodes_mod.INSTANCE_TYPE_LABEL)
        if not name:
            raise UserInputError("no Karpenter NodePool and no node.kubernetes.io/instance-type "
                                 "nodeSelector on the serving pod: the instance type is unknown; "
                                 "add the NodePool manifest", field="manifests")
        itype = get_instance_type(name)
        nodes = None
        defaults.append("nodes: no NodePool; a fixed-size pool with 5-minute node launches")
    ready = nodes_mod.nodes_for(initial, tp, itype)
    most = max(ready, nodes_mod.nodes_for(max(max_replicas, 1), tp, itype))
    defaults.append(f"cluster: {ready} {itype.name} node(s) ready at t=0 (enough for the "
                    f"{initial} initial replica(s))")
    return {"instance_type": itype.name, "ready_nodes": ready, "max_nodes": most}, nodes


def _serving_pools(objects, tolerations, selector, tp, notes, where) -> list[dict]:
    """The NodePools the serving pod can land on; the others (a tainted training pool, a CPU
    pool, one its nodeSelector excludes) are dropped with a note, as no serving pod uses them."""
    pools, refused, unfit = [], [], []
    wanted_pool = selector.get("karpenter.sh/nodepool")
    for obj in _by_kind(objects, "NodePool"):
        if wanted_pool is not None and obj.name != wanted_pool:
            notes.append(f"{obj.ref} dropped: the serving pod's nodeSelector picks NodePool "
                         f"{wanted_pool}")
            continue
        try:
            pool = nodes_mod.node_pool(obj, tolerations, notes)
        except nodes_mod.Untolerated as exc:
            refused.append(exc)
            continue
        if not nodes_mod.fitting_offerings(pool, tp, selector):
            unfit.append(pool)
            continue
        pools.append(pool)
    if refused and not pools:
        raise refused[0]
    if unfit and not pools:
        nodes_mod.pick_instance_type(unfit, tp, selector, where)  # raises, naming the pools
    notes.extend(f"NodePool/{p['name']} dropped: none of its catalog instance types fits the "
                 f"serving pod ({gpus_text(tp)})" for p in unfit)
    notes.extend(f"NodePool dropped: {exc}" for exc in refused)
    return pools


def _node_class(objects, pools, itype, model_name, cold_start, defaults, notes) -> None:
    classes = {o.name: o for o in _by_kind(objects, "EC2NodeClass")}
    used = {p.get("node_class_ref", {}).get("name", "default") for p in pools}
    found = [classes[n] for n in sorted(used) if n in classes]
    if not found:
        defaults.append("cold_start.weight_storage: gp3 (no EC2NodeClass given)")
        return
    prepulled = nodes_mod.prepulled_image_read_s(found[0], DEFAULT_IMAGE_SIZE_GB, notes)
    if prepulled is not None:
        cold_start["image_pull"] = {"kind": "fixed", "value_s": prepulled}
        defaults.append(f"cold_start.image_pull: {prepulled:.1f} s, the image read from "
                        f"{found[0].ref}'s snapshot volume at its volumeInitializationRate "
                        "(pre-pulled images; serving/cold_start.py)")
    size_gib, volume_type, raid0 = nodes_mod.root_volume(found[0])
    if raid0:
        cold_start["weight_storage"] = "local-nvme"
    elif volume_type in ("gp3", "io2"):
        cold_start["weight_storage"] = volume_type
    else:
        defaults.append(f"cold_start.weight_storage: gp3 ({found[0].ref} volumeType "
                        f"{volume_type or 'unset'})")
    if size_gib is not None and not raid0:
        # Weights are downloaded to the node disk at their stored precision (bf16 here, an
        # upper bound for fp8 checkpoints); the image is the 12 GB default.
        weights_gib = get_model(model_name).weight_bytes(Precision.BF16) / 2**30
        need_gib = 12e9 / 2**30 + weights_gib
        if size_gib < need_gib:
            notes.append(f"{found[0].ref}: {size_gib:g} GiB volume < ~{need_gib:.0f} GiB for the "
                         "12 GB image plus the weights: pulls would fail with DiskPressure in "
                         "the cluster (audit rule GPU026); simulated as if they fit")


def import_manifests(inputs: list[str], trace: Path, *, name: str | None = None,
                     stdin=None) -> Imported:
    """The Scenario the bundle describes, run on `trace`."""
    objects = load_inputs(inputs, stdin=stdin)
    try:
        return _import(objects, inputs, trace, name)
    except WRONG_VALUE_ERRORS as exc:
        # A field of a type its API does not allow, met where the readers above do not check
        # it one by one: still one line naming the files, never a traceback.
        sources = ", ".join(sorted({o.source for o in objects})) or ", ".join(inputs)
        raise UserInputError(f"a field has a type its API does not allow ({exc}); check the "
                             "objects with `kubectl apply --dry-run=client`",
                             source=sources) from None


def _import(objects: list[Manifest], inputs: list[str], trace: Path,
            name: str | None) -> Imported:
    wl = workload.find_serving_workload(objects)
    defaults: list[str] = []
    notes = wl.notes
    model = workload.model_section(wl)
    # GPUs per pod: the replica's (the engine's parallelism), over a LeaderWorkerSet group's pods.
    tp = workload.gpus_per_pod(wl, model["tp"] * model.get("pp", 1))
    workload.gpus_requested(wl, tp)
    metrics, ctx = _metrics_labels(objects, wl)
    autoscaler = _autoscaler(objects, wl, defaults, notes, ctx)
    read = prometheus_rules.rules_read(objects, prometheus_rules.names_read(_queries(autoscaler)))
    metrics["rule_groups"] = prometheus_rules.rule_groups(objects, ctx, notes, read)
    metrics["extra_labels"] = ctx.extra_labels
    low, high = replica_bounds(autoscaler)
    initial = _initial_replicas(autoscaler, wl, low, high, notes)
    high = max(high, initial)
    cold_start = workload.cold_start_section(wl, defaults)
    size = wl.group_size
    cluster, nodes = _cluster_and_nodes(objects, wl, tp, initial * size, high * size,
                                        model["name"], defaults, notes, cold_start)
    _disruption_objects(objects, wl, tp, nodes, notes)
    scheduler, group = _scheduler(objects, wl, high, notes)
    workload_spec, duration_s, clock = _trace(trace, defaults)
    engine = workload.engine_section(wl, defaults)
    workload.kv_cache_utilization(wl, engine, model, get_instance_type(
        cluster["instance_type"]).gpu_spec.memory_gib)
    data: dict = {
        "name": name or wl.obj.name or DEFAULT_NAME,
        "description": f"imported from {', '.join(inputs)} with trace {trace}",
        "duration_s": duration_s,
        **clock,
        "model": model,
        "engine": engine,
        "cold_start": cold_start,
        "cluster": cluster,
        "workload": workload_spec,
        "initial_replicas": initial,
        "metrics": metrics,
        "pod_annotations": workload.pod_annotations(wl),
        "scheduler": scheduler,
        **({"pod_group": group} if group else {}),
        "strategies": [{"name": name or wl.obj.name or DEFAULT_NAME, "autoscaler": autoscaler,
                        **({"nodes": nodes} if nodes else {})}],
    }
    defaults.append("slo: ttft 2 s, tpot 0.2 s; scrape interval 15 s; request timeout 600 s")
    _unsimulated(objects, wl, notes)
    sources = sorted({o.source for o in objects})
    try:
        scenario = scenario_from_dict(data, source=f"<scenario from {', '.join(inputs)}>")
    except UserInputError as exc:
        raise _at_manifest(exc, objects, wl) from None
    return Imported(scenario, data, sources, defaults, notes)


def _at_manifest(exc: UserInputError, objects: list[Manifest], wl) -> UserInputError:
    """A scenario check that failed on a value read from the manifests, said at the object it
    came from (the user never saw the scenario): the workload for model, engine and cold
    start, the scaler for the autoscaler, the NodePools for the nodes."""
    where = ": ".join(p for p in (exc.source, exc.field) if p)
    text = str(exc)
    message = text[len(where) + 2:] if where and text.startswith(where + ": ") else text
    field = exc.field or ""
    if "autoscaler" in field:
        found = _scaler(objects, wl.obj.name, wl.obj)[0]
        refs = [found] if found is not None else [wl.obj]
    elif "nodes" in field:
        refs = _by_kind(objects, "NodePool") or [wl.obj]
    else:
        refs = [wl.obj]
    source = ", ".join(sorted({o.source for o in refs}))
    shown = ", ".join(o.ref for o in refs)
    return UserInputError(f"{message} (read from {shown}; scenario field {field or 'top level'})",
                          source=source)


def _disruption_objects(objects: list[Manifest], wl, tp: int, nodes: dict | None,
                        notes: list[str]) -> None:
    """CapacityBuffers and PodDisruptionBudgets: both act through the node provider."""
    provider = None if nodes is None else nodes["kind"]
    buffers = capacity_buffer.buffers(objects, wl.obj, tp, provider, notes)
    budgets = pdb.budgets(objects, wl.obj, _pod_labels(wl), provider, notes)
    if nodes is not None:
        if buffers:
            nodes["capacity_buffers"] = buffers
        if budgets:
            nodes["pod_disruption_budgets"] = budgets


def _scheduler(objects: list[Manifest], wl, max_replicas: int,
               notes: list[str]) -> tuple[dict, dict | None]:
    """The `scheduler` section and the serving pods' KAI PodGroup (`pod_group`), if any."""
    queues = _by_kind(objects, "Queue")
    kai = wl.pod_spec.get("schedulerName") == KAI_SCHEDULER or bool(queues)
    group, group_queue = podgroups.pod_group(objects, wl.obj, workload.pod_annotations(wl), kai,
                                             max_replicas, notes)
    if not kai:
        return {"kind": "kube-scheduler"}, None
    labels = _pod_labels(wl)
    pod_queue = group_queue or next(
        (labels[k] for k in nodes_mod.KAI_QUEUE_LABELS if k in labels), None)
    return {"kind": "kai", "queues": nodes_mod.kai_queues(queues, pod_queue, notes)}, group
