"""The oracle's probe replays with the run's own `StepCost` (its memo already warm from the
simulation): the same floats as a fresh one, since the memo is a pure function of the
hardware, and none of the per-token-count terms paid again."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import gpuscale.sim.result as result_module
from gpuscale.metrics import oracle
from gpuscale.serving import bench
from gpuscale.serving.performance import StepCost
from gpuscale.sim.compare import simulate_scenario

from ..sim.scenarios import small_scenario
from .test_oracle import CFG, HW, TPOT_S

PROMPTS = np.array([300, 1200, 80, 2500, 640] * 40, dtype=np.int64)
OUTPUTS = np.array([40, 300, 900, 12, 150] * 40, dtype=np.int64)


def _computed(cost: StepCost) -> int:
    """Token counts whose term the memo holds (a count-indexed list, -1.0 where not yet)."""
    return sum(1 for value in cost._by_tokens if value >= 0.0)


def _sustained(cost: StepCost | None) -> float:
    oracle._CACHE.clear()
    bench._step_cost.cache_clear()
    return oracle.replica_sustained_rps(HW, CFG, PROMPTS, OUTPUTS, tpot_slo_s=TPOT_S, cost=cost)


def test_a_warm_cost_gives_the_same_rate_and_is_the_one_used():
    warm = StepCost(HW)
    for tokens in (1, 17, 256, 2048):  # as a run would have left it
        warm.step_s(tokens, 1000.0 * tokens)
    before = _computed(warm)
    assert _sustained(warm) == _sustained(None)
    assert _computed(warm) > before  # the probe's steps went through it


def test_a_cost_of_other_hardware_is_not_used():
    other = StepCost(HW.__class__(HW.gpu, HW.model, HW.weight_precision, HW.kv_precision, 2))
    assert _sustained(other) == _sustained(None)
    assert _computed(other) == 0


def test_build_result_hands_the_fleets_cost_to_the_probe(monkeypatch):
    seen = []
    real = result_module.oracle_summary

    def spy(*args, **kwargs):
        seen.append(kwargs.get("cost"))
        return real(*args, **kwargs)

    monkeypatch.setattr(result_module, "oracle_summary", spy)
    scenario = small_scenario(duration_s=120.0, strategies=[
        {"name": "fixed-1", "autoscaler": {"kind": "fixed", "replicas": 1}}])
    simulate_scenario(scenario, Path("."))
    assert len(seen) == 1 and isinstance(seen[0], StepCost) and _computed(seen[0])
