"""GPU013: KEDA cooldownPeriod (idle time before scaling to zero) shorter than a cold start."""

from gpuscale.audit.rules.replicas.window_template import window_rule
from gpuscale.audit.scalers import KEDA_DEFAULT_COOLDOWN_S, min_replicas
from gpuscale.audit.values import number


def _read(obj):
    floor, _, _ = min_replicas(obj)
    if floor > 0:
        return None  # cooldown only governs the transition to zero
    value = obj.get("spec", "cooldownPeriod")
    if value is None:
        return float(KEDA_DEFAULT_COOLDOWN_S), ("spec",), "cooldownPeriod (default)"
    return number(value, "spec.cooldownPeriod"), ("spec", "cooldownPeriod"), "cooldownPeriod"


RULE = window_rule(
    id="GPU013",
    name="keda-cooldown-shorter-than-cold-start",
    kind="ScaledObject",
    read=_read,
    summary="A ScaledObject that may scale to zero waits less than a cold start before doing so.",
    why="KEDA scales to zero once no trigger was active for `cooldownPeriod`. A pause in traffic "
    "shorter than a cold start then costs the next request a full cold start, and a bursty "
    "service pays it over and over.",
    fix="Raise `cooldownPeriod` above the cold start (the vLLM production-stack operator uses "
    "1800 s), or keep a floor of one replica.",
    references=(
        "layer3-replica-autoscaling.md section 2.1-2.2 (cooldownPeriod default 300 s, 0<->1 only)",
        "serving-engine-metrics.md section 5.1 (production-stack scaleToZeroDelaySeconds 1800)",
    ),
)
