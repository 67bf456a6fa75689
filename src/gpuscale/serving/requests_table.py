"""Per-request results in compact typed arrays, read and written one element at a time in the
hot path and viewed as numpy (no copy) at the end.

`array.array` stores 8 bytes per float and no Python object per element, so a 10-million-
request day costs ~0.5 GB here instead of ~2.5 GB with lists of floats, at a similar
per-element access cost (docs/benchmarks.md). The columns are annotated with their element
type: without it, a value read from one is `Any` to the compiled hot path (setup.py), and
every sum or comparison it enters runs as generic boxed Python arithmetic.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from typing import Final

import numpy as np

from gpuscale.workloads.base import Requests

# Final: the compiled hot path reads them as constants, not as module globals.
IN_FLIGHT: Final = 0
COMPLETED: Final = 1
DROPPED: Final = 2

NAN: Final = math.nan
# decode_g0 of a request that is not decoding: far below any real G0, so G0 + output never
# equals a finish step (a replica's heap entry for it is stale).
NOT_DECODING: Final = -(1 << 61)
# prefill_left of a request that is not prefilling (a prefill can have 0 tokens left to compute).
NOT_PREFILLING: Final = -1


class RequestTable:
    """Columns indexed by request id (= row in the arrival-sorted workload)."""

    __slots__ = (
        "arrival_s",
        "arrival_s_view",
        "decode_g0",
        "drop_reasons",
        "dropped",
        "dropped_view",
        "finish_s",
        "finish_s_view",
        "first_token_s",
        "first_token_s_view",
        "num_arrived",
        "num_completed",
        "num_dropped",
        "num_preemptions",
        "num_retries",
        "output_tokens",
        "output_tokens_list",
        "prefill_left",
        "prefix_block_tokens",
        "prefix_ids",
        "prefix_offsets",
        "prompt_tokens",
        "prompt_tokens_list",
        "recently_completed",
    )

    def __init__(self, requests: Requests) -> None:
        n = len(requests)
        self.arrival_s: array[float] = array("d", requests.arrival_s.astype(np.float64).tobytes())
        self.prompt_tokens: array[int] = array(
            "q", requests.prompt_tokens.astype(np.int64).tobytes())
        self.output_tokens: array[int] = array(
            "q", requests.output_tokens.astype(np.int64).tobytes())
        # The token columns again as lists, for the compiled hot path's reads (several per
        # request): indexing an array.array from compiled code boxes the index and the value,
        # up to two allocations a read, where a list read is a pointer load. Equal values share
        # one int object, so a list costs 8 bytes a request, as the array does.
        self.prompt_tokens_list: list[int] = shared_int_list(requests.prompt_tokens)
        self.output_tokens_list: list[int] = shared_int_list(requests.output_tokens)
        # The replica step count G0 at which each request's decode began, NOT_DECODING when
        # it is not decoding (serving/replica.py): a request decodes on one replica at a time,
        # so one column serves every replica, read by index where a dict per replica was
        # looked up (one int object shared by the whole list until set: 8 bytes a request).
        self.decode_g0: list[int] = [NOT_DECODING] * n
        # The prompt tokens each prefilling request still has to compute, NOT_PREFILLING when
        # it is not prefilling: like decode_g0, one column for every replica (a replica's
        # dict of them cost a boxed id and a hash insert, lookup and delete a request).
        self.prefill_left: list[int] = [NOT_PREFILLING] * n
        # Filled by repeating one value (a memcpy), not copied from a temporary: same bytes.
        self.first_token_s: array[float] = array("d", [NAN]) * n
        self.finish_s: array[float] = array("d", [NAN]) * n
        # 1 where the request was dropped. Its status (`columns().status`) is derived from
        # this and finish_s: a completion writes only its finish time, one typed store a
        # request fewer in the hot path (each boxes the request id to index the view).
        self.dropped: array[int] = array("b", [0]) * n
        self.num_preemptions: array[int] = array("i", [0]) * n
        self.num_retries: array[int] = array("i", [0]) * n
        # The hot path reads and writes the float and drop columns through memoryviews: an
        # array.array item store parses its value with PyArg_Parse (~2x the view's cost).
        # (cast, through bytes, to their own format: the item type the compiled code expects.)
        self.arrival_s_view: memoryview[float] = _view(self.arrival_s).cast("d")
        self.first_token_s_view: memoryview[float] = _view(self.first_token_s).cast("d")
        self.finish_s_view: memoryview[float] = _view(self.finish_s).cast("d")
        self.dropped_view: memoryview[int] = _view(self.dropped).cast("b")
        self.drop_reasons: dict[str, int] = {}
        self.num_arrived = 0
        self.num_completed = 0
        self.num_dropped = 0
        self.recently_completed: list[int] = []  # drained by each metrics scrape
        # Prompt block hashes (serving/prefix_cache.py), only for a trace that has them:
        # row rid is prefix_ids[prefix_offsets[rid]:prefix_offsets[rid + 1]].
        blocks = requests.prefix_blocks
        self.prefix_block_tokens = 0 if blocks is None else blocks.block_tokens
        self.prefix_ids: array[int] | None = None
        self.prefix_offsets: array[int] | None = None
        if blocks is not None:
            self.prefix_ids = array("q", blocks.ids.astype(np.int64).tobytes())
            self.prefix_offsets = array("q", blocks.offsets.astype(np.int64).tobytes())

    def __len__(self) -> int:
        return len(self.arrival_s)

    def drop(self, rid: int, now_s: float, reason: str) -> None:
        self.dropped_view[rid] = 1
        self.num_dropped += 1
        self.finish_s_view[rid] = now_s
        self.drop_reasons[reason] = self.drop_reasons.get(reason, 0) + 1

    def complete(self, rid: int, now_s: float) -> None:
        self.num_completed += 1
        self.finish_s_view[rid] = now_s

    def take_recently_completed(self) -> list[int]:
        """The requests completed since the last call, in completion order (each metrics
        scrape drains them)."""
        taken = self.recently_completed
        self.recently_completed = []
        return taken

    def columns(self) -> RequestColumns:
        """Numpy views of the columns (no copy; `status`, derived, is new); valid while this
        table lives."""
        finish_s = np.frombuffer(self.finish_s, dtype=np.float64)
        status = np.where(np.isnan(finish_s), np.int8(IN_FLIGHT), np.int8(COMPLETED))
        status[np.frombuffer(self.dropped, dtype=np.int8) != 0] = DROPPED
        return RequestColumns(
            arrival_s=np.frombuffer(self.arrival_s, dtype=np.float64),
            prompt_tokens=np.frombuffer(self.prompt_tokens, dtype=np.int64),
            output_tokens=np.frombuffer(self.output_tokens, dtype=np.int64),
            first_token_s=np.frombuffer(self.first_token_s, dtype=np.float64),
            finish_s=finish_s,
            status=status,
            num_preemptions=np.frombuffer(self.num_preemptions, dtype=np.int32),
            num_retries=np.frombuffer(self.num_retries, dtype=np.int32),
            num_arrived=self.num_arrived,
        )


def _view(column: array) -> memoryview:
    """A byte view of a column, to cast to its item format."""
    return memoryview(column).cast("B")


def shared_int_list(values: np.ndarray) -> list[int]:
    """`values.tolist()`, with one int object per distinct value where the values are small
    counts (token lengths): 8 bytes an element instead of ~36 on a 10-million-request day."""
    if len(values) == 0:
        return []
    low = int(values.min())
    high = int(values.max())
    if low < 0 or high > max(1 << 21, len(values)):
        plain: list[int] = values.tolist()
        return plain
    objects = np.array(range(high + 1), dtype=object)  # objects[k] is the int k
    shared: list[int] = objects[values].tolist()
    return shared


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
