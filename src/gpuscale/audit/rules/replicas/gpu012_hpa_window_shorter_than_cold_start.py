"""GPU012: HPA scale-down stabilization shorter than the time to bring a replica back."""

from gpuscale.audit.rules.replicas.window_template import window_rule
from gpuscale.audit.scalers import HPA_DEFAULT_SCALE_DOWN_WINDOW_S
from gpuscale.audit.values import number


def _read(obj):
    behavior = obj.get("spec", "behavior")
    if not isinstance(behavior, dict):
        return None  # legacy path: the controller's 5 min downscale stabilization applies
    window = (behavior.get("scaleDown") or {}).get("stabilizationWindowSeconds")
    if window is None:
        return (
            float(HPA_DEFAULT_SCALE_DOWN_WINDOW_S),
            ("spec", "behavior"),
            "default scale-down stabilization",
        )
    return (
        number(window, "spec.behavior.scaleDown.stabilizationWindowSeconds"),
        ("spec", "behavior", "scaleDown", "stabilizationWindowSeconds"),
        "scaleDown.stabilizationWindowSeconds",
    )


RULE = window_rule(
    id="GPU012",
    name="hpa-scale-down-window-shorter-than-cold-start",
    kind="HorizontalPodAutoscaler",
    read=_read,
    summary=(
        "An HPA on an SLO-critical GPU service stabilizes scale-down "
        "for less time than a cold start."
    ),
    why="The HPA removes a replica once the largest proposal of the last window is lower. If the "
    "window is shorter than a replica's cold start, a dip in traffic shorter than the time it "
    "takes to get the capacity back removes it, and the next peak is served short-handed for "
    "a full cold start (engine start, often a new GPU node too). Flapping also re-pays image "
    "pull and model load each time.",
    fix="Set `behavior.scaleDown.stabilizationWindowSeconds` to at least the cold start (default "
    "300 s); annotate the workload with `gpuscale.io/cold-start-seconds` if the estimate is off.",
    references=(
        "layer3-replica-autoscaling.md section 1.8 (stabilization windows; default 300 s)",
        "calibration.md A15 (about 3.5 min cold engine start, 70B)",
    ),
)
