"""What a replica executes: one step with prefill chunks, or a stretch of pure decode steps.

A step serves every decoding sequence one token (unless the batching keeps decodes out of it,
serving/batching.py) and the prefill chunks scheduled into it: `StepChunk`s, a request's
tokens computed this step after those computed before (vLLM's scheduler output,
`vllm/v1/core/sched/output.py` `SchedulerOutput.num_scheduled_tokens`, with the request's
`num_computed_tokens`). A stretch of pure decode is advanced in closed form: step k of it
takes `first_step_s + slope_s x k` (serving/decode_segment.py `DecodeSegment`), so its end and
the steps done by any instant are arithmetic (`DecodeStretch`).

Each replica holds one `ScheduledStep` and one `DecodeStretch`, rewritten for every plan, not
one object a step (docs/hot-path.md).
"""

from __future__ import annotations

from gpuscale._mypyc_hints import mypyc_attr
from gpuscale.serving.decode_segment import segment_duration_s, segment_steps_within


@mypyc_attr(acyclic=True)
class StepChunk:
    """Request `rid`'s `num_tokens` prefill tokens computed in one step, after its first
    `num_computed_tokens` (computed in earlier steps or found in the prefix cache: the chunk's
    attention reads them). Numbers only, so acyclic: not tracked by the cycle collector
    (docs/hot-path.md)."""

    __slots__ = ("num_computed_tokens", "num_tokens", "rid")

    def __init__(self, rid: int, num_tokens: int, num_computed_tokens: int) -> None:
        self.rid = rid
        self.num_tokens = num_tokens
        self.num_computed_tokens = num_computed_tokens


class ScheduledStep:
    """The step a replica planned: when it starts (a step planned after a cut starts at the
    end of the step in progress, in the future), its chunks, the token budget left for
    requests that join it before it starts, and whether the decoding sequences run in it."""

    __slots__ = ("budget_tokens", "chunks", "cost_chunks", "decodes", "start_s")

    def __init__(self) -> None:
        self.start_s = 0.0
        self.chunks: list[StepChunk] = []
        # The same chunks as the step cost reads them (`StepCost.engine_step_s`: request id,
        # tokens, tokens computed before), added beside them rather than rebuilt for each cost
        # call. The step cost (serving/performance.py) takes tuples; the day it reads
        # StepChunks, this list goes.
        self.cost_chunks: list[tuple[int, int, int]] = []
        self.budget_tokens = 0
        self.decodes = True

    def fork_blank(self) -> ScheduledStep:
        """A step for a fork of the replica to fill (core/fork.py)."""
        return ScheduledStep()

    def clear(self) -> None:
        """Forget the last step's chunks (the lists are kept: no allocation a step)."""
        self.chunks.clear()
        self.cost_chunks.clear()

    def add(self, rid: int, num_tokens: int, num_computed_tokens: int) -> None:
        """Schedule `num_tokens` prefill tokens of `rid` after its first
        `num_computed_tokens`."""
        self.chunks.append(StepChunk(rid, num_tokens, num_computed_tokens))
        self.cost_chunks.append((rid, num_tokens, num_computed_tokens))

    def plan(self, start_s: float, budget_tokens: int, decodes: bool) -> None:
        """The chunks added since `clear` run as one step from `start_s`."""
        self.start_s = start_s
        self.budget_tokens = budget_tokens
        self.decodes = decodes


class DecodeStretch:
    """The stretch of pure decode a replica runs: from `start_s` at step count `start_g`,
    `num_steps` steps, step k taking `first_step_s + slope_s x k`."""

    __slots__ = ("first_step_s", "num_steps", "slope_s", "start_g", "start_s")

    def __init__(self) -> None:
        self.first_step_s = 0.0
        self.slope_s = 0.0
        self.start_s = 0.0
        self.start_g = 0
        self.num_steps = 0

    def fork_blank(self) -> DecodeStretch:
        """A stretch for a fork of the replica to fill (core/fork.py)."""
        return DecodeStretch()

    def start(self, start_s: float, start_g: int, num_steps: int, first_step_s: float,
              slope_s: float) -> float:
        """Begin a stretch; returns the instant it ends."""
        self.start_s = start_s
        self.start_g = start_g
        self.num_steps = num_steps
        self.first_step_s = first_step_s
        self.slope_s = slope_s
        return self.end_of_step_s(num_steps)

    def steps_done(self, now_s: float) -> int:
        """Steps of the stretch completed by `now_s` (at most all of them)."""
        done = segment_steps_within(self.first_step_s, self.slope_s, now_s - self.start_s)
        return done if done < self.num_steps else self.num_steps

    def end_of_step_s(self, steps: int) -> float:
        """When the stretch's first `steps` steps are done."""
        return self.start_s + segment_duration_s(self.first_step_s, self.slope_s, steps)
