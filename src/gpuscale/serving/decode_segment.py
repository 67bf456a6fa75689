"""A stretch of pure decode as a line in the step index: step k takes a + b x k.

With n sequences each step adds n tokens to the cache, so the KV read grows by n x kv_bytes per
step; every other term depends on n only. The engine advances such a stretch in closed form
(docs/serving.md, "The engine, batch change to batch change").
"""

from __future__ import annotations

import math

from gpuscale.serving.hardware import ReplicaHardware
from gpuscale.serving.kernels import eager_launch_floor_s, host_time_s
from gpuscale.serving.step_time import step_time_s


class DecodeSegment:
    """Step time of a pure-decode stretch as a line in the step index k: a + b x k.

    With n sequences, each step adds n tokens to the cache, so the KV read grows by
    n x kv_bytes per step; every other term depends on n only and stays constant.
    """

    __slots__ = ("first_step_s", "slope_s")  # a plain slotted class: built on the hot path

    def __init__(self, first_step_s: float, slope_s: float) -> None:
        self.first_step_s = first_step_s
        self.slope_s = slope_s

    def duration_s(self, num_steps: int) -> float:
        """Time of steps 0..num_steps-1: K a + b K (K-1) / 2."""
        return segment_duration_s(self.first_step_s, self.slope_s, num_steps)

    def steps_within(self, elapsed_s: float) -> int:
        """Largest K with duration_s(K) <= elapsed_s."""
        return segment_steps_within(self.first_step_s, self.slope_s, elapsed_s)


# The stretch's line as functions of its two numbers, so the engine keeps them in its own
# fields instead of allocating a DecodeSegment per stretch (~250k a run).
def segment_duration_s(first_step_s: float, slope_s: float, num_steps: int) -> float:
    """Time of steps 0..num_steps-1 of a stretch: K a + b K (K-1) / 2."""
    return num_steps * first_step_s + slope_s * num_steps * (num_steps - 1) / 2.0


def segment_steps_within(first_step_s: float, slope_s: float, elapsed_s: float) -> int:
    """Largest K with segment_duration_s(K) <= elapsed_s (closed form, then a guard for
    rounding)."""
    if elapsed_s <= 0:
        return 0
    a, b = first_step_s, slope_s
    if b <= 1e-15:
        k = int(elapsed_s // a)
    else:
        half_b = b / 2.0
        lin = a - half_b
        k = int((-lin + math.sqrt(lin * lin + 4.0 * half_b * elapsed_s)) / (2.0 * half_b))
    while k > 0 and segment_duration_s(a, b, k) > elapsed_s:
        k -= 1
    while segment_duration_s(a, b, k + 1) <= elapsed_s:
        k += 1
    return k


def decode_segment(hw: ReplicaHardware, num_seqs: int, context_tokens: float) -> DecodeSegment:
    first = step_time_s(hw, decode_seqs=num_seqs, decode_context_tokens=context_tokens)
    return DecodeSegment(first, decode_slope_s(hw, num_seqs, context_tokens))


def decode_slope_s(hw: ReplicaHardware, num_seqs: int, context_tokens: float) -> float:
    """Growth of the step per step. While the eager launch floor binds, the GPU's KV growth is
    hidden behind it (slope 0 until the stretch ends: slightly optimistic at the crossing)."""
    if hw.pp > 1:  # the period is piecewise linear in the context: take its local slope
        return step_time_s(hw, decode_seqs=num_seqs, decode_context_tokens=context_tokens
                           + num_seqs) - step_time_s(hw, decode_seqs=num_seqs,
                                                     decode_context_tokens=context_tokens)
    floor = eager_launch_floor_s(hw)
    if floor:
        gpu = step_time_s(hw, decode_seqs=num_seqs, decode_context_tokens=context_tokens) \
            / hw.step_time_factor - host_time_s(hw, num_seqs)
        if gpu <= floor:
            return 0.0
    return hw.step_time_factor * num_seqs * hw.kv_bytes_per_token / hw.attention_kv_bytes_per_s
