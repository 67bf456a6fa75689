"""Prefill/decode disaggregation: the hand-off, per-role scaling, validation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from gpuscale.errors import UserInputError
from gpuscale.scenario import scenario_from_dict
from gpuscale.serving.performance import StepCost
from gpuscale.sim import simulate_scenario
from gpuscale.sim.replica_setup import replica_hardware

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pd-split" / "scenario.yaml"


def _one_request_scenario(output_tokens: int = 50) -> dict:
    return {
        "name": "pd-one", "seed": 1, "duration_s": 10.0, "drain_s": 60.0,
        "model": {"name": "Llama-3.1-8B", "precision": "bf16", "tp": 1},
        "cluster": {"instance_type": "g6e.24xlarge", "ready_nodes": 1, "max_nodes": 1},
        "disaggregation": {"prefill": {"initial_replicas": 1}, "decode": {"initial_replicas": 1},
                           "kv_transfer_gbps_per_gpu": 10.0},
        "workload": {"kind": "long_prompt_spike", "at_s": 1.0, "count": 1,
                     "prompt_tokens": {"kind": "fixed", "value": 2000},
                     "output_tokens": {"kind": "fixed", "value": output_tokens}},
        "strategies": [{"name": "fixed", "autoscaler": {"kind": "fixed", "replicas": 1}}],
    }


def test_ttft_is_prefill_plus_kv_transfer_and_decode_finishes_the_rest():
    scenario = scenario_from_dict(_one_request_scenario())
    result, _ = simulate_scenario(scenario, Path("."))
    cols = result.runs[0].requests
    hw = replica_hardware(scenario)
    cost = StepCost(hw)
    prefill_s = cost.step_s(0, 0, ((2000, 0),))
    transfer_s = 2000 * hw.kv_bytes_per_token / (10.0e9 * 1)
    assert cols.first_token_s[0] - cols.arrival_s[0] == pytest.approx(prefill_s + transfer_s)
    decode_s = sum(cost.step_s(1, 2001 + k) for k in range(49))
    assert cols.finish_s[0] - cols.first_token_s[0] == pytest.approx(decode_s)


def test_example_per_role_scalers_size_the_pools_independently():
    scenario = scenario_from_dict(yaml.safe_load(EXAMPLE.read_text()), source=str(EXAMPLE))
    result, walls = simulate_scenario(scenario, EXAMPLE.parent)
    runs = {r.name: r for r in result.runs}
    shared = runs["one-scaler-both-roles"].series
    split = runs["per-role-scalers"].series
    # One scaler stamps the same count on both pools...
    assert np.array_equal(shared["prefill_desired"], shared["decode_desired"])
    # ...per-role scalers follow each role's own signal, so the pools differ at times.
    assert np.any(split["prefill_desired"] != split["decode_desired"])
    data = result.to_json(walls)
    for run in data["runs"]:
        counts = run["requests"]
        assert counts["completed"] + counts["dropped"] + counts["in_flight"] == counts["total"]
        assert set(run["roles"]) == {"prefill", "decode"}


def test_per_role_autoscalers_need_a_disaggregated_scenario():
    data = _one_request_scenario()
    del data["disaggregation"]
    data["strategies"] = [{"name": "split", "prefill": {"kind": "fixed", "replicas": 1},
                           "decode": {"kind": "fixed", "replicas": 1}}]
    with pytest.raises(UserInputError, match="no `disaggregation`"):
        scenario_from_dict(data)


def test_a_strategy_gives_one_autoscaler_or_both_roles():
    data = _one_request_scenario()
    data["strategies"] = [{"name": "half", "prefill": {"kind": "fixed", "replicas": 1}}]
    with pytest.raises(UserInputError, match="both `prefill` and `decode`"):
        scenario_from_dict(data)
