"""Batch formation: what a replica's next step computes, and whom it preempts.

vLLM V1's `Scheduler.schedule()` (`vllm/v1/core/sched/scheduler.py`) forms each step the same
way: the running requests first (a prefilling one's next chunk, oldest first), then waiting
requests admitted first come first while the seats (`max_num_seqs`), the KV blocks and the
step's token budget allow; when the KV cache runs out, the newest running request is
preempted by recompute and goes back to the head of the waiting queue. Here:

- `form` plans the next step into the replica's `ScheduledStep` (its prefill chunks, the
  budget left, whether the decodes run), asking the batching strategy (serving/batching.py)
  for the budget and each chunk's size and the admission strategy (serving/admission.py)
  whether the head of the queue fits;
- `admit` is the admission loop alone (a request that arrives before a planned step starts
  still joins it);
- `relieve_kv_pressure` preempts until the next step's KV fits;
- `release` gives back what a request held here when it stops running.

As in inference-sim's batch formation (`sim/batch_formation.go`), it schedules no events and
records no metrics: those stay with the replica (serving/replica.py), which it tells of a drop
from the queue (`_load_changed`) and of a request admitted with its KV already computed
(`_complete`, `_join_decode`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuscale.serving.admission import admission_for
from gpuscale.serving.batching import batching_for
from gpuscale.serving.engine_config import EngineConfig
from gpuscale.serving.requests_table import NOT_DECODING

if TYPE_CHECKING:
    from gpuscale.serving.replica import Replica


class BatchFormation:
    """One replica's step planning over its waiting queue, running set and KV budget (the
    replica's own objects, shared with it)."""

    __slots__ = ("admission", "batching", "kv", "max_num_seqs", "queue", "replica",
                 "request_timeout_s", "running", "step", "table")

    def __init__(self, replica: Replica, cfg: EngineConfig) -> None:
        self.replica = replica
        self.table = replica.table
        self.queue = replica.queue
        self.running = replica.running
        self.kv = replica.kv
        self.step = replica.step
        # The strategies, chosen once from the engine's config (not flags read per step).
        self.batching = batching_for(cfg.batching, cfg.max_num_batched_tokens)
        self.admission = admission_for(cfg.admission, self.kv, self.table.prompt_tokens_list,
                                       self.table.output_tokens_list)
        self.max_num_seqs = cfg.max_num_seqs
        self.request_timeout_s = cfg.request_timeout_s

    def fork_blank(self) -> BatchFormation:
        """A formation for a fork of the replica to fill (core/fork.py)."""
        return BatchFormation(self.replica, self.replica.cfg)

    def form(self, now_s: float, g: int, accepting: bool) -> bool:
        """Plan the step starting at `now_s` (step count `g`): the prefilling requests'
        next chunks, then waiting ones admitted (new ones only while `accepting`). Returns
        whether it has prefill chunks (else the replica decodes, or idles)."""
        step = self.step
        step.clear()
        budget = self.batching.step_budget(self.kv.num_decoding)
        if self.running.prefilling:
            budget = self._continue_prefills(budget)
        if accepting or self.queue.count():
            budget = self.admit(now_s, g, budget)
        if not step.chunks:
            return False
        step.plan(now_s, budget, self.batching.decodes)
        return True

    def _continue_prefills(self, budget: int) -> int:
        """The prefilling requests' next chunks, oldest first, while `budget` tokens last;
        returns what is left of it."""
        cache = self.replica.prefix_cache
        prefill_left = self.table.prefill_left
        prompt_tokens = self.table.prompt_tokens_list
        for rid in self.running.prefilling:
            if budget <= 0:
                break
            remaining = prefill_left[rid]
            take = self.batching.chunk_tokens(remaining, budget)
            computed = prompt_tokens[rid] + self.queue.resumed_tokens(rid) - remaining
            self.step.add(rid, take, computed)
            budget -= take
            if cache is not None:
                cache.scheduled(rid, computed + take)
        return budget

    def admit(self, now_s: float, g: int, budget: int) -> int:
        """Admit waiting requests FCFS while seats, KV blocks and `budget` tokens allow, at
        step count `g`; returns what is left of the budget."""
        table = self.table
        queue = self.queue
        running = self.running
        while queue.count() and budget > 0 and running.num_running < self.max_num_seqs:
            rid = queue.first()
            if now_s - table.arrival_s_view[rid] > self.request_timeout_s:
                self._drop_first_waiting(rid, now_s, "timeout")
                continue
            kv_ready = queue.has_kv(rid)
            need = table.prompt_tokens_list[rid] + (1 if kv_ready else queue.resumed_tokens(rid))
            if not self.admission.admits(rid, need, g, running.num_running):
                if not running.num_running:  # can never fit, even alone: vLLM rejects it
                    self._drop_first_waiting(rid, now_s, "exceeds_kv_cache")
                    continue
                break
            if kv_ready:
                self._admit_to_decode(rid, now_s)
            elif self.batching.waits(need, budget, len(self.step.chunks) != 0,
                                     self.kv.num_decoding):
                break
            else:
                budget -= self._admit_to_prefill(rid, need, g, budget)
        return budget

    def _drop_first_waiting(self, rid: int, now_s: float, reason: str) -> None:
        """Drop the head of the waiting queue (`rid`): it timed out or can never fit."""
        self.queue.drop_first(rid, self.table.prompt_tokens_list[rid])
        self.table.drop(rid, now_s, reason)
        self.replica._load_changed()

    def _admit_to_decode(self, rid: int, now_s: float) -> None:
        """Admit the head `rid`, whose KV came from a prefill replica: straight into decode."""
        self.queue.pop_first_with_kv(rid, self.table.prompt_tokens_list[rid])
        self.admission.reserve(rid)
        if self.table.output_tokens_list[rid] <= 1:
            self.replica._complete(rid, now_s)  # done at once: never among the running
        else:
            self.running.add(rid)
            self.replica._join_decode(rid, 1)

    def _admit_to_prefill(self, rid: int, need: int, g: int, budget: int) -> int:
        """Admit the head `rid` to prefill `need` tokens (prompt + any it recomputes): its
        first chunk joins the planned step; returns that chunk's tokens."""
        self.queue.pop_first(self.table.prompt_tokens_list[rid])
        running = self.running
        running.add(rid)
        self.admission.reserve(rid)
        kv = self.kv
        cache = self.replica.prefix_cache
        # Tokens found in the prefix cache are not computed; the chunk's attention still
        # reads them (its prefix). The whole prompt stays reserved: it is this request's KV.
        hit = 0 if cache is None else cache.acquire(
            rid, need, kv.blocks(kv.cached_tokens(g + 1) + need, running.num_running))
        todo = need - hit
        running.start_prefill(rid, todo)
        kv.reserve_prefill(need)
        take = self.batching.chunk_tokens(todo, budget)
        self.step.add(rid, take, hit)
        if cache is not None:
            cache.scheduled(rid, hit + take)
        return take

    def release(self, rid: int, g: int) -> None:
        """`rid` stopped running here at step count `g` (finished, handed off or preempted):
        its admission reservation goes back, and its prompt blocks to the pool, still cached
        (serving/prefix_cache.py)."""
        self.admission.release(rid)
        cache = self.replica.prefix_cache
        if cache is not None:
            cache.release(rid, self.kv.blocks(self.kv.cached_tokens(g), self.running.num_running))

    def relieve_kv_pressure(self, g: int) -> None:
        """Preempt (recompute) the newest sequences until the KV of the step after step count
        `g` fits; each goes back to the head of the waiting queue."""
        kv = self.kv
        running = self.running
        g_next = g + 1
        if kv.fits(g_next, 0, running.num_running):
            return  # the common case: no pressure
        table = self.table
        while running.num_running and not kv.fits(g_next, 0, running.num_running):
            rid = running.pop_newest()
            table.num_preemptions[rid] += 1
            prompt = table.prompt_tokens_list[rid]
            generated = 0  # a prefilling one keeps what the queue knows of it
            if table.prefill_left[rid] >= 0:
                running.end_prefill(rid)
                kv.release_prefill(prompt + self.queue.resumed_tokens(rid))
            else:
                g0 = table.decode_g0[rid]
                table.decode_g0[rid] = NOT_DECODING
                kv.leave_decode(prompt, g0)
                generated = g - g0
            self.release(rid, g)
            self.queue.push_front(rid, prompt, generated)
