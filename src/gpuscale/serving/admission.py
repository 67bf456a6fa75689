"""How a replica decides that the head of its waiting queue fits: the KV admission strategies
(`engine.admission`, TensorRT-LLM's `CapacitySchedulerPolicy` names).

Chosen once per replica (`admission_for`). Every strategy first asks the KV budget whether
the request's prefill fits beside what the running requests hold one step ahead
(serving/kv_budget.py `fits`); where it does not and nothing runs, the request can never fit
and is dropped (`exceeds_kv_cache`), as vLLM rejects it; else it waits.

- `Admission`, max utilization (vLLM; TensorRT-LLM's MAX_UTILIZATION): that is all; when the
  cache runs out later, the newest running request is preempted by recompute
  (serving/batch_formation.py `relieve_kv_pressure`).
- `GuaranteedNoEvict` (TensorRT-LLM's default): the request's prompt and every output token
  still to come must also fit beside the whole lengths the running requests have reserved,
  so the cache never runs out and nothing is preempted.
"""

from __future__ import annotations

from gpuscale.serving.kv_budget import KvBudget


class Admission:
    """Max utilization: admit while the KV in use fits (vLLM's only policy)."""

    __slots__ = ("kv", "output_tokens", "prompt_tokens")

    def __init__(self, kv: KvBudget, prompt_tokens: list[int], output_tokens: list[int]) -> None:
        # The replica's own KV budget (a fork maps it to the twin's, core/fork.py) and the
        # request table's token columns (`RequestTable.prompt_tokens_list`, ...).
        self.kv = kv
        self.prompt_tokens = prompt_tokens
        self.output_tokens = output_tokens

    def fork_blank(self) -> Admission:
        """A strategy for a fork of the replica to fill (core/fork.py)."""
        return type(self)(self.kv, self.prompt_tokens, self.output_tokens)

    def admits(self, rid: int, need_tokens: int, g: int, num_running: int) -> bool:
        """Whether request `rid`, whose prefill holds `need_tokens`, fits beside the
        `num_running` running requests at the replica's next step (count `g` + 1)."""
        return self.kv.fits(g + 1, need_tokens, num_running + 1)

    def reserve(self, rid: int) -> None:
        """`rid` was admitted."""

    def release(self, rid: int) -> None:
        """`rid` stopped running here (finished, preempted, handed off)."""


class GuaranteedNoEvict(Admission):
    """Guaranteed no evict: admit only what can run to its last token without a preemption.
    The reservation is the request's own output length: exact where the client sets
    max_tokens to it (docs/serving.md)."""

    __slots__ = ()

    def admits(self, rid: int, need_tokens: int, g: int, num_running: int) -> bool:
        kv = self.kv
        if not kv.fits(g + 1, need_tokens, num_running + 1):
            return False
        return kv.fits_reserved(self.prompt_tokens[rid] + self.output_tokens[rid],
                                num_running + 1)

    def reserve(self, rid: int) -> None:
        self.kv.reserve_whole(self.prompt_tokens[rid] + self.output_tokens[rid])

    def release(self, rid: int) -> None:
        self.kv.release_whole(self.prompt_tokens[rid] + self.output_tokens[rid])


def admission_for(name: str, kv: KvBudget, prompt_tokens: list[int],
                  output_tokens: list[int]) -> Admission:
    """The strategy named by `engine.admission` ("max_utilization", "guaranteed_no_evict")."""
    if name == "max_utilization":
        return Admission(kv, prompt_tokens, output_tokens)
    if name == "guaranteed_no_evict":
        return GuaranteedNoEvict(kv, prompt_tokens, output_tokens)
    # The scenario and the calibration rows validate the name; this is a caller's slip.
    raise ValueError(f"admission {name!r}: expected max_utilization or guaranteed_no_evict")
