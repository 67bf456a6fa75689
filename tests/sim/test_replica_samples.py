"""`Fleet.replica_samples` sums what the scrape used to sum from each pod's series itself: its
counts, request sums, KV and util lists and busy replicas must be those of the pods it
returns, and the ready replicas' TTFTs must move to the scrape's batch, each exactly once."""

from __future__ import annotations

from pathlib import Path

from gpuscale.metrics.store import GPU_UTIL, KV_USAGE, RUNNING, WAITING
from gpuscale.sim.run import _Run, scenario_requests
from tests.sim.scenarios import small_scenario


def test_replica_samples_sums_are_those_of_its_pods():
    scenario = small_scenario(rate_per_s=30.0)
    run = _Run(scenario, scenario.strategies[0], scenario_requests(scenario, Path(".")), None)
    run._initial_state()
    run._schedule_arrivals()
    fleet = run.fleets["serve"]
    prev_busy: dict[str, float] = {}
    seen = {"pending": 0, "starting": 0, "serving": 0, "busy": 0, "ttfts": 0}
    for step in range(1, 21):
        now_s = 15.0 * step
        if step == 4:
            fleet.scale_to(8, run.sim.now_s)  # more pods than one node holds: pending, loading
        run.sim.run(until_s=now_s)
        expected_ttfts = [t for r in fleet.ready for t in r.ttft_observations]
        expected_busy = sum(1 for r in fleet.ready if r.state != 0)
        ttfts: list[float] = [-1.0]  # the batch the scrape has so far: extended, not replaced
        scraped = fleet.replica_samples(now_s, 15.0, prev_busy, 1.0, ttfts)
        pods, pending, starting, busy = (scraped.pods, scraped.pending, scraped.starting,
                                         scraped.num_busy)
        assert [p.name for p in pods] == [s.pod.name for s in fleet.slots.values()]
        assert pending == sum(1 for p in pods if not p.bound)
        assert starting == sum(1 for p in pods if p.bound and WAITING not in p.values)
        serving = [p.values for p in pods if WAITING in p.values]
        assert scraped.waiting == sum(v[WAITING] for v in serving)
        assert scraped.running == sum(v[RUNNING] for v in serving)
        assert scraped.kv_usages == [v[KV_USAGE] for v in serving]
        assert scraped.gpu_utils == [v[GPU_UTIL] for v in serving]
        assert busy == expected_busy
        assert ttfts == [-1.0, *expected_ttfts]
        assert all(not r.ttft_observations for r in fleet.ready)
        for key, value in (("pending", pending), ("starting", starting),
                           ("serving", len(serving)), ("busy", busy),
                           ("ttfts", len(expected_ttfts))):
            seen[key] += value
    assert all(seen.values()), seen  # every branch above was met at least once
