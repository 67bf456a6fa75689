"""Default node-phase latencies against calibration row A18."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscale.provisioning.latency import Latency, NodeLatencies


def test_default_fresh_gpu_node_ready_time_is_within_3_to_10_minutes():
    # calibration.md A18: a fresh GPU node becomes schedulable in 3-10 min (not pre-baked).
    rng = np.random.default_rng(0)
    totals = np.array([sum(NodeLatencies().draw(rng)) for _ in range(4000)])
    assert np.percentile(totals, 5) >= 180
    assert np.percentile(totals, 95) <= 600
    assert 240 <= np.median(totals) <= 300


def test_distributions():
    rng = np.random.default_rng(1)
    assert Latency(dist="fixed", median_s=7).draw(rng) == 7
    draws = [Latency(dist="uniform", low_s=2, high_s=3).draw(rng) for _ in range(100)]
    assert min(draws) >= 2 and max(draws) <= 3
    lognormal = [Latency(median_s=100, sigma=0.5).draw(rng) for _ in range(4000)]
    assert np.median(lognormal) == pytest.approx(100, rel=0.05)
    with pytest.raises(ValueError):
        Latency(dist="uniform", low_s=3, high_s=2)
