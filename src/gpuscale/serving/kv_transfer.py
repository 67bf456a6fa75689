"""Prefill/decode disaggregation: ship a prefilled request's KV cache to the decode pool.

The transfer takes prompt tokens x KV bytes per token over the prefill replica's links
(`kv_transfer_gbps_per_gpu` per GPU, tp GPUs in parallel); the first token reaches the client
when the KV has arrived, so that instant is the request's TTFT. The TTFTs observed here join
the replicas' own observations at the next scrape (`take_ttft_observations`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from gpuscale.core import Priority, Simulation
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.serving.requests_table import RequestTable

Deliver = Callable[..., None]  # the decode pool's route(rid, now_s, kv_ready=True)


class KvTransfer:
    def __init__(self, sim: Simulation, table: RequestTable, prefill_hw: ReplicaHardware,
                 gbps_per_gpu: float, deliver: Deliver) -> None:
        self.sim = sim
        self.table = table
        self.deliver = deliver
        # Seconds per prompt token, computed once: `on_prefilled` runs for every request.
        self.s_per_token = prefill_hw.kv_bytes_per_token / (gbps_per_gpu * 1e9 * prefill_hw.tp)
        self.ttft_observations: list[float] = []

    def on_prefilled(self, rid: int, now_s: float) -> None:
        """A prefill replica is done: ship the KV cache, then the decode pool takes over."""
        transfer_s = self.table.prompt_tokens[rid] * self.s_per_token
        self.sim.schedule(now_s + transfer_s, Priority.ENGINE, self._arrived, rid)

    def take_ttft_observations(self) -> list[float]:
        """The TTFTs observed since the last call (each metrics scrape drains them)."""
        taken = self.ttft_observations
        self.ttft_observations = []
        return taken

    def _arrived(self, rid: int) -> None:
        now_s = self.sim.now_s
        table = self.table
        if math.isnan(table.first_token_s[rid]):  # no first token yet: it is out now
            table.first_token_s[rid] = now_s
            self.ttft_observations.append(now_s - table.arrival_s[rid])
        self.deliver(rid, now_s, kv_ready=True)
