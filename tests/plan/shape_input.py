"""A plan input of one workload with a generated shape, short runs, for the plan tests."""

from __future__ import annotations

SHORT_LENGTHS = ((400, 900, 2000), (80, 200, 400))  # (median, p90, max) prompt, output tokens


def shape_input(name: str, instance_types: list[str], max_gpus: int, slo: tuple, *,
                model: str = "Llama-3.1-8B", rate_per_s: float = 1.0, burst_factor: float = 2,
                burst_s: float = 180, swing: float = 0.0, edges_s: float = 120,
                max_candidates: int = 2, lengths=SHORT_LENGTHS) -> dict:
    """`slo`: (P99 TTFT s, ITL s, goodput); `edges_s`: the trough before and after the burst."""
    def tokens(median: int, p90: int, top: int) -> dict:
        return {"kind": "lognormal", "median_tokens": median, "p90_tokens": p90,
                "max_tokens": top}

    traffic = {"kind": "shape", "mean_rate_per_s": rate_per_s, "burst_factor": burst_factor,
               "burst_duration_s": burst_s, "burst_period_s": 3600,
               "diurnal_swing_frac": swing, "prompt_tokens": tokens(*lengths[0]),
               "output_tokens": tokens(*lengths[1])}
    return {"name": name, "cluster": {"name": "prod", "instance_types": instance_types,
                                      "max_gpus": max_gpus},
            "slo": dict(zip(("ttft_p99_s", "itl_p99_s", "goodput_frac"), slo, strict=True)),
            "simulation": {"max_candidates": max_candidates, "quiet_before_burst_s": edges_s,
                           "after_burst_s": edges_s},
            "workloads": [{"name": "chat", "model": model, "precision": "bf16",
                           "traffic": traffic}]}
