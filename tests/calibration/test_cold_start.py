"""Cold start as components: draws, backward compatibility, loaders and storage."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.catalog import get_gpu, get_model
from gpuscale.catalog.specs import Precision
from gpuscale.scenario.models import ColdStart, FixedSeconds
from gpuscale.serving.cold_start import (
    STORAGES,
    cold_start_components,
    node_ready_components,
    weight_load_gbps,
)
from gpuscale.serving.performance import ReplicaHardware


def _hw(model: str, tp: int) -> ReplicaHardware:
    return ReplicaHardware(get_gpu("H100-SXM"), get_model(model), Precision.FP8, Precision.FP8, tp)


def test_medians_are_returned_without_rng_and_bigger_models_start_slower():
    small = cold_start_components(_hw("Llama-3.1-8B", 1), ColdStart(), None, pull_image=True)
    large = cold_start_components(_hw("Llama-3.1-70B", 8), ColdStart(), None, pull_image=True)
    assert small["p2p_check_s"] == 0.0 and large["p2p_check_s"] == pytest.approx(60.0)
    for key in ("weight_load_s", "compile_s", "cuda_graph_s"):
        assert large[key] > small[key]
    assert sum(large.values()) > sum(small.values())


def test_cached_image_skips_pull_and_warm_cache_shortens_compile():
    hw = _hw("Llama-3.1-70B", 2)
    cold = cold_start_components(hw, ColdStart(), None, pull_image=True)
    warm = cold_start_components(hw, ColdStart(warm_compile_cache=True, skip_p2p_check=True),
                                 None, pull_image=False)
    assert warm["image_pull_s"] == warm["image_extract_s"] == warm["p2p_check_s"] == 0.0
    assert warm["compile_s"] < cold["compile_s"] / 2


def test_explicit_durations_replace_derived_components():
    spec = ColdStart(image_pull=FixedSeconds(value_s=30.0), engine_init=FixedSeconds(value_s=45.0))
    parts = cold_start_components(_hw("Llama-3.1-8B", 1), spec, np.random.default_rng(0),
                                  pull_image=True)
    assert parts["image_pull_s"] == 30.0 and parts["engine_init_s"] == 45.0
    assert parts["compile_s"] == parts["cuda_graph_s"] == parts["image_extract_s"] == 0.0


def test_streamer_beats_default_loader_and_page_cache_beats_network_storage():
    for storage in STORAGES:
        assert weight_load_gbps(storage, "streamer") >= weight_load_gbps(storage, "safetensors")
    assert weight_load_gbps("page-cache", "streamer") > weight_load_gbps("io2", "streamer") \
        > weight_load_gbps("gp3", "streamer")


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_draws_are_positive_deterministic_and_spread_around_the_median(seed):
    hw = _hw("Llama-3.1-70B", 2)
    a = cold_start_components(hw, ColdStart(), np.random.default_rng(seed), pull_image=True)
    b = cold_start_components(hw, ColdStart(), np.random.default_rng(seed), pull_image=True)
    median = cold_start_components(hw, ColdStart(), None, pull_image=True)
    assert a == b
    assert all(v >= 0 for v in a.values())
    assert a["weight_load_s"] == median["weight_load_s"]  # bytes / bandwidth, not random
    assert 0.2 < a["compile_s"] / median["compile_s"] < 5.0


def test_fresh_gpu_node_is_ready_in_3_to_10_minutes_unless_prebaked():
    for preset in ("eks", "gke-driver-daemonset"):
        assert 180 <= sum(node_ready_components(preset).values()) <= 600
    assert sum(node_ready_components("prebaked").values()) < 180
