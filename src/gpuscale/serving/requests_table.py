"""Per-request results in flat lists (fast to update one at a time), turned into numpy at the end."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuscale.workloads.base import Requests

IN_FLIGHT = 0
COMPLETED = 1
DROPPED = 2

NAN = math.nan


class RequestTable:
    """Columns indexed by request id (= row in the arrival-sorted workload)."""

    __slots__ = ("arrival_s", "prompt_tokens", "output_tokens", "first_token_s", "finish_s",
                 "status", "num_preemptions", "num_retries", "drop_reasons", "num_arrived",
                 "num_completed", "num_dropped", "recently_completed")

    def __init__(self, requests: Requests) -> None:
        n = len(requests)
        self.arrival_s: list[float] = requests.arrival_s.tolist()
        self.prompt_tokens: list[int] = requests.prompt_tokens.tolist()
        self.output_tokens: list[int] = requests.output_tokens.tolist()
        self.first_token_s: list[float] = [NAN] * n
        self.finish_s: list[float] = [NAN] * n
        self.status: list[int] = [IN_FLIGHT] * n
        self.num_preemptions: list[int] = [0] * n
        self.num_retries: list[int] = [0] * n
        self.drop_reasons: dict[str, int] = {}
        self.num_arrived = 0
        self.num_completed = 0
        self.num_dropped = 0
        self.recently_completed: list[int] = []  # drained by each metrics scrape

    def __len__(self) -> int:
        return len(self.arrival_s)

    def drop(self, rid: int, now_s: float, reason: str) -> None:
        self.status[rid] = DROPPED
        self.num_dropped += 1
        self.finish_s[rid] = now_s
        self.drop_reasons[reason] = self.drop_reasons.get(reason, 0) + 1

    def complete(self, rid: int, now_s: float) -> None:
        self.status[rid] = COMPLETED
        self.num_completed += 1
        self.finish_s[rid] = now_s

    def columns(self) -> "RequestColumns":
        return RequestColumns(
            arrival_s=np.asarray(self.arrival_s),
            prompt_tokens=np.asarray(self.prompt_tokens, dtype=np.int64),
            output_tokens=np.asarray(self.output_tokens, dtype=np.int64),
            first_token_s=np.asarray(self.first_token_s),
            finish_s=np.asarray(self.finish_s),
            status=np.asarray(self.status, dtype=np.int8),
            num_preemptions=np.asarray(self.num_preemptions, dtype=np.int32),
            num_retries=np.asarray(self.num_retries, dtype=np.int32),
            num_arrived=self.num_arrived,
        )


@dataclass(frozen=True)
class RequestColumns:
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    status: np.ndarray
    num_preemptions: np.ndarray
    num_retries: np.ndarray
    num_arrived: int
