"""GPU001: scaling LLM serving on DCGM GPU utilization, a duty cycle that reads ~100 % at batch
1."""

from gpuscale.audit.model import Severity
from gpuscale.audit.rules.signals.scaler_metric_template import METRICS_REF, scaler_metric_rule

RULE = scaler_metric_rule(
    id="GPU001", name="scales-on-gpu-duty-cycle", severity=Severity.ERROR,
    metrics=("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
    summary="An HPA or ScaledObject scales GPU inference on DCGM GPU utilization.",
    what="the share of time at least one kernel ran (a duty cycle, 0-100 %), which a "
         "continuous-batching engine keeps near 100 % from batch size 1 upwards",
    why="`DCGM_FI_DEV_GPU_UTIL` is NVML's *time* utilization: the fraction of the sample period in "
        "which any kernel was resident. vLLM, SGLang and TensorRT-LLM run decode steps back to "
        "back while any request is in flight, so the value sits near 100 % whether the batch "
        "holds 1 sequence or 256. An autoscaler targeting, say, 70 % scales out on the first "
        "request and never scales back in; it cannot see the headroom that larger batches give.",
    fix="Scale on what limits serving: queue depth (`vllm:num_requests_waiting`, "
        "`sglang:num_queue_reqs`), KV-cache use (`vllm:kv_cache_usage_perc`) or a latency SLO "
        "(TTFT/ITL histograms), aggregated with `sum(...)` for KEDA.",
    references=(METRICS_REF + ", 'Why GPU duty cycle saturates for LLM serving'",
                "NVIDIA NVML `nvmlUtilization_t`; NVIDIA/dcgm-exporter etc/default-counters.csv"),
)
