"""The series the simulated cluster exposes: names, types, labels and buckets as the real
exporters write them, each with its source.

A family is named as its exporter declares it; Prometheus stores a counter `x` as `x_total`
and a histogram `x` as `x_bucket{le}`, `x_sum`, `x_count` (`sample_names`). Which exporter
writes what:

- the serving engine, per pod (vLLM V1: vllm/v1/metrics/loggers.py PrometheusStatLogger,
  labels `model_name`, `engine`; serving-engine-metrics.md 1.1-1.3. SGLang:
  python/sglang/srt/metrics/collector.py, section 2. TensorRT-LLM's trtllm-serve: the
  gateway-api-inference-extension model-server protocol table, section 3);
- dcgm-exporter, per GPU (NVIDIA/dcgm-exporter etc/default-counters.csv; labels gpu, UUID,
  device, modelName, Hostname and, with the Kubernetes mapping, namespace/pod/container;
  layer3-replica-autoscaling.md section 8);
- kube-state-metrics, per object (kubernetes/kube-state-metrics docs/metrics/workload/
  deployment-metrics.md, pod-metrics.md, docs/metrics/cluster/node-metrics.md);
- the inference gateway's endpoint picker, per pool (kubernetes-sigs/
  gateway-api-inference-extension site-src/guides/metrics-and-observability.md; llm-d's EPP
  renames the flow-control family `llm_d_epp_flow_control_queue_size`, landscape-2026.md;
  the pool saturation gauge: llm-d/llm-d-router pkg/epp/metrics/metrics.go, its value the
  utilization detector's, pkg/epp/framework/plugins/flowcontrol/saturationdetector/
  utilization/detector.go; the in-flight load per endpoint: pkg/epp/framework/plugins/
  requestcontrol/dataproducer/inflightload/producer.go);
- Karpenter, per NodePool (kubernetes-sigs/karpenter website docs reference/metrics.md);
- KEDA's operator, per trigger (kedacore/keda pkg/metricscollector/prommetrics.go).
Target labels are those a Prometheus Operator ServiceMonitor adds: `namespace`, `pod`,
`container`, `job` (the Service: the Deployment's name), `instance` (pod:port).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    name: str
    type: str  # "gauge", "counter", "histogram"
    help: str
    buckets: tuple[float, ...] = ()

    @property
    def sample_names(self) -> tuple[str, ...]:
        if self.type == "counter":
            return (f"{self.name}_total",)
        if self.type == "histogram":
            return (f"{self.name}_bucket", f"{self.name}_sum", f"{self.name}_count")
        return (self.name,)


def one_two_five(max_value: int) -> tuple[float, ...]:
    """vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, ... up to max_value (loggers.py)."""
    out: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > max_value:
                return tuple(out)
            out.append(float(value))
        exponent += 1


# serving-engine-metrics.md 1.3 (vLLM loggers.py).
VLLM_TTFT_BUCKETS_S = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                       5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
VLLM_ITL_BUCKETS_S = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
                      7.5, 10.0, 20.0, 40.0, 80.0)
VLLM_LATENCY_BUCKETS_S = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
                          50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
# serving-engine-metrics.md section 2 (SGLang collector.py).
SGLANG_TTFT_BUCKETS_S = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0,
                         80.0, 100.0, 200.0, 400.0)
SGLANG_ITL_BUCKETS_S = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035,
                        0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0,
                        6.0, 8.0)


def engine_families(kind: str, max_model_len: int) -> dict[str, Family]:
    """The engine's families by the quantity gpuscale computes for them."""
    if kind == "sglang":
        return {
            "waiting": Family("sglang:num_queue_reqs", "gauge", "Number of queued requests."),
            "running": Family("sglang:num_running_reqs", "gauge", "Number of running requests."),
            "kv_usage": Family("sglang:token_usage", "gauge", "The token usage (0..1)."),
            "prompt_tokens": Family("sglang:prompt_tokens", "counter",
                                    "Number of prefill tokens processed."),
            "generation_tokens": Family("sglang:generation_tokens", "counter",
                                        "Number of generation tokens processed."),
            "requests": Family("sglang:num_requests", "counter", "Number of requests processed."),
            "ttft": Family("sglang:time_to_first_token_seconds", "histogram",
                           "Histogram of time to first token in seconds.",
                           SGLANG_TTFT_BUCKETS_S),
            "itl": Family("sglang:inter_token_latency_seconds", "histogram",
                          "Histogram of inter-token latency in seconds.", SGLANG_ITL_BUCKETS_S),
        }
    if kind == "trtllm":
        return {
            "waiting": Family("trtllm_num_requests_waiting", "gauge", "Requests waiting."),
            "running": Family("trtllm_num_requests_running", "gauge", "Requests running."),
            "kv_usage": Family("trtllm_kv_cache_utilization", "gauge",
                               "KV cache utilization (0..1)."),
        }
    tokens = one_two_five(max_model_len)
    return {
        "waiting": Family("vllm:num_requests_waiting", "gauge",
                          "Number of requests waiting to be processed."),
        "running": Family("vllm:num_requests_running", "gauge",
                          "Number of requests in model execution batches."),
        "kv_usage": Family("vllm:kv_cache_usage_perc", "gauge",
                           "KV-cache usage. 1 means 100 percent usage."),
        "prefix_queries": Family("vllm:prefix_cache_queries", "counter",
                                 "Prefix cache queries, in terms of number of queried tokens."),
        "prefix_hits": Family("vllm:prefix_cache_hits", "counter",
                              "Prefix cache hits, in terms of number of cached tokens."),
        "prompt_tokens": Family("vllm:prompt_tokens", "counter",
                                "Number of prefill tokens processed."),
        "generation_tokens": Family("vllm:generation_tokens", "counter",
                                    "Number of generation tokens processed."),
        "request_success": Family("vllm:request_success", "counter",
                                  "Count of successfully processed requests."),
        "ttft": Family("vllm:time_to_first_token_seconds", "histogram",
                       "Histogram of time to first token in seconds.", VLLM_TTFT_BUCKETS_S),
        "itl": Family("vllm:inter_token_latency_seconds", "histogram",
                      "Histogram of inter-token latency in seconds.", VLLM_ITL_BUCKETS_S),
        "tpot_request": Family("vllm:request_time_per_output_token_seconds", "histogram",
                               "Histogram of time_per_output_token_seconds per request.",
                               VLLM_ITL_BUCKETS_S),
        "e2e": Family("vllm:e2e_request_latency_seconds", "histogram",
                      "Histogram of e2e request latency in seconds.", VLLM_LATENCY_BUCKETS_S),
        "request_prompt_tokens": Family("vllm:request_prompt_tokens", "histogram",
                                        "Number of prefill tokens processed.", tokens),
        "request_generation_tokens": Family("vllm:request_generation_tokens", "histogram",
                                            "Number of generation tokens processed.", tokens),
    }


# Quantities computed from each request's events (first token, completion), per pod.
REQUEST_QUANTITIES = frozenset({"prompt_tokens", "generation_tokens", "request_success",
                                "requests", "ttft", "itl", "tpot_request", "e2e",
                                "request_prompt_tokens", "request_generation_tokens"})
# vLLM pre-creates request_success for every FinishReason (loggers.py); a replayed trace's
# requests end at their recorded length, read as "stop" (an end-of-sequence token).
FINISH_REASONS = ("abort", "length", "stop")

DCGM = {
    "gpu_util": Family("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    "fb_used": Family("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
}

KUBE_STATE = {
    "deployment_spec_replicas": Family("kube_deployment_spec_replicas", "gauge",
                                       "Number of desired pods for a deployment."),
    "deployment_status_replicas": Family("kube_deployment_status_replicas", "gauge",
                                         "The number of replicas per deployment."),
    "deployment_ready": Family("kube_deployment_status_replicas_ready", "gauge",
                               "The number of ready replicas per deployment."),
    "deployment_available": Family("kube_deployment_status_replicas_available", "gauge",
                                   "The number of available replicas per deployment."),
    "deployment_unavailable": Family("kube_deployment_status_replicas_unavailable", "gauge",
                                     "The number of unavailable replicas per deployment."),
    "pod_phase": Family("kube_pod_status_phase", "gauge", "The pods current phase."),
    "pod_ready": Family("kube_pod_status_ready", "gauge",
                        "Describes whether the pod is ready to serve requests."),
    "node_allocatable": Family("kube_node_status_allocatable", "gauge",
                               "The allocatable for different resources of a node."),
    "node_condition": Family("kube_node_status_condition", "gauge",
                             "The condition of a cluster node."),
    # kube-state-metrics docs/metrics/workload/horizontalpodautoscaler-metrics.md; labels
    # namespace and horizontalpodautoscaler (KEDA's HPA is keda-hpa-<ScaledObject>).
    "hpa_min": Family("kube_horizontalpodautoscaler_spec_min_replicas", "gauge",
                      "Lower limit for the number of pods that can be set by the autoscaler, "
                      "default 1."),
    "hpa_max": Family("kube_horizontalpodautoscaler_spec_max_replicas", "gauge",
                      "Upper limit for the number of pods that can be set by the autoscaler; "
                      "cannot be smaller than MinReplicas."),
    "hpa_current": Family("kube_horizontalpodautoscaler_status_current_replicas", "gauge",
                          "Current number of replicas of pods managed by this autoscaler."),
    "hpa_desired": Family("kube_horizontalpodautoscaler_status_desired_replicas", "gauge",
                          "Desired number of replicas of pods managed by this autoscaler."),
}
HPA_FAMILIES = ("hpa_min", "hpa_max", "hpa_current", "hpa_desired")
POD_PHASES = ("Failed", "Pending", "Running", "Succeeded", "Unknown")

GATEWAY = {
    "flow_queue": Family("llm_d_epp_flow_control_queue_size", "gauge",
                         "Requests held by the EPP's flow control layer."),
    "flow_queue_upstream": Family("inference_extension_flow_control_queue_size", "gauge",
                                  "Requests held by the flow control layer (upstream name)."),
    "request_running": Family("llm_d_epp_request_running", "gauge",
                              "Requests dispatched by the EPP and not yet finished."),
    "pool_queue": Family("inference_pool_average_queue_size", "gauge",
                         "The average number of requests pending in the model server queue."),
    "pool_kv": Family("inference_pool_average_kv_cache_utilization", "gauge",
                      "The average kv cache utilization for an inference server pool."),
    "pool_ready": Family("inference_pool_ready_pods", "gauge",
                         "The number of ready pods for an inference server pool."),
    "pool_saturation": Family("llm_d_epp_flow_control_pool_saturation", "gauge",
                              "Current saturation level of the inference pool (0.0 = empty, "
                              "1.0 = fully saturated)."),
    "pool_saturation_upstream": Family("inference_extension_flow_control_pool_saturation",
                                       "gauge", "Current saturation level of the inference "
                                       "pool (upstream name)."),
    "inflight_requests": Family("llm_d_epp_inflight_requests", "gauge",
                                "Current number of in-flight requests per endpoint, as tracked "
                                "by the in-flight load producer."),
    "inflight_tokens": Family("llm_d_epp_inflight_tokens", "gauge",
                              "Current number of in-flight tokens per endpoint (uncached prompt "
                              "tokens), as tracked by the in-flight load producer."),
}
# The EPP's utilization detector defaults (queueDepthThreshold, kvCacheUtilThreshold:
# llm-d-router saturationdetector/utilization/README.md; reference layer3 section 6.3).
SATURATION_QUEUE_DEPTH = 5
SATURATION_KV_UTIL = 0.8
# The in-flight load producer's name when the EPP config leaves it unnamed: its type.
INFLIGHT_PRODUCER = "inflight-load-producer"

KARPENTER = {
    "nodes_created": Family("karpenter_nodes_created", "counter",
                            "Number of nodes created in total by Karpenter."),
    "nodes_terminated": Family("karpenter_nodes_terminated", "counter",
                               "Number of nodes terminated in total by Karpenter."),
}

KEDA = {
    "metrics_value": Family("keda_scaler_metrics_value", "gauge",
                            "The current value for each scaler's metric that would be used by "
                            "the HPA in computing the target average."),
    "active": Family("keda_scaler_active", "gauge",
                     "Indicates whether a scaler is active (1), or not (0)."),
}


_TARGET = frozenset({"namespace", "pod", "container", "job", "instance", "model_name"})
_KSM = frozenset({"namespace", "job", "instance"})
_EPP = frozenset({"namespace", "job", "instance"})
_LABELS = {
    **{q: frozenset({"deployment"}) | _KSM for q in KUBE_STATE if q.startswith("deployment")},
    "pod_phase": _KSM | {"pod", "phase"}, "pod_ready": _KSM | {"pod", "condition"},
    "node_allocatable": _KSM | {"node", "resource", "unit"},
    "node_condition": _KSM | {"node", "condition", "status"},
    **{q: _KSM | {"horizontalpodautoscaler"} for q in HPA_FAMILIES},
    "gpu_util": frozenset({"gpu", "UUID", "device", "modelName", "Hostname", "namespace", "pod",
                           "container", "job", "instance"}),
    "flow_queue": _EPP | {"inference_pool", "model_name", "target_model_name", "fairness_id",
                          "priority"},
    "request_running": _EPP | {"model_name", "target_model_name"},
    "pool_queue": _EPP | {"name"},
    "pool_saturation": _EPP | {"inference_pool"},
    "inflight_tokens": _EPP | {"endpoint_name", "producer_name", "fairness_id", "priority"},
    "nodes_created": frozenset({"nodepool", "job", "namespace"}),
    "metrics_value": frozenset({"namespace", "scaledObject", "scaler", "triggerIndex", "metric",
                                "type", "job"}),
}
for _quantity, _same in (("fb_used", "gpu_util"), ("flow_queue_upstream", "flow_queue"),
                         ("pool_kv", "pool_queue"), ("pool_ready", "pool_queue"),
                         ("pool_saturation_upstream", "pool_saturation"),
                         ("inflight_requests", "inflight_tokens"),
                         ("nodes_terminated", "nodes_created"), ("active", "metrics_value")):
    _LABELS[_quantity] = _LABELS[_same]


def known_series(kind: str, max_model_len: int = 32768) -> dict[str, frozenset[str]]:
    """Every sample name the simulated cluster can expose with an engine of `kind`, with the
    label names its series carry."""
    out: dict[str, frozenset[str]] = {}
    engine_labels = _TARGET | ({"engine"} if kind == "vllm" else set())
    for quantity, family in engine_families(kind, max_model_len).items():
        labels = engine_labels | ({"finished_reason"} if quantity == "request_success" else set())
        for sample in family.sample_names:
            out[sample] = labels | ({"le"} if sample.endswith("_bucket") else set())
    for catalog in (DCGM, KUBE_STATE, GATEWAY, KARPENTER, KEDA):
        for quantity, family in catalog.items():
            for sample in family.sample_names:
                out[sample] = _LABELS[quantity]
    return out
