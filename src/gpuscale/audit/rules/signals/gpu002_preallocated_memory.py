"""GPU002: scaling on GPU framebuffer use, which vLLM pre-allocates at start-up."""

from gpuscale.audit.model import Severity
from gpuscale.audit.rules.signals.scaler_metric_template import METRICS_REF, scaler_metric_rule

RULE = scaler_metric_rule(
    id="GPU002", name="scales-on-preallocated-gpu-memory", severity=Severity.ERROR,
    metrics=("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_MEM_COPY_UTIL"),
    summary="An HPA or ScaledObject scales GPU inference on GPU memory use.",
    what="GPU memory that the engine reserves at start-up (weights plus a pre-allocated KV cache, "
         "0.9-0.92 of HBM by default), so it stays flat under any load",
    why="vLLM claims `--gpu-memory-utilization` (0.9 for most of its history, 0.92 in current "
        "main) of the GPU's memory when it starts and carves the KV cache out of it. Framebuffer "
        "use is therefore constant from the first second: an autoscaler on it is pinned at its "
        "maximum or its minimum regardless of traffic.",
    fix="Use the engine's own KV-cache gauge (`vllm:kv_cache_usage_perc`, `sglang:token_usage`, "
        "`trtllm_kv_cache_utilization`), which measures blocks in use, or queue depth.",
    references=(METRICS_REF, "serving-engine-metrics.md section 1.4 (`--gpu-memory-utilization`)"),
)
