"""Prefix caching end to end: a Mooncake trace with hashes, the hit rate in the run JSON, the
router, the per-replica counters; traces without hashes unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuscale.metrics.store import PREFIX_CACHE_HITS, PREFIX_CACHE_QUERIES
from gpuscale.scenario import scenario_from_dict
from gpuscale.sim import simulate_scenario
from gpuscale.sim.run import _Run, scenario_requests

REAL = Path(__file__).resolve().parents[2] / "../shared/traces/mooncake/synthetic_trace.jsonl"


def _trace(tmp_path: Path, rows: list[list[int]], gap_ms: int = 60_000, prompt: int = 2048,
           hashes: bool = True) -> Path:
    path = tmp_path / ("hashed.jsonl" if hashes else "plain.jsonl")
    lines = []
    for i, row in enumerate(rows):
        obj = {"timestamp": i * gap_ms, "input_length": prompt, "output_length": 8}
        if hashes:
            obj["hash_ids"] = row
        lines.append(json.dumps(obj))
    path.write_text("\n".join(lines) + "\n")
    return path


def _scenario(trace: Path, replicas: int = 1, router: str = "least_outstanding",
              caching: bool = True) -> dict:
    return {
        "name": "prefix", "seed": 3, "duration_s": 600.0, "drain_s": 300.0,
        "model": {"name": "Llama-3.1-8B", "precision": "bf16", "tp": 1},
        "cluster": {"instance_type": "p5.48xlarge", "ready_nodes": 1, "max_nodes": 1},
        "engine": {"enable_prefix_caching": caching},
        "initial_replicas": replicas, "router": router,
        "workload": {"kind": "trace", "format": "mooncake", "path": str(trace)},
        "strategies": [{"name": "fixed", "autoscaler": {"kind": "fixed",
                                                        "replicas": replicas}}],
    }


def _run(data: dict):
    result, _ = simulate_scenario(scenario_from_dict(data, source="<test>"), Path("."))
    return result.runs[0]


def test_hit_rate_is_the_share_of_prompt_tokens_served_from_the_cache(tmp_path):
    # Four 2048-token prompts (4 units of 512), a minute apart, one replica:
    #   r0 [0 1 2 3] -> miss; r1 the same -> whole-prompt hit, capped at 2047 tokens in whole
    #   16-token blocks = 2032; r2 [0 1 9 10] -> 2 units = 1024; r3 all new -> 0.
    trace = _trace(tmp_path, [[0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 9, 10], [20, 21, 22, 23]])
    run = _run(_scenario(trace))
    block = run.summary.prefix_cache
    assert (block.hits_tokens, block.queries_tokens) == (2032 + 1024, 4 * 2048)
    assert block.hit_rate == round(3056 / 8192, 6)
    ttft = run.requests.first_token_s - run.requests.arrival_s
    assert ttft[1] < 0.25 * ttft[0] and ttft[2] < ttft[3]  # the prefill a hit saves


def test_caching_off_or_no_hashes_reports_null_and_serves_alike(tmp_path):
    rows = [[0, 1, 2, 3]] * 4
    hashed, plain = _trace(tmp_path, rows), _trace(tmp_path, rows, hashes=False)
    off = _run(_scenario(hashed, caching=False))
    none = _run(_scenario(plain))
    for run in (off, none):
        assert run.summary.prefix_cache.model_dump() == {"hit_rate": None, "hits_tokens": 0,
                                                         "queries_tokens": 0}
    assert off.summary == none.summary
    assert off.requests.first_token_s.tolist() == none.requests.first_token_s.tolist()
    on = _run(_scenario(hashed))
    assert on.summary.ttft_s.p50 < off.summary.ttft_s.p50


def test_prefix_aware_keeps_repeats_where_their_prefix_is_cached(tmp_path):
    # The same prompt four times on two replicas: round robin alternates (two misses, two
    # hits), prefix_aware sends every repeat to the replica that holds it (one miss).
    trace = _trace(tmp_path, [[0, 1, 2, 3]] * 4)
    rr = _run(_scenario(trace, replicas=2, router="round_robin")).summary.prefix_cache
    pa = _run(_scenario(trace, replicas=2, router="prefix_aware")).summary.prefix_cache
    assert rr.hits_tokens == 2 * 2032 and pa.hits_tokens == 3 * 2032


def test_same_seed_same_json(tmp_path):
    trace = _trace(tmp_path, [[0, 1, 2, 3], [0, 1, 5], [0, 1, 2, 3], [7]], gap_ms=300)
    a, b = (_run(_scenario(trace, replicas=2, router="prefix_aware")) for _ in range(2))
    assert a.summary.model_dump_json() == b.summary.model_dump_json()
    assert a.requests.first_token_s.tolist() == b.requests.first_token_s.tolist()


def test_each_replica_exposes_its_prefix_cache_counters(tmp_path):
    trace = _trace(tmp_path, [[0, 1, 2, 3]] * 3)
    scenario = scenario_from_dict(_scenario(trace), source="<test>")
    run = _Run(scenario, scenario.strategies[0], scenario_requests(scenario, Path(".")), None)
    run.run()
    pods = [p for p in run.scraper.store.latest if PREFIX_CACHE_QUERIES in p.values]
    assert len(pods) == 1
    assert pods[0].values[PREFIX_CACHE_QUERIES] == 3 * 2048
    assert pods[0].values[PREFIX_CACHE_HITS] == 2 * 2032


@pytest.mark.skipif(not REAL.is_file(), reason="shared Mooncake trace not present")
def test_real_mooncake_trace_prefix_aware_hits_more_than_round_robin():
    def hit(router: str) -> float:
        data = _scenario(REAL, replicas=4, router=router)
        data["duration_s"] = 300.0
        rate = _run(data).summary.prefix_cache.hit_rate
        assert rate is not None
        return rate

    assert hit("prefix_aware") > 1.5 * hit("round_robin") > 0


def test_a_result_file_from_before_the_key_still_loads(tmp_path):
    from gpuscale.metrics.run_summary import load_run

    trace = _trace(tmp_path, [[0, 1]], hashes=False)
    data = json.loads(_run(_scenario(trace)).summary.model_dump_json())
    del data["prefix_cache"]
    assert load_run(data).prefix_cache.hit_rate is None
