"""The run's Prometheus: the series the simulated cluster exposes, scraped into a
`promql.SeriesStore` at every scrape, the recording rules over them, and the engine the
autoscalers' PromQL queries run on.

Only what is read is collected: `wanted` holds the sample names some query or rule reads
(every one when the run exports its series, `--metrics-out`); a family nobody reads costs
nothing. Names, labels and sources: metrics/exposition.py. Timestamps are the scenario's
`start_time` plus simulated time, in milliseconds, as Prometheus stores them.

A vanished series is not marked stale: a live Prometheus writes a staleness marker when a
pod's series disappear, but OpenMetrics text cannot carry one, so a Prometheus backfilled
from `--metrics-out` would see the last sample for the 5-minute lookback. The simulated
Prometheus does the same, so every value a controller read is what the backfilled copy
returns (docs/promql.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from gpuscale.metrics import exposition as ex
from gpuscale.metrics.request_series import EngineCounters
from gpuscale.metrics.store import FB_USED, GPU_UTIL, KV_USAGE, RUNNING, WAITING
from gpuscale.promql import Engine, SeriesStore
from gpuscale.promql import labels as lbl
from gpuscale.promql.parse import metric_names, parse
from gpuscale.promql.rules import Group, Rule, install

_ENGINE_GAUGES = (("waiting", WAITING), ("running", RUNNING), ("kv_usage", KV_USAGE))
_PREFIX = (("prefix_queries", "vllm:prefix_cache_queries"),
           ("prefix_hits", "vllm:prefix_cache_hits"))
NODEPOOL_LABEL = "karpenter.sh/nodepool"  # provisioning/fit.py writes it on Karpenter's nodes
_PORT = {"vllm": 8000, "sglang": 30000, "trtllm": 8000}  # the servers' default ports


class EventSource(Protocol):
    """What the collector needs of a deployment beyond the scrape (sim.fleet.Fleet)."""

    name: str

    @property
    def desired(self) -> int: ...

    @property
    def gateway(self) -> Any: ...

    @property
    def slots(self) -> Mapping[str, Any]: ...  # pod name -> slot (`.replica`, the engine)

    def engine_events(self) -> list[tuple[str, Any]]: ...


def wanted_names(queries: Iterable[str], rules: Sequence[Rule]) -> frozenset[str] | None:
    """The sample names `queries` read, through the recording rules they read; None when a
    selector matches names by regex (everything may be read)."""
    by_record: dict[str, list[str]] = {}
    for rule in rules:
        by_record.setdefault(rule.record, []).append(rule.expr)
    out: set[str] = set()
    todo = list(queries)
    seen: set[str] = set()
    while todo:
        names = metric_names(parse(todo.pop()))
        if names is None:
            return None
        for name in names - seen:
            seen.add(name)
            out.add(name)
            todo.extend(by_record.get(name, ()))
    return frozenset(out)


class SimulatedPrometheus:
    """Collects the wanted series at each scrape; `engine` answers queries over them."""

    def __init__(self, *, origin_ms: int, namespace: str, model_name: str, engine_kind: str,
                 max_model_len: int, gpu_model: str, wanted: frozenset[str] | None,
                 evaluation_interval_s: float,
                 rule_groups: Sequence[tuple[str, float | None, tuple[Rule, ...]]] = (),
                 end_s: float | None = None,
                 extra_labels: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.store = SeriesStore(origin_ms=origin_ms)
        self.engine = Engine(self.store, subquery_step_ms=int(evaluation_interval_s * 1000))
        self.namespace, self.model_name, self.kind = namespace, model_name, engine_kind
        self.gpu_model = gpu_model
        self.extra_labels = {k: dict(v) for k, v in (extra_labels or {}).items()}
        self.port = _PORT[engine_kind]
        self.engine_families = ex.engine_families(engine_kind, max_model_len)
        catalog = {**self.engine_families, **ex.DCGM, **ex.KUBE_STATE, **ex.GATEWAY,
                   **ex.KARPENTER, **ex.KEDA}
        self.families = {q: f for q, f in catalog.items()
                         if wanted is None or any(n in wanted for n in f.sample_names)}
        for family in self.families.values():
            self.store.describe(family.name, family.type, family.help, family.sample_names)
        self.request_families = {q: f for q, f in self.families.items()
                                 if q in ex.REQUEST_QUANTITIES and q in self.engine_families}
        self._counters: dict[int, tuple[Any, EngineCounters]] = {}  # by id(ReplicaEvents)
        self._seen: set[int] = set()
        self._nodes_seen: dict[str, str] = {}  # node -> NodePool, every node ever seen
        self._keda: dict[tuple[str, int], tuple[str, float, bool]] = {}
        self._hpas: dict[str, tuple[int, int, int, int]] = {}  # name -> min, max, cur, desired
        self._batch: dict[str, tuple[list[int], list[float]]] = {}
        self._sids: dict[tuple, int] = {}
        self._arrays: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        self._bucket_sids: dict[tuple[str, str], np.ndarray] = {}
        end_ms = None if end_s is None else self.engine.time_ms(end_s)
        self.end_ms = end_ms  # the run's end: the export fills recording rules up to it
        self.groups: list[Group] = install(self.store, self.engine, [
            (name, int((interval or evaluation_interval_s) * 1000), rules)
            for name, interval, rules in rule_groups], end_ms)

    @property
    def wants_keda(self) -> bool:
        """Whether KEDA's own metrics are collected (the operator's polls publish them)."""
        return "metrics_value" in self.families or "active" in self.families

    @property
    def wants_hpa(self) -> bool:
        """Whether kube-state-metrics' HorizontalPodAutoscaler series are collected."""
        return any(q in self.families for q in ex.HPA_FAMILIES)

    @property
    def records_events(self) -> bool:
        """Whether engines must keep their ReplicaEvents (a request series is wanted)."""
        return bool(self.request_families)

    # -- the scrape ------------------------------------------------------------------------
    def collect(self, now_s: float, pools: Mapping[str, EventSource],
                raw_by_role: Mapping[str, list[tuple[str, bool, bool, dict[str, float]]]],
                cluster: Any, table: Any) -> None:
        t_ms = self.engine.time_ms(now_s)
        gpu_index = _gpu_indices(cluster) if "gpu_util" in self.families \
            or "fb_used" in self.families else {}
        self._seen = set()
        for role, pool in pools.items():
            raw = raw_by_role.get(role, [])
            self._pods(pool.name, raw, cluster, gpu_index)
            if self.request_families:
                self._requests(pool.name, pool.engine_events(), table)
            self._deployment(pool, raw)
            self._inflight(pool, raw, table)
        # The engines gone since the last scrape take their counters with them.
        self._counters = {k: v for k, v in self._counters.items() if k in self._seen}
        self._nodes(cluster)
        self._keda_gauges()
        self._hpa_gauges()
        for name, (sids, values) in self._batch.items():
            self.store.families[name].append(t_ms, np.array(sids, dtype=np.int32),
                                             np.array(values))
        for name, chunks in self._arrays.items():
            self.store.families[name].append(t_ms, np.concatenate([c[0] for c in chunks]),
                                             np.concatenate([c[1] for c in chunks]))
        self._batch = {}
        self._arrays = {}

    def _emit(self, sample: str, key: tuple, labels: Mapping[str, str], value: float) -> None:
        sid = self._sids.get((sample, key))
        if sid is None:
            sid = self._sid(sample, labels)
            self._sids[(sample, key)] = sid
        sids, values = self._batch.setdefault(sample, ([], []))
        sids.append(sid)
        values.append(float(value))

    def _sid(self, sample: str, labels: Mapping[str, str]) -> int:
        extra = self.extra_labels.get(sample, {})
        return self.store.family(sample).series_id(
            lbl.make({**labels, **extra, lbl.NAME: sample}))

    def _emit_buckets(self, sample: str, pod: str, labels: Mapping[str, str],
                      les: tuple[str, ...], counts: np.ndarray) -> None:
        """A histogram's cumulative bucket counts, one series per `le` (ids cached per pod)."""
        sids = self._bucket_sids.get((sample, pod))
        if sids is None:
            sids = np.array([self._sid(sample, {**labels, "le": le}) for le in les],
                            dtype=np.int32)
            self._bucket_sids[(sample, pod)] = sids
        self._arrays.setdefault(sample, []).append((sids, counts))

    def _target(self, deployment: str, pod: str) -> dict[str, str]:
        """The labels a ServiceMonitor scrape of the engine's pod carries."""
        labels = {"namespace": self.namespace, "pod": pod, "container": self.kind,
                  "job": deployment, "instance": f"{pod}:{self.port}",
                  "model_name": self.model_name}
        if self.kind == "vllm":
            labels["engine"] = "0"
        return labels

    def _pods(self, deployment: str, raw: list, cluster: Any,
              gpu_index: dict[str, list[int]]) -> None:
        fams = self.families
        for name, bound, ready, values in raw:
            if WAITING in values:
                target = self._target(deployment, name)
                for quantity, key in _ENGINE_GAUGES:
                    if quantity in fams:
                        self._emit(fams[quantity].name, (name,), target, values[key])
                for quantity, key in _PREFIX:
                    if quantity in fams and key in values:
                        self._emit(fams[quantity].sample_names[0], (name,), target, values[key])
            if bound:
                self._dcgm(deployment, name, values, cluster, gpu_index)
            if "pod_phase" in fams:
                phase = "Running" if bound else "Pending"
                for each in ex.POD_PHASES:
                    self._emit(fams["pod_phase"].name, (name, each), self._ksm(
                        pod=name, phase=each), float(each == phase))
            if "pod_ready" in fams:
                for condition in ("false", "true", "unknown"):
                    self._emit(fams["pod_ready"].name, (name, condition), self._ksm(
                        pod=name, condition=condition), float((condition == "true") == ready
                                                              and condition != "unknown"))

    def _ksm(self, **labels: str) -> dict[str, str]:
        return {"namespace": self.namespace, "job": "kube-state-metrics",
                "instance": "kube-state-metrics:8080", **labels}

    def _dcgm(self, deployment: str, pod_name: str, values: dict[str, float], cluster: Any,
              gpu_index: dict[str, list[int]]) -> None:
        pod = cluster.pods.get(pod_name)
        if pod is None or pod.node_name is None:
            return
        for quantity, key in (("gpu_util", GPU_UTIL), ("fb_used", FB_USED)):
            if quantity not in self.families or key not in values:
                continue
            for gpu in gpu_index.get(pod_name, ()):
                node = pod.node_name
                labels = {"gpu": str(gpu), "UUID": f"GPU-{node}-{gpu}", "device": f"nvidia{gpu}",
                          "modelName": self.gpu_model, "Hostname": node,
                          "namespace": self.namespace, "pod": pod_name,
                          "container": self.kind, "job": "dcgm-exporter",
                          "instance": f"{node}:9400"}
                self._emit(self.families[quantity].name, (pod_name, node, gpu), labels,
                           values[key])

    def _requests(self, deployment: str, events: list[tuple[str, Any]], table: Any) -> None:
        live = {}
        for pod, log in events:
            # Keyed by the engine's event log itself (held, so its id is not reused): a new
            # engine on the same pod starts from 0, as a restarted vLLM does.
            known = self._counters.get(id(log))
            counters = known[1] if known is not None and known[0] is log else EngineCounters(
                self.request_families)
            live[id(log)] = (log, counters)
            counters.observe(table, log.first_tokens, log.completions)
            log.first_tokens = []
            log.completions = []
            target = self._target(deployment, pod)
            self._engine_counters(pod, target, counters)
        self._counters.update(live)
        self._seen.update(live)

    def _engine_counters(self, pod: str, target: dict[str, str],
                         counters: EngineCounters) -> None:
        for quantity, total in counters.counters.items():
            family = self.request_families[quantity]
            if quantity == "request_success":
                for reason in ex.FINISH_REASONS:
                    self._emit(family.sample_names[0], (pod, reason),
                               {**target, "finished_reason": reason},
                               total if reason == "stop" else 0.0)
            else:
                self._emit(family.sample_names[0], (pod,), target, total)
        for quantity, hist in counters.histograms.items():
            bucket, total_name, count_name = self.request_families[quantity].sample_names
            self._emit_buckets(bucket, pod, target, hist.les, hist.cumulative())
            self._emit(total_name, (pod,), target, hist.sum)
            self._emit(count_name, (pod,), target, hist.total)

    def _deployment(self, pool: EventSource, raw: list) -> None:
        fams = self.families
        ready = sum(1 for _, _, is_ready, _ in raw if is_ready)
        labels = self._ksm(deployment=pool.name)
        values = {"deployment_spec_replicas": pool.desired, "deployment_status_replicas": len(raw),
                  "deployment_ready": ready, "deployment_available": ready,
                  "deployment_unavailable": max(len(raw) - ready, 0)}
        for quantity, value in values.items():
            if quantity in fams:
                self._emit(fams[quantity].name, (pool.name,), labels, float(value))
        serving = [values_ for _, _, is_ready, values_ in raw if WAITING in values_]
        epp = {"namespace": self.namespace, "job": f"{pool.name}-epp",
               "instance": f"{pool.name}-epp:9090"}
        saturation = {**epp, "inference_pool": pool.name}
        flow = {**epp, "inference_pool": pool.name, "model_name": self.model_name,
                "target_model_name": self.model_name, "fairness_id": "default", "priority": "0"}
        gauges = {
            "flow_queue": (flow, float(len(pool.gateway))),
            "flow_queue_upstream": (flow, float(len(pool.gateway))),
            "request_running": ({**epp, "model_name": self.model_name,
                                 "target_model_name": self.model_name},
                                sum(v[WAITING] + v[RUNNING] for v in serving)),
            "pool_queue": ({**epp, "name": pool.name},
                           _mean([v[WAITING] for v in serving])),
            "pool_kv": ({**epp, "name": pool.name}, _mean([v[KV_USAGE] for v in serving])),
            "pool_ready": ({**epp, "name": pool.name}, float(ready)),
            "pool_saturation": (saturation, _pool_saturation(serving)),
            "pool_saturation_upstream": (saturation, _pool_saturation(serving)),
        }
        for quantity, (labels_, value) in gauges.items():
            if quantity in fams:
                self._emit(fams[quantity].name, (pool.name,), labels_, value)

    def _inflight(self, pool: EventSource, raw: list, table: Any) -> None:
        """The EPP's in-flight load producer, per endpoint: the requests dispatched to it and
        not finished, and their prompt tokens until the first token (producer.go books both
        at PreRequest; with output tokens not estimated, the default, a request's tokens are
        released at its first response chunk, the request at its last)."""
        fams = self.families
        if "inflight_tokens" not in fams and "inflight_requests" not in fams:
            return
        for name, _, _, values in raw:
            slot = pool.slots.get(name)
            replica = slot.replica if slot is not None else None
            if replica is None or WAITING not in values:
                continue
            labels = {"namespace": self.namespace, "job": f"{pool.name}-epp",
                      "instance": f"{pool.name}-epp:9090", "endpoint_name": name,
                      "producer_name": ex.INFLIGHT_PRODUCER, "fairness_id": "default",
                      "priority": "0"}
            if "inflight_requests" in fams:
                self._emit(fams["inflight_requests"].name, (name,), labels,
                           values[WAITING] + values[RUNNING])
            if "inflight_tokens" in fams:
                self._emit(fams["inflight_tokens"].name, (name,), labels,
                           _prompt_tokens_before_first_token(replica, table))

    def _nodes(self, cluster: Any) -> None:
        fams = self.families
        for node in cluster.nodes.values():
            # Karpenter counts only the nodes it launched (they carry its NodePool label).
            self._nodes_seen.setdefault(node.name, node.labels.get(NODEPOOL_LABEL, ""))
            if "node_allocatable" in fams:
                self._emit(fams["node_allocatable"].name, (node.name,), self._ksm(
                    node=node.name, resource="nvidia_com_gpu", unit="integer"),
                    float(node.num_gpus))
            if "node_condition" in fams:
                ready = node.state.value == "ready"
                for status in ("false", "true", "unknown"):
                    self._emit(fams["node_condition"].name, (node.name, status), self._ksm(
                        node=node.name, condition="Ready", status=status),
                        float((status == "true") == ready and status != "unknown"))
        for quantity, gone in (("nodes_created", False), ("nodes_terminated", True)):
            if quantity not in fams:
                continue
            counts: dict[str, int] = {}
            for node, pool in self._nodes_seen.items():
                if pool and (not gone or node not in cluster.nodes):
                    counts[pool] = counts.get(pool, 0) + 1
            for pool, count in sorted(counts.items()):
                self._emit(fams[quantity].sample_names[0], (pool,),
                           {"nodepool": pool, "job": "karpenter",
                            "namespace": "kube-system"}, float(count))

    # -- KEDA's own metrics -----------------------------------------------------------------
    def publish_keda(self, scaled_object: str, triggers: list[dict]) -> None:
        """A KEDA poll's trigger values, exposed by the operator until the next poll."""
        for index, trigger in enumerate(triggers):
            value = trigger.get("read_as")
            active = value is not None and value > trigger.get("activation_threshold", 0.0)
            self._keda[(scaled_object, index)] = (str(trigger.get("name", "")),
                                                  float(value) if value is not None else 0.0,
                                                  active)

    def _keda_gauges(self) -> None:
        for (scaled_object, index), (metric, value, active) in sorted(self._keda.items()):
            labels = {"namespace": self.namespace, "scaledObject": scaled_object,
                      "scaler": "prometheusScaler", "triggerIndex": str(index),
                      "metric": metric, "type": "scaledobject", "job": "keda-operator"}
            if "metrics_value" in self.families:
                self._emit(self.families["metrics_value"].name, (scaled_object, index), labels,
                           value)
            if "active" in self.families:
                self._emit(self.families["active"].name, (scaled_object, index), labels,
                           float(active))


    # -- kube-state-metrics' HorizontalPodAutoscaler series -----------------------------------
    def publish_hpa(self, name: str, min_replicas: int, max_replicas: int, current: int,
                    desired: int) -> None:
        """An HPA sync's spec and status (kube-state-metrics reads the object: the spec's
        bounds, status.currentReplicas and the last status.desiredReplicas), exposed until the
        next sync."""
        self._hpas[name] = (min_replicas, max_replicas, current, desired)

    def _hpa_gauges(self) -> None:
        for name, values in sorted(self._hpas.items()):
            labels = self._ksm(horizontalpodautoscaler=name)
            for quantity, value in zip(ex.HPA_FAMILIES, values, strict=True):
                if quantity in self.families:
                    self._emit(self.families[quantity].name, ("hpa", name), labels,
                               float(value))


def _pool_saturation(serving: list[dict[str, float]]) -> float:
    """The utilization detector's `Saturation`: the mean over the pool's endpoints of
    max(waiting / queue threshold, KV usage / KV threshold); 1.0 with no endpoint."""
    if not serving:
        return 1.0
    return sum(max(v[WAITING] / ex.SATURATION_QUEUE_DEPTH, v[KV_USAGE] / ex.SATURATION_KV_UTIL)
               for v in serving) / len(serving)


def _prompt_tokens_before_first_token(replica: Any, table: Any) -> float:
    """The prompt tokens of the engine's requests (waiting or prefilling) that have no first
    token yet: what the in-flight load producer still holds for the endpoint. A preempted
    request re-queued after its first token is not counted (the EPP released it). The EPP's
    cached-prefix discount is not applied (docs/promql.md)."""
    first, prompt = table.first_token_s_view, table.prompt_tokens_list
    total = 0
    for rid in replica.waiting_rids() + list(replica.prefilling):
        if first[rid] != first[rid]:  # NaN: no first token yet
            total += prompt[rid]
    return float(total)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _gpu_indices(cluster: Any) -> dict[str, list[int]]:
    """Each bound pod's GPU indices on its node, assigned in the node's pod order."""
    out: dict[str, list[int]] = {}
    for node in cluster.nodes.values():
        index = 0
        for pod_name in node.pod_names:
            pod = cluster.pods.get(pod_name)
            count = pod.gpus if pod is not None else 0
            out[pod_name] = list(range(index, index + count))
            index += count
    return out
