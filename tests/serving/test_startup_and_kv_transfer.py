"""Cold starts with the per-node image cache, and the P/D KV hand-off (moved out of the engine)."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscale.catalog import get_gpu, get_model
from gpuscale.catalog.specs import Precision
from gpuscale.cluster.objects import Pod
from gpuscale.core import Simulation
from gpuscale.scenario.models import ColdStart
from gpuscale.serving.kv_transfer import KvTransfer
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.serving.requests_table import RequestTable
from gpuscale.serving.startup import Startups
from gpuscale.workloads.base import Requests

HW = ReplicaHardware(get_gpu("H100-SXM"), get_model("Llama-3.1-8B"), Precision.FP8,
                     Precision.FP8, 2)


def _pod(name: str, node: str) -> Pod:
    pod = Pod(name=name, gpus=1)
    pod.node_name = node
    return pod


@pytest.mark.parametrize("cached", [True, False])
def test_a_node_pulls_the_image_once_unless_the_cache_is_off(cached):
    startups = Startups(HW, ColdStart(image_cached_on_warm_nodes=cached),
                        np.random.default_rng(1))
    startups.add_warm_nodes(["warm"])
    for name, node in (("a", "warm"), ("b", "new"), ("c", "new")):
        startups.cold_start_s(_pod(name, node))
    pulled = [parts["image_pull_s"] > 0 for parts in startups.starts]
    assert pulled == ([False, True, False] if cached else [True, True, True])
    means = startups.mean_components_s()
    assert means["image_pull_s"] == pytest.approx(
        round(float(np.mean([p["image_pull_s"] for p in startups.starts])), 3))


def test_kv_arrives_after_prompt_tokens_times_bytes_over_the_links():
    sim = Simulation()
    table = RequestTable(Requests(np.array([0.0]), np.array([4000]), np.array([10])))
    got: list[tuple[int, float, bool]] = []
    kv = KvTransfer(sim, table, HW, gbps_per_gpu=50.0,
                    deliver=lambda rid, now_s, kv_ready: got.append((rid, now_s, kv_ready)))
    sim.schedule(1.0, 0, kv.on_prefilled, 0, 1.0)
    sim.run()
    transfer_s = 4000 * HW.kv_bytes_per_token / (50e9 * 2)
    assert got == [(0, pytest.approx(1.0 + transfer_s), True)]
    assert table.first_token_s[0] == pytest.approx(1.0 + transfer_s)
    assert kv.ttft_observations == [pytest.approx(1.0 + transfer_s)]
