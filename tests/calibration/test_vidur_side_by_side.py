"""bench/bench_vidur.py on one Vidur run: same configuration, goal errors (issue 14 item 7)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_vidur.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_vidur", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_vidur_memory_plan_is_vidurs_request_slots():
    bench = _bench()
    from gpuscale.catalog import get_gpu, get_model
    from gpuscale.catalog.specs import Precision
    from gpuscale.serving.performance import ReplicaHardware

    hw = ReplicaHardware(get_gpu("A100-80GB"), get_model("CodeLlama-34B"), Precision.BF16,
                         Precision.BF16, 2)
    slots, blocks = bench.vidur_memory_plan(hw)
    # (72 GiB - 33.7 GB of BF16 weights per GPU) // (48 x 2 x 4 heads x 128 x 2 B x 4096)
    assert 100 <= slots <= 115 and blocks == slots * 256


def test_vidur_batch_cap_is_its_batch_size_cap_not_the_request_slots():
    # Vidur's sarathi/vllm schedulers stop admitting at batch_size_cap (128) allocated requests;
    # the request slots (~108 here) size only the block pool.
    bench = _bench()
    from gpuscale.catalog import get_gpu, get_model
    from gpuscale.catalog.specs import Precision
    from gpuscale.serving.performance import ReplicaHardware

    hw = ReplicaHardware(get_gpu("A100-80GB"), get_model("CodeLlama-34B"), Precision.BF16,
                         Precision.BF16, 2)
    slots, blocks = bench.vidur_memory_plan(hw)
    for scheduler in ("sarathi", "vllm"):
        cfg = bench.vidur_engine_config(hw, scheduler)
        assert cfg.max_num_seqs == 128 > slots
        assert cfg.num_blocks == blocks


@pytest.mark.parametrize("run", ["sarathi-r1", "sarathi-r2", "sarathi-r4"])
def test_sarathi_runs_meet_the_goal_untuned(run):
    # r2 sits at the saturation knee, its TTFT median at -24 % (docs/calibration.md): a change
    # that makes every step ~1 % faster fails it, as it should be seen to.
    bench = _bench()
    if not (bench.VIDUR_DIR.exists() and bench.TRACE.exists()):
        pytest.skip("../shared/reference/vidur or the Azure trace is not beside the repository")
    vidur = bench.read_vidur(run)
    want = bench.stats(vidur["ttft_s"], vidur["tpot_s"])
    got = bench.simulate(run, vidur, no_host=False)
    assert abs(got["tpot_median"] / want["tpot_median"] - 1) <= 0.15
    assert abs(got["ttft_median"] / want["ttft_median"] - 1) <= 0.25
