"""Drive the real replica engine the way a benchmark does, and read the statistic it reports.

Used by calibration (rows A6-A13) and the oracle bound. Offline (MLPerf Offline,
`trtllm-bench throughput`, `rps=inf`): every request at t=0; the throughput is output tokens /
makespan. Server (MLPerf Server): Poisson arrivals at a fixed rate; the throughput is output
tokens / (last finish - first arrival), and TTFT / TPOT are per request (TPOT = (finish -
first token) / (output tokens - 1), MLPerf's definition).
Several instances (MLPerf "4 x TP2") are several `Replica`s on one `Simulation` behind the
least-outstanding router, as a load balancer in front of them would be.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from gpuscale.core import Priority, Simulation
from gpuscale.core.fork import copy_attributes, fork_sim
from gpuscale.serving.frontend import FRONTENDS, Frontend
from gpuscale.serving.performance import ReplicaHardware, StepCost
from gpuscale.serving.replica import EngineConfig, Replica
from gpuscale.serving.requests_table import COMPLETED, RequestColumns, RequestTable
from gpuscale.serving.router import least_outstanding
from gpuscale.workloads.base import Requests

NO_FRONTEND = FRONTENDS["none"]


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


@functools.lru_cache(maxsize=16)
def _step_cost(hw: ReplicaHardware) -> StepCost:
    """One StepCost per hardware across replays: its memo of per-token-count terms is a pure
    function of `hw`, and the oracle probe replays the same hardware six times (each replay
    paid the GEMM model for every batch size again)."""
    return StepCost(hw)


def run_benchmark(hw: ReplicaHardware, cfg: EngineConfig, requests: Requests,
                  num_replicas: int = 1) -> BenchResult:
    """Replay `requests` on `num_replicas` identical engines until every request is done."""
    return _summarise(replay(hw, cfg, requests, num_replicas), requests)


def run_table(hw: ReplicaHardware, cfg: EngineConfig, arrival_s: np.ndarray,
              prompt_tokens: np.ndarray, output_tokens: np.ndarray, *,
              cost: StepCost | None = None) -> RequestTable:
    """One replica, given columns; returns the filled request table (the oracle's probe)."""
    requests = Requests(np.asarray(arrival_s, float), np.asarray(prompt_tokens, np.int64),
                        np.asarray(output_tokens, np.int64))
    return replay(hw, cfg, requests, 1, cost=cost)


# Forks of the twice run: one when at most _FORK_WAITING requests of the first copy are left
# waiting (the once run re-runs at most their admission, should the next slice overshoot),
# then one at the last of them; each copies the replica and table (~0.2-0.5 ms).
_FORK_WAITING = 32


def twice_queued_table(prompt_tokens: np.ndarray, output_tokens: np.ndarray) -> RequestTable:
    """The request table of the mix queued twice at t = 0, not run: `offline_once_and_twice`'s
    `template`, for probing one mix under several configs (building one is ~0.5 ms, mostly its
    token lists; a copy shares them)."""
    prompts = np.asarray(prompt_tokens, np.int64)
    outputs = np.asarray(output_tokens, np.int64)
    return RequestTable(Requests(np.zeros(2 * len(prompts)), np.concatenate([prompts, prompts]),
                                 np.concatenate([outputs, outputs])))


def offline_once_and_twice(hw: ReplicaHardware, cfg: EngineConfig, prompt_tokens: np.ndarray,
                           output_tokens: np.ndarray, *, cost: StepCost | None = None,
                           template: RequestTable | None = None
                           ) -> tuple[RequestColumns, RequestColumns]:
    """The columns `run_table` gives for the mix queued at t = 0 once and twice (the oracle's
    differential probe), the same numbers for about the cost of the twice run alone.

    Why they share a prefix: the twice run's waiting queue is the once run's with the second
    copy behind it (nothing arrives after t = 0, and a preempted request goes back to the
    head), so the engine decides the same until it first takes a request of the second copy:
    until then it only ever reads the queue's head, and where the once run's queue is empty
    the twice run's examining the second copy's head without taking it changes nothing
    (`Replica._admit` breaks, `_plan` starts the same decode stretch). So the twice run is run
    in time slices aimed at the first copy's last admission; the replica, table and
    simulation are forked when at most `_FORK_WAITING` of the first copy are left waiting and
    again at the last of them, and the last fork taken while no request of the second copy
    had been taken becomes the once run, with the second copy removed from its queue (the
    table rows of the second copy are cut off its columns; the scrape-drained lists, which
    nothing reads here, are not kept). Without such a fork (everything admitted at t = 0) the
    once run is run on its own.
    tests/serving/test_bench_fork.py checks both against two separate runs. `template`: this
    mix's `twice_queued_table`, copied instead of built (it stays unrun)."""
    n = len(prompt_tokens)
    prompts = np.asarray(prompt_tokens, np.int64)
    outputs = np.asarray(output_tokens, np.int64)
    if cost is None or cost.hw != hw:
        cost = _step_cost(hw)
    sim = Simulation()
    if template is None:
        table = twice_queued_table(prompts, outputs)
    elif len(template) != 2 * n or template.num_arrived:
        raise ValueError("template: an unrun twice_queued_table of this mix expected")
    else:
        table = _copy_table(template, {})
    replica = Replica("r0", hw, cfg, sim, table, cost=cost)
    if n:  # as `replay` queues a burst at t = 0: one event, the whole mix enqueued in it
        sim.schedule(0.0, Priority.ARRIVAL, replica.enqueue_burst, 0, 0.0)
    sim.run(0.0)
    # The second copy's queued requests (enqueue drops a prompt over max_model_len) are the
    # queue's tail; the first of them is the first the engine would take.
    queued = n + np.flatnonzero(prompts < cfg.max_model_len)
    tail = len(queued)
    fork = None
    if tail and not _taken(replica, table, int(queued[0])):
        first = int(queued[0])
        while True:  # at most two forks: the first under _FORK_WAITING, the one at the last
            now_s = sim.now_s
            waiting = replica.num_waiting() - tail  # of the first copy
            if waiting <= 1 or (fork is None and waiting <= _FORK_WAITING):
                fork = _fork(sim, table, replica)
                if waiting <= 1:
                    break
            taken = tail - waiting  # of the first copy, so far
            next_s = sim.peek_s()
            # Aim at three quarters of the way to the queue's end at the pace so far.
            horizon_s = now_s + 0.75 * waiting * now_s / taken if now_s > 0 and taken > 0 \
                else next_s
            if next_s == math.inf:
                break
            sim.run(max(horizon_s, next_s))
            if _taken(replica, table, first):
                break
    sim.run()
    twice = table.columns()
    if fork is None:
        once = run_table(hw, cfg, np.zeros(n), prompts, outputs, cost=cost).columns()
        return once, twice
    once_sim, once_table, once_replica = fork
    # Back to the once run's queue and counts: the second copy out of the waiting queue.
    queue = once_replica.queue
    del queue[len(queue) - tail:]
    once_replica.waiting_prompt_tokens -= int(prompts[queued - n].sum())
    once_table.num_arrived = n
    once_sim.run()
    return _first_rows(once_table.columns(), n), twice


def _taken(replica: Replica, table: RequestTable, rid: int) -> bool:
    """Whether the engine has ever taken `rid` off its waiting queue (admitted or dropped)."""
    finish_s = table.finish_s_view[rid]  # not NaN: it finished (completed or dropped)
    return replica.is_running(rid) or finish_s == finish_s \
        or table.num_preemptions[rid] > 0


def _fork(sim: Simulation, table: RequestTable, replica: Replica
          ) -> tuple[Simulation, RequestTable, Replica]:
    """Independent copies of a paused one-replica replay (core/fork.py)."""
    memo: dict[int, object] = {}
    # The lists a metrics scrape drains are emptied first (nothing reads them here): a fork
    # then copies ~2 lists of the mix's length, not 4.
    table.recently_completed.clear()
    replica.ttft_observations.clear()
    twin_sim = Simulation(indexed_timers=sim._timers is not None)
    memo[id(sim)] = twin_sim
    twin_table = _copy_table(table, memo)
    twin = Replica(replica.name, replica.hw, replica.cfg, twin_sim, twin_table,
                   cost=replica.cost)
    copy_attributes(replica, twin, memo)
    fork_sim(sim, twin_sim, memo)
    return twin_sim, twin_table, twin


def _copy_table(table: RequestTable, memo: dict[int, object]) -> RequestTable:
    """A copy of `table` sharing the request columns the engine only reads (core/fork.py)."""
    for column in (table.arrival_s, table.prompt_tokens, table.output_tokens,
                   table.prompt_tokens_list, table.output_tokens_list):
        memo[id(column)] = column
    twin = RequestTable(_NO_REQUESTS)
    copy_attributes(table, twin, memo)
    return twin


def _first_rows(cols: RequestColumns, n: int) -> RequestColumns:
    return RequestColumns(
        arrival_s=cols.arrival_s[:n], prompt_tokens=cols.prompt_tokens[:n],
        output_tokens=cols.output_tokens[:n], first_token_s=cols.first_token_s[:n],
        finish_s=cols.finish_s[:n], status=cols.status[:n],
        num_preemptions=cols.num_preemptions[:n], num_retries=cols.num_retries[:n],
        num_arrived=cols.num_arrived)


_NO_REQUESTS = Requests(np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))


def replay(hw: ReplicaHardware, cfg: EngineConfig, requests: Requests,
           num_replicas: int, router: str = "least_outstanding", *,
           cost: StepCost | None = None) -> RequestTable:
    """`router`: least_outstanding (a load balancer), or round_robin (request i to replica
    i mod R, as Vidur's global scheduler does). `cost`: a `StepCost` of `hw` to reuse (the
    simulation's, whose memo is already warm; same floats, since the memo is a pure function
    of `hw`), else one shared across replays."""
    if cost is None or cost.hw != hw:
        cost = _step_cost(hw)
    sim = Simulation()
    table = RequestTable(requests)
    replicas = [Replica(f"r{i}", hw, cfg, sim, table, cost=cost) for i in range(num_replicas)]
    arrivals = table.arrival_s
    n = len(arrivals)
    round_robin = router == "round_robin"
    # One replica (the oracle's probe): every request goes to it, no router scan per request.
    only = replicas[0] if num_replicas == 1 else None

    def arrive(rid: int) -> None:
        now_s = sim.now_s
        # Same-instant arrivals (offline) are routed in one go, as a client's burst would be.
        if only is not None:
            rid = only.enqueue_burst(rid, now_s)
        else:
            while True:
                table.num_arrived = rid + 1
                target = replicas[rid % num_replicas] if round_robin \
                    else least_outstanding(replicas)
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


def replay_closed_loop(hw: ReplicaHardware, cfg: EngineConfig, prompt_tokens: np.ndarray,
                       output_tokens: np.ndarray, concurrency: int, think_time_s: float = 0.0,
                       num_replicas: int = 1, router: str = "least_outstanding") -> RequestTable:
    """N clients, each sending its next request `think_time_s` after its previous one finished
    (AIPerf / genai-perf / vLLM `--max-concurrency`). Request i's lengths are the i-th given;
    its arrival is when a client sends it. Ends when every request is done."""
    n = len(prompt_tokens)
    sim = Simulation()
    table = RequestTable(Requests(np.zeros(n), np.asarray(prompt_tokens, np.int64),
                                  np.asarray(output_tokens, np.int64)))
    cost = _step_cost(hw)
    replicas = [Replica(f"r{i}", hw, cfg, sim, table, cost=cost) for i in range(num_replicas)]
    next_rid = [0]

    def send(_client: int) -> None:
        rid = next_rid[0]
        if rid >= n:
            return
        next_rid[0] = rid + 1
        now_s = sim.now_s
        table.arrival_s[rid] = now_s
        table.num_arrived = rid + 1
        target = replicas[rid % num_replicas] if router == "round_robin" \
            else least_outstanding(replicas)
        target.enqueue(rid, now_s)

    def done(rid: int, now_s: float) -> None:
        sim.schedule(now_s + think_time_s, Priority.ARRIVAL, send, rid)

    for replica in replicas:
        replica.on_complete = done
    for client in range(min(concurrency, n)):
        sim.schedule(0.0, Priority.ARRIVAL, send, client)
    sim.run()
    return table


STATISTICS = ("ttft_mean_s", "ttft_p50_s", "ttft_p99_s", "tpot_mean_s", "tpot_p50_s",
              "tpot_p99_s", "itl_mean_s", "itl_p50_s", "output_tokens_per_s",
              "input_tokens_per_s", "requests_per_s")


def statistics(table: RequestTable, frontend: Frontend = NO_FRONTEND) -> dict[str, float]:
    """What benchmark tools report, from one run, as the client sees it through `frontend`
    (serving/frontend.py: its per-request and per-token costs; the table holds the engine's
    side). TPOT per request is MLPerf's (finish - first token) / (output - 1); ITL is AIPerf's
    average over every inter-token gap (token-weighted), its median the token-weighted median
    of the requests' mean gaps (the engine's gaps within one request are not kept apart: an
    approximation where one request's gaps vary, as under chunked prefills); throughputs are
    over first arrival to last finish (input: the completed requests' prompt tokens)."""
    cols = table.columns()
    done = cols.status == COMPLETED
    nan = float("nan")
    if not done.any():
        return {k: nan for k in STATISTICS}
    span = max(float(np.nanmax(cols.finish_s[done]) - cols.arrival_s.min())
               + frontend.request_s + frontend.finish_s, 1e-12)
    ttft = cols.first_token_s[done] - cols.arrival_s[done] + frontend.ttft_offset_s
    multi = done & (cols.output_tokens > 1)
    gaps = cols.finish_s[multi] - cols.first_token_s[multi]
    steps = cols.output_tokens[multi] - 1
    tpot = gaps / steps + frontend.token_s
    have = len(tpot) > 0
    return {"ttft_mean_s": float(ttft.mean()), "ttft_p50_s": float(np.median(ttft)),
            "ttft_p99_s": float(np.percentile(ttft, 99)),
            "tpot_mean_s": float(tpot.mean()) if have else nan,
            "tpot_p50_s": float(np.median(tpot)) if have else nan,
            "tpot_p99_s": float(np.percentile(tpot, 99)) if have else nan,
            "itl_mean_s": float(gaps.sum() / steps.sum()) + frontend.token_s if have else nan,
            "itl_p50_s": _weighted_median(tpot, steps) if have else nan,
            "output_tokens_per_s": float(cols.output_tokens[done].sum()) / span,
            "input_tokens_per_s": float(cols.prompt_tokens[done].sum()) / span,
            "requests_per_s": float(done.sum()) / span}


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """The value below which half the total weight lies (the lower one at an exact half)."""
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cumulative, cumulative[-1] / 2.0)])


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
