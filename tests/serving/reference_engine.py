"""A deliberately naive engine for tests: the same vLLM policy, simulated one step at a time.

The real `Replica` skips whole decode stretches analytically; this one walks every step, so
agreement between the two checks the analytical bookkeeping (G counter, segment cuts, KV).
"""

from __future__ import annotations

import math
from collections import deque

from gpuscale.serving.performance import StepCost
from gpuscale.serving.replica import EngineConfig


def run_reference(cost: StepCost, cfg: EngineConfig, arrivals: list[float], prompts: list[int],
                  outputs: list[int]) -> tuple[list[float], list[float]]:
    n = len(arrivals)
    first = [math.nan] * n
    finish = [math.nan] * n
    waiting: deque[int] = deque()
    running: dict[int, None] = {}
    prefilling: dict[int, int] = {}  # rid -> remaining
    need_total: dict[int, int] = {}
    generated: dict[int, int] = {}
    decoding: set[int] = set()
    nxt = 0
    t = 0.0

    def kv_blocks(steps_ahead: int, extra_tokens: int = 0, extra_seqs: int = 0) -> float:
        tokens = sum(prompts[r] + generated[r] + steps_ahead for r in decoding)
        tokens += sum(need_total[r] for r in prefilling) + extra_tokens
        return tokens / cfg.block_size + 0.5 * (len(running) + extra_seqs)

    while nxt < n or running or waiting:
        while nxt < n and arrivals[nxt] <= t:
            waiting.append(nxt)
            nxt += 1
        if not running and not waiting:
            t = arrivals[nxt]
            continue
        budget = cfg.max_num_batched_tokens - len(decoding)
        chunks = []
        for rid, remaining in prefilling.items():
            if budget <= 0:
                break
            take = min(remaining, budget)
            chunks.append((rid, take, need_total[rid] - remaining))
            budget -= take
        while waiting and budget > 0 and len(running) < cfg.max_num_seqs:
            rid = waiting[0]
            need = prompts[rid] + generated.get(rid, 0)
            if kv_blocks(1, need, 1) > cfg.num_blocks:
                break
            waiting.popleft()
            running[rid] = None
            prefilling[rid] = need
            need_total[rid] = need
            generated.setdefault(rid, 0)
            take = min(need, budget)
            chunks.append((rid, take, 0))
            budget -= take
        ctx = sum(prompts[r] + generated[r] for r in decoding)
        t += cost.step_s(len(decoding), ctx, tuple((c, p) for _, c, p in chunks))
        for rid in sorted(decoding, key=lambda r: r):
            generated[rid] += 1
        for rid in [r for r in decoding if generated[r] >= outputs[r]]:
            decoding.discard(rid)
            del running[rid]
            finish[rid] = t
        for rid, take, _ in chunks:
            if rid not in prefilling:
                continue
            prefilling[rid] -= take
            if prefilling[rid] > 0:
                continue
            del prefilling[rid]
            generated[rid] += 1
            if math.isnan(first[rid]):
                first[rid] = t
            if generated[rid] >= outputs[rid]:
                del running[rid]
                finish[rid] = t
            else:
                decoding.add(rid)
        while running and kv_blocks(1) > cfg.num_blocks:
            rid, _ = running.popitem()
            prefilling.pop(rid, None)
            decoding.discard(rid)
            waiting.appendleft(rid)
        # Arrivals during the step join at its end.
    return first, finish
