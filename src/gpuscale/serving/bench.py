"""Drive the real replica engine the way a benchmark does, and read the statistic it reports.

Used by calibration (rows A6-A13) and the oracle bound. Offline (MLPerf Offline,
`trtllm-bench throughput`, `rps=inf`): every request at t=0; the throughput is output tokens /
makespan. Server (MLPerf Server): Poisson arrivals at a fixed rate; the throughput is output tokens / (last finish - first arrival), and TTFT / TPOT are per
request (TPOT = (finish - first token) / (output tokens - 1), MLPerf's definition).
Several instances (MLPerf "4 x TP2") are several `Replica`s on one `Simulation` behind the
least-outstanding router, as a load balancer in front of them would be.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuscale.core import Priority, Simulation
from gpuscale.serving.performance import ReplicaHardware, StepCost
from gpuscale.serving.replica import EngineConfig, Replica
from gpuscale.serving.requests_table import COMPLETED, RequestTable
from gpuscale.serving.router import least_outstanding
from gpuscale.workloads.base import Requests


@dataclass(frozen=True)
class BenchResult:
    """What a benchmark report prints, from one simulated run."""

    output_tokens_per_s: float
    mean_ttft_s: float
    mean_tpot_s: float
    median_tpot_s: float
    p99_tpot_s: float
    makespan_s: float
    num_completed: int
    num_requests: int
    # Little's law over the run: completed requests per second x mean latency (arrival to last
    # token), i.e. the time-averaged number of requests in the system, all replicas together.
    # MLPerf's log gives both factors, so a server row's measured in-flight count is comparable.
    mean_in_system: float = float("nan")


def run_benchmark(hw: ReplicaHardware, cfg: EngineConfig, requests: Requests,
                  num_replicas: int = 1) -> BenchResult:
    """Replay `requests` on `num_replicas` identical engines until every request is done."""
    return _summarise(replay(hw, cfg, requests, num_replicas), requests)


def run_table(hw: ReplicaHardware, cfg: EngineConfig, arrival_s: np.ndarray,
              prompt_tokens: np.ndarray, output_tokens: np.ndarray) -> RequestTable:
    """One replica, given columns; returns the filled request table (the oracle's probe)."""
    requests = Requests(np.asarray(arrival_s, float), np.asarray(prompt_tokens, np.int64),
                        np.asarray(output_tokens, np.int64))
    return replay(hw, cfg, requests, 1)


def replay(hw: ReplicaHardware, cfg: EngineConfig, requests: Requests,
           num_replicas: int, router: str = "least_outstanding") -> RequestTable:
    """`router`: least_outstanding (a load balancer), or round_robin (request i to replica
    i mod R, as Vidur's global scheduler does)."""
    sim = Simulation()
    table = RequestTable(requests)
    cost = StepCost(hw)
    replicas = [Replica(f"r{i}", hw, cfg, sim, table, cost=cost) for i in range(num_replicas)]
    arrivals = table.arrival_s
    n = len(arrivals)
    round_robin = router == "round_robin"

    def arrive(rid: int) -> None:
        now_s = sim.now_s
        # Same-instant arrivals (offline) are routed in one go, as a client's burst would be.
        while True:
            table.num_arrived = rid + 1
            target = replicas[rid % num_replicas] if round_robin else least_outstanding(replicas)
            target.enqueue(rid, now_s)
            rid += 1
            if rid >= n or arrivals[rid] > now_s:
                break
        if rid < n:
            sim.schedule(arrivals[rid], Priority.ARRIVAL, arrive, rid)

    if n:
        sim.schedule(arrivals[0], Priority.ARRIVAL, arrive, 0)
    sim.run()
    return table


def _summarise(table: RequestTable, requests: Requests) -> BenchResult:
    cols = table.columns()
    done = cols.status == COMPLETED
    first_s = float(requests.arrival_s.min()) if len(requests) else 0.0
    end_s = float(np.nanmax(cols.finish_s)) if done.any() else first_s
    makespan = max(end_s - first_s, 1e-12)
    tokens = float(cols.output_tokens[done].sum())
    ttft = cols.first_token_s[done] - cols.arrival_s[done]
    multi = done & (cols.output_tokens > 1)
    tpot = (cols.finish_s[multi] - cols.first_token_s[multi]) / (cols.output_tokens[multi] - 1)
    latency_s = cols.finish_s[done] - cols.arrival_s[done]
    return BenchResult(
        output_tokens_per_s=tokens / makespan,
        mean_ttft_s=float(ttft.mean()) if len(ttft) else float("nan"),
        mean_tpot_s=float(tpot.mean()) if len(tpot) else float("nan"),
        median_tpot_s=float(np.median(tpot)) if len(tpot) else float("nan"),
        p99_tpot_s=float(np.percentile(tpot, 99)) if len(tpot) else float("nan"),
        makespan_s=makespan,
        num_completed=int(done.sum()),
        num_requests=len(requests),
        mean_in_system=float(latency_s.sum()) / makespan,
    )


def offline_requests(prompt_tokens: np.ndarray, output_tokens: np.ndarray) -> Requests:
    """All requests at t=0 (MLPerf Offline; trtllm-bench / vLLM benchmark at infinite rate)."""
    n = len(prompt_tokens)
    return Requests(np.zeros(n), np.asarray(prompt_tokens, np.int64),
                    np.asarray(output_tokens, np.int64))


def poisson_requests(rng: np.random.Generator, rate_per_s: float, prompt_tokens: np.ndarray,
                     output_tokens: np.ndarray) -> Requests:
    """Poisson arrivals at `rate_per_s`, one per given (prompt, output) pair."""
    n = len(prompt_tokens)
    arrival = np.cumsum(rng.exponential(1.0 / rate_per_s, n))
    return Requests(arrival, np.asarray(prompt_tokens, np.int64),
                    np.asarray(output_tokens, np.int64))
