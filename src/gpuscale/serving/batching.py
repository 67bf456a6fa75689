"""How a replica fills a step's token budget: the batching strategies (`engine.batching`).

Chosen once per replica (`batching_for`); its batch formation asks the strategy four things
when it plans a step (serving/batch_formation.py `form`, `admit`) instead of reading flags:

- the step's token budget, given the decoding sequences (`step_budget`);
- whether the decoding sequences run in the step (`decodes`);
- whether a prompt that does not fit what is left of the budget waits for a later step
  (`waits`), or how much of it this step computes (`chunk_tokens`).

A new policy (say, whole prompts with a budget below the longest prompt, refused or chunked)
is one more class here and one more name in `batching_for`.
"""

from __future__ import annotations


class Batching:
    """The default: chunked prefill (vLLM V1, Sarathi-Serve). Decodes and prefill chunks share
    each step's budget; a prompt longer than what is left is split across steps."""

    __slots__ = ("decodes", "max_num_batched_tokens")

    def __init__(self, max_num_batched_tokens: int) -> None:
        self.max_num_batched_tokens = max_num_batched_tokens
        self.decodes = True  # the decoding sequences run in every step

    def step_budget(self, num_decoding: int) -> int:
        """Prefill tokens a step may compute beside `num_decoding` decoding sequences (one
        token each)."""
        return self.max_num_batched_tokens - num_decoding

    def waits(self, prompt_tokens: int, budget: int, has_chunks: bool,
              num_decoding: int) -> bool:
        """Whether a prompt of `prompt_tokens` waits for a later step when `budget` tokens are
        left of this one (`has_chunks`: other prefills are in it already)."""
        return False

    def chunk_tokens(self, tokens_to_compute: int, budget: int) -> int:
        """How many of a prompt's `tokens_to_compute` this step computes."""
        return tokens_to_compute if tokens_to_compute < budget else budget


class WholePrompt(Batching):
    """TensorRT-LLM's in-flight batching with chunked context off (its default): decodes and
    prefills share a step, but a prompt is never split. One that does not fit what is left
    waits for the next step; one longer than the whole budget runs once nothing shares its
    step (the decodes beside it are done)."""

    __slots__ = ()

    def waits(self, prompt_tokens: int, budget: int, has_chunks: bool,
              num_decoding: int) -> bool:
        return prompt_tokens > budget and (has_chunks or num_decoding > 0)

    def chunk_tokens(self, tokens_to_compute: int, budget: int) -> int:
        return tokens_to_compute


class PrefillFirst(WholePrompt):
    """vLLM V0's default scheduler (Vidur's `vllm`): waiting prompts run whole in prefill-only
    steps with the whole budget; the decoding sequences wait for them. A prompt longer than
    the budget runs alone in its step."""

    __slots__ = ()

    def __init__(self, max_num_batched_tokens: int) -> None:
        super().__init__(max_num_batched_tokens)
        self.decodes = False

    def step_budget(self, num_decoding: int) -> int:
        return self.max_num_batched_tokens

    def waits(self, prompt_tokens: int, budget: int, has_chunks: bool,
              num_decoding: int) -> bool:
        return prompt_tokens > budget and has_chunks


def batching_for(name: str, max_num_batched_tokens: int) -> Batching:
    """The strategy named by `engine.batching` ("chunked", "prefill_first", "whole_prompt")."""
    if name == "chunked":
        return Batching(max_num_batched_tokens)
    if name == "prefill_first":
        return PrefillFirst(max_num_batched_tokens)
    if name == "whole_prompt":
        return WholePrompt(max_num_batched_tokens)
    # The scenario and the calibration rows validate the name; this is a caller's slip.
    raise ValueError(f"batching {name!r}: expected chunked, prefill_first or whole_prompt")
