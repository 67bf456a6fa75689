"""One continuous-batching engine (vLLM V1 semantics), advanced from batch change to batch change.

Each engine step serves every decoding sequence one token and spends what is left of the token
budget (`max_num_batched_tokens`) on prefill chunks (chunked prefill), admitting waiting
requests FCFS while `max_num_seqs` and KV blocks allow. Steps that carry prefill are simulated
one by one (each changes the batch). A stretch of pure decode is advanced analytically: the
engine computes how many steps pass until the next sequence finishes or the KV cache runs out
(the step time grows linearly with the cached context, see `DecodeSegment`), and sets its one
timer there. An arrival in the middle of a stretch cuts it at the end of the step in
progress, where the newcomer joins, as it would in vLLM.

Bookkeeping uses a per-replica step counter G: a sequence that entered decode at G0 has
generated G - G0 tokens since, so finishing times are kept in a heap keyed by G and the
cached context is a line in G, with no per-token or per-sequence loop.

`Replica` keeps the clock: what runs (a step, a stretch, idle), when it ends, what its end
changes (prefills done, sequences finished, first tokens, completions) and what the metrics
read. The rest are rooms of their own, named as vLLM names them (docs/architecture.md):
`BatchFormation` (serving/batch_formation.py: what the next step computes, admission and
preemption, with the batching and admission strategies of serving/batching.py and
serving/admission.py), `WaitingQueue`, `RunningSet`, `KvBudget` (the KV formula, once),
`FinishHeap`, and `ScheduledStep` / `DecodeStretch` (serving/engine_step.py). Their speed
tricks, and why each exists, are in docs/hot-path.md.

KV approximation (documented in docs/serving.md): blocks in use = cached tokens / block_size
+ half a block per running sequence (the last block of each sequence is on average half full);
a request's whole prefill is reserved at admission. Preemption is by recompute, newest first.
With prompt block hashes, `prefix_cache` (serving/prefix_cache.py) is asked at admission how
much of the prompt is cached (that part is not computed), told which blocks each scheduled
chunk fills, and given a request's blocks back when it finishes or is preempted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final, cast

from gpuscale.core import Priority, Simulation
from gpuscale.core.simulation import TimerOwner
from gpuscale.serving.batch_formation import BatchFormation
from gpuscale.serving.engine_config import EngineConfig as EngineConfig  # callers build from it
from gpuscale.serving.engine_events import ReplicaEvents
from gpuscale.serving.engine_step import DecodeStretch, ScheduledStep
from gpuscale.serving.finish_heap import FinishHeap
from gpuscale.serving.kv_budget import KvBudget
from gpuscale.serving.performance import ReplicaHardware, StepCost
from gpuscale.serving.prefix_cache import PrefixCache
from gpuscale.serving.requests_table import NOT_DECODING, RequestTable
from gpuscale.serving.running_set import RunningSet
from gpuscale.serving.waiting_queue import WaitingQueue

# Final: the compiled hot path reads them as constants, not as module globals.
_IDLE: Final = 0
_STEP: Final = 1
_STRETCH: Final = 2
# The engine's event priority as a plain int (an IntEnum member is a class attribute lookup
# and a generic int subclass each time it is read in the compiled build).
_ENGINE_PRIORITY: Final = int(Priority.ENGINE)


class Replica(TimerOwner):
    """A serving engine bound to its event loop and the shared request table."""

    __slots__ = ("G", "accepting", "busy_accum_s", "busy_since_s", "cfg", "cost", "events",
                 "finishes", "formation", "hw", "kv", "load_log", "name", "on_complete",
                 "on_drained", "on_prefilled", "prefill_role", "prefix_cache", "queue", "role",
                 "route_rank", "running", "sim", "state", "step", "stretch", "table", "timer",
                 "ttft_observations")

    def __init__(self, name: str, hw: ReplicaHardware, cfg: EngineConfig, sim: Simulation,
                 table: RequestTable, cost: StepCost | None = None, role: str = "serve",
                 on_prefilled: Callable[[int, float], None] | None = None) -> None:
        self.name = name
        self.hw = hw
        self.cost = cost if cost is not None else StepCost(hw)
        self.cfg = cfg
        self.sim = sim
        self.table = table
        self.queue = WaitingQueue()
        self.running = RunningSet(table.decode_g0, table.prefill_left)
        # A decoding sequence's G0 (step count when its decode began) is table.decode_g0[rid].
        # When each decoding sequence finishes, in step counts, least first.
        self.finishes = FinishHeap(table.decode_g0, table.output_tokens_list)
        self.G = 0
        self.kv = KvBudget(cfg.block_size, cfg.num_blocks)
        self.step = ScheduledStep()  # the step planned or in progress (state _STEP)
        self.state = _IDLE
        # The end of the step or decode stretch in progress: one pending firing, replaced
        # whenever the plan changes (an arrival cuts a stretch, joins a planned step), so a
        # superseded end never runs (core/simulation.py timers).
        self.timer = sim.new_timer(self)
        self.stretch = DecodeStretch()  # the decode stretch in progress (state _STRETCH)
        self.busy_since_s = 0.0
        self.busy_accum_s = 0.0
        self.accepting = True
        self.on_drained: Callable[[Replica], None] | None = None
        # Disaggregation: a "prefill" replica hands each request off after its prefill
        # (on_prefilled); a "decode" replica admits requests whose KV arrived (the queue's
        # kv_ready) straight into decode.
        self.role = role
        self.prefill_role = role == "prefill"  # read per finished prefill: a bool, not a str ==
        self.on_prefilled = on_prefilled
        # Closed-loop clients: told when their request is done (serving/bench.py).
        self.on_complete: Callable[[int, float], None] | None = None
        self.ttft_observations: list[float] = []  # drained by each metrics scrape
        self.events: ReplicaEvents | None = None  # per-pod request series (ReplicaEvents)
        # Automatic prefix caching (serving/prefix_cache.py), set by the fleet only when the
        # trace has prompt block hashes and engine.enable_prefix_caching is on; None costs
        # nothing but one test per admission, chunk and completion.
        self.prefix_cache: PrefixCache | None = None
        # The router's index (serving/router.py LeastOutstanding): while this replica is a
        # routing target, it appends itself to `load_log` whenever its outstanding() count
        # changes (enqueue, drop, completion, hand-off), and `route_rank` is its place in the
        # ready list (0 = not routed to).
        self.load_log: list[Replica] | None = None
        self.route_rank = 0
        # What the next step computes and whom it preempts (serving/batch_formation.py).
        self.formation = BatchFormation(self, cfg)

    # -- observation (metrics) -----------------------------------------------------------------
    def outstanding(self) -> int:
        """Waiting + running requests (the router's load)."""
        return self.num_waiting() + self.running.num_running

    def num_waiting(self) -> int:
        return self.queue.count()

    def waiting_rids(self) -> list[int]:
        """The waiting queue, head first."""
        return self.queue.in_order()

    @property
    def num_running(self) -> int:
        """Running requests (vllm:num_requests_running)."""
        return self.running.num_running

    def running_rids(self) -> list[int]:
        """The running requests, in admission order."""
        return self.running.in_order()

    def prefilling_rids(self) -> list[int]:
        """The prefilling requests, oldest first."""
        return list(self.running.prefilling)

    def is_running(self, rid: int) -> bool:
        """Whether `rid`, a request routed here, runs here now (prefilling or decoding)."""
        return self.running.is_running(rid)

    def current_G(self, now_s: float) -> int:
        if self.state == _STRETCH:
            return self.stretch.start_g + self.stretch.steps_done(now_s)
        return self.G

    def kv_usage_frac(self, now_s: float) -> float:
        """KV blocks in use / blocks (vllm:kv_cache_usage_perc, 0..1)."""
        return self.kv.usage_frac(self.current_G(now_s), self.running.num_running)

    def prefill_tokens_waiting(self) -> int:
        """Prompt tokens not prefilled yet: the waiting prompts and what the prefilling
        requests still have to compute (gpuscale:num_prefill_tokens_waiting)."""
        return self.queue.prompt_tokens + self.running.prefill_tokens_left()

    def take_ttft_observations(self) -> list[float]:
        """The TTFTs observed here since the last call (each metrics scrape drains them)."""
        taken = self.ttft_observations
        if taken:
            self.ttft_observations = []
        return taken

    def is_busy(self) -> bool:
        """Executing a step or a decode stretch (DCGM sees the GPU busy)."""
        return self.state != _IDLE

    def busy_s(self, now_s: float) -> float:
        """Seconds spent executing steps so far (DCGM GPU_UTIL's duty cycle numerator)."""
        if self.state != _IDLE:
            return self.busy_accum_s + (now_s - self.busy_since_s)
        return self.busy_accum_s

    # -- inputs -------------------------------------------------------------------------------
    def enqueue(self, rid: int, now_s: float, kv_ready: bool = False) -> None:
        """A request reaches this engine's waiting queue; it joins at the next step boundary.

        `kv_ready`: its prompt's KV cache (and first token) came from a prefill replica.
        """
        if not kv_ready and self.table.prompt_tokens_list[rid] >= self.cfg.max_model_len:
            # vLLM's OpenAI server answers 400 ("maximum context length is N tokens") for a
            # prompt that leaves no room for one output token; it is never served.
            self.table.drop(rid, now_s, "exceeds_max_model_len")
            return
        self.queue.append(rid, self.table.prompt_tokens_list[rid], kv_ready)
        self._load_changed()
        if self.state == _IDLE:
            self._plan(now_s)
        elif self.state == _STRETCH:
            self._cut_stretch(now_s)
        elif now_s <= self.step.start_s and self.queue.count() == 1:
            self._join_planned_step()

    def enqueue_burst(self, rid: int, now_s: float) -> int:
        """`enqueue` request `rid` and the ones after it that arrive at the same instant (a
        client's burst: the oracle's probe queues its whole mix at t = 0); returns the first
        request id not enqueued (len(table) once all are in). Here, in the compiled build,
        not in the probe's interpreted loop."""
        table = self.table
        arrivals = table.arrival_s_view
        n = len(table)
        while True:
            table.num_arrived = rid + 1
            self.enqueue(rid, now_s)
            rid += 1
            if rid >= n or arrivals[rid] > now_s:
                return rid

    def drain(self, on_drained: Callable[[Replica], None]) -> None:
        """Stop taking requests; call `on_drained` once the in-flight ones are done."""
        self.accepting = False
        self.on_drained = on_drained
        if self.state == _IDLE and not self.num_waiting():
            on_drained(self)

    def evict(self) -> list[int]:
        """Stop at once (pod killed): returns the request ids that were in flight here."""
        self._go_idle(self.sim.now_s)
        self.sim.cancel_timer(self.timer)
        lost = self.running.evict() + self.waiting_rids()
        self.queue.clear()
        self.finishes.clear()
        self.kv.clear()
        self.accepting = False
        return lost

    # -- internals ------------------------------------------------------------------------------
    def _go_idle(self, now_s: float) -> None:
        if self.state != _IDLE:
            self.busy_accum_s += now_s - self.busy_since_s
        self.state = _IDLE

    def _start_busy(self, now_s: float, state: int) -> None:
        if self.state == _IDLE:
            self.busy_since_s = now_s
        self.state = state

    def _load_changed(self) -> None:
        """Its outstanding() count changed: the router's index re-reads it (`load_log`)."""
        if self.load_log is not None:
            self.load_log.append(self)

    def _plan(self, now_s: float) -> None:
        """At a step boundary: the next step (with prefill), a decode stretch, or idle."""
        running = self.running
        if not running.prefilling and not self.queue.count() and self.kv.num_decoding:
            self._start_stretch(now_s)  # fast path: nothing to admit or prefill
            return
        if self.formation.form(now_s, self.G, self.accepting):
            self._start_busy(now_s, _STEP)
            self._schedule_step()
            return
        if self.kv.num_decoding:
            self._start_stretch(now_s)
            return
        self._go_idle(now_s)
        if not self.accepting and not running.num_running and not self.queue.count() \
                and self.on_drained:
            callback, self.on_drained = self.on_drained, None
            callback(self)

    def _schedule_step(self) -> None:
        """Set the timer to the end of the planned step."""
        step = self.step
        kv = self.kv
        decodes = kv.num_decoding if step.decodes else 0
        duration = self.cost.engine_step_s(
            decodes, kv.decode_context(self.G) if decodes else 0, step.cost_chunks)
        self.sim.set_timer(self.timer, step.start_s + duration, _ENGINE_PRIORITY, _STEP, None)

    def _join_planned_step(self) -> None:
        """A request arriving before a planned step starts still joins that step."""
        step = self.step
        chunks_before = len(step.chunks)
        decoding_before = self.kv.num_decoding
        step.budget_tokens = self.formation.admit(step.start_s, self.G, step.budget_tokens)
        if len(step.chunks) != chunks_before or self.kv.num_decoding != decoding_before:
            self._schedule_step()

    def _start_stretch(self, now_s: float) -> None:
        """A stretch of pure decode, to the first finish or until the KV cache is full (the
        preemption then comes at that boundary)."""
        G = self.G
        kv = self.kv
        n = kv.num_decoding
        context = kv.decode_context(G)
        steps_to_finish = self.finishes.next_finish_g() - G
        if steps_to_finish < 1:
            steps_to_finish = 1
        steps_to_full = kv.decode_steps_until_full(G, self.running.num_running)
        steps = steps_to_finish if steps_to_finish < steps_to_full else max(1, steps_to_full)
        first_s = self.cost.decode_step_s(n, context)
        slope_s = self.cost.segment_slope_s(n, context, first_s)
        end_s = self.stretch.start(now_s, G, steps, first_s, slope_s)
        self._start_busy(now_s, _STRETCH)
        self.sim.set_timer(self.timer, end_s, _ENGINE_PRIORITY, _STRETCH, steps)

    def _cut_stretch(self, now_s: float) -> None:
        """End the decode stretch at the end of the step in progress, where the newcomer joins.

        Nothing finishes and the KV cache cannot run out before that boundary (the stretch was
        sized to end at the first such event), so the state there is known now: advance to it
        and plan the next step to start at the boundary, without an event in between.
        """
        stretch = self.stretch
        boundary = stretch.steps_done(now_s) + 1
        if boundary >= stretch.num_steps:
            return  # the stretch ends at that step anyway
        self.G += boundary
        self._plan(stretch.end_of_step_s(boundary))

    def on_timer(self, kind: int, arg: object) -> None:
        """The step (`_STEP`) or decode stretch (`_STRETCH`, its steps) ends."""
        if kind == _STEP:
            self._end_step()
        else:
            self._end_stretch(cast(int, arg))

    def _end_stretch(self, steps: int) -> None:
        now_s = self.sim.now_s
        self.G += steps
        self._finish_due(now_s)
        self.formation.relieve_kv_pressure(self.G)
        self._plan(now_s)

    def _end_step(self) -> None:
        now_s = self.sim.now_s
        if self.step.decodes:
            self.G += 1
            if self.finishes.has_due(self.G):
                self._finish_due(now_s)
        prefill_left = self.table.prefill_left
        for chunk in self.step.chunks:
            rid = chunk.rid
            left = prefill_left[rid]
            if left < 0:
                continue  # preempted meanwhile
            remaining = left - chunk.num_tokens
            if remaining > 0:
                prefill_left[rid] = remaining
            else:
                self._end_prefill(rid, now_s)
        self.formation.relieve_kv_pressure(self.G)
        self._plan(now_s)

    def _end_prefill(self, rid: int, now_s: float) -> None:
        """`rid`'s prefill is done; the step also produced its next token."""
        table = self.table
        self.running.end_prefill(rid)
        generated = self.queue.take_resumed_tokens(rid) + 1
        self.kv.release_prefill(table.prompt_tokens_list[rid] + generated - 1)
        if not self.prefill_role and math.isnan(table.first_token_s_view[rid]):
            # The first token is out now (a prefill replica's leaves with its KV).
            table.first_token_s_view[rid] = now_s
            self.ttft_observations.append(now_s - table.arrival_s_view[rid])
            if self.events is not None:
                self.events.first_tokens.append(rid)
        on_prefilled = self.on_prefilled
        if self.prefill_role and on_prefilled is not None:
            # Its KV (and first token) leave for a decode replica.
            self.running.remove(rid)
            self.formation.release(rid, self.G)
            self._load_changed()
            on_prefilled(rid, now_s)
        elif generated >= table.output_tokens_list[rid]:
            self.running.finish_one()
            self._complete(rid, now_s)
        else:
            self._join_decode(rid, generated)

    def _join_decode(self, rid: int, generated: int) -> None:
        """Enter decode having generated `generated` tokens; finishes when G reaches its end."""
        g0 = self.G - generated
        self.table.decode_g0[rid] = g0
        self.kv.join_decode(self.table.prompt_tokens_list[rid], g0)
        self.finishes.push(rid, g0 + self.table.output_tokens_list[rid])

    def _finish_due(self, now_s: float) -> None:
        """Complete every sequence whose last token came at or before step count G."""
        finishes = self.finishes
        table = self.table
        while True:
            rid = finishes.pop_due(self.G)
            if rid < 0:
                return
            g0 = table.decode_g0[rid]
            table.decode_g0[rid] = NOT_DECODING
            self.running.finish_one()
            self.kv.leave_decode(table.prompt_tokens_list[rid], g0)
            self._complete(rid, now_s)

    def _complete(self, rid: int, now_s: float) -> None:
        """`rid` is done here (its last token came, or it needed only the one its KV came
        with)."""
        self.formation.release(rid, self.G)
        self._load_changed()
        self.table.complete(rid, now_s)
        self.table.recently_completed.append(rid)
        if self.events is not None:
            self.events.completions.append(rid)
        if self.on_complete is not None:
            self.on_complete(rid, now_s)
