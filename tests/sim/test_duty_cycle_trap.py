"""The lesson's replica-layer trap, through the real metrics path (scrape -> series).

With any number of requests in flight, `DCGM_FI_DEV_GPU_UTIL` (a duty cycle) reads ~100, so it
cannot tell 1 request from 100; `vllm:num_requests_waiting` can.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuscale.scenario import scenario_from_dict
from gpuscale.sim import simulate_scenario

MAX_NUM_SEQS = 32


def _scrape_at_60s(in_flight: int) -> dict[str, float]:
    scenario = scenario_from_dict({
        "name": "duty-cycle", "seed": 1, "duration_s": 1.0, "drain_s": 90.0,
        "model": {"name": "Llama-3.1-8B", "precision": "bf16", "tp": 1},
        "engine": {"max_num_seqs": MAX_NUM_SEQS},
        "cluster": {"instance_type": "g6e.2xlarge", "ready_nodes": 1, "max_nodes": 1},
        "initial_replicas": 1,
        "workload": {"kind": "long_prompt_spike", "at_s": 0.0, "count": in_flight,
                     "prompt_tokens": {"kind": "fixed", "value": 200},
                     "output_tokens": {"kind": "fixed", "value": 20_000}},
        "strategies": [{"name": "fixed", "autoscaler": {"kind": "fixed", "replicas": 1}}],
    })
    result, _ = simulate_scenario(scenario, Path("."))
    series = result.runs[0].series
    row = list(series["time_s"]).index(60.0)
    return {name: float(values[row]) for name, values in series.items()}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(in_flight=st.integers(1, 100))
def test_duty_cycle_is_saturated_whatever_the_load(in_flight):
    scrape = _scrape_at_60s(in_flight)
    assert scrape["gpu_util_mean"] >= 95.0
    assert scrape["queue_waiting"] == max(0, in_flight - MAX_NUM_SEQS)


def test_one_and_a_hundred_in_flight_look_the_same_to_dcgm_but_not_to_vllm():
    one, hundred = _scrape_at_60s(1), _scrape_at_60s(100)
    assert one["gpu_util_mean"] >= 95.0 and hundred["gpu_util_mean"] >= 95.0
    assert abs(one["gpu_util_mean"] - hundred["gpu_util_mean"]) <= 5.0
    assert one["queue_waiting"] == 0 and hundred["queue_waiting"] == 100 - MAX_NUM_SEQS
