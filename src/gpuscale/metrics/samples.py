"""What one scrape reads of a deployment: a `PodSample` a pod and the pool's `PoolScrape`.

`Fleet.replica_samples` (sim/fleet.py, compiled) makes them for every pod at every scrape and
the interpreted scrape (metrics/scrape.py) reads them, so they are compiled classes in the
same group (setup.py): a named tuple is made by calling its Python `__new__`, ~2,800
instructions a pod, ~1.2 % of the issue 16 loop (docs/hot-path.md); one of these is a
native allocation.
"""

from __future__ import annotations

from gpuscale._mypyc_hints import mypyc_attr


@mypyc_attr(acyclic=True)  # a name, flags and a dict of floats: nothing can point back
class PodSample:
    """One pod as a scrape found it; its `PodMetrics` is built from this when a controller
    first reads it (metrics/scrape.py)."""

    __slots__ = ("bound", "name", "ready", "values")

    def __init__(self, name: str, bound: bool, ready: bool, values: dict[str, float]) -> None:
        self.name = name
        self.bound = bound  # on a node, its GPUs held
        self.ready = ready  # its replica serves and takes requests
        self.values = values  # its series by name (metrics/store.py); none until exported


class PoolScrape:
    """One deployment's scrape: its pods in slot order, and what the scrape sums of them."""

    __slots__ = ("gpu_utils", "kv_usages", "num_busy", "pending", "pods", "running", "starting",
                 "waiting")

    def __init__(self, pods: list[PodSample], pending: int, starting: int, waiting: float,
                 running: float, kv_usages: list[float], gpu_utils: list[float],
                 num_busy: int) -> None:
        self.pods = pods
        self.pending = pending  # pods not on a node
        self.starting = starting  # pods on a node whose replica does not serve yet
        # Of the pods that serve: the sums of their waiting and running requests (integers
        # held in floats, so the sums are exact in any grouping), their KV usages and GPU
        # utilisations in pod order.
        self.waiting = waiting
        self.running = running
        self.kv_usages = kv_usages
        self.gpu_utils = gpu_utils
        self.num_busy = num_busy  # ready replicas executing a step or a decode stretch
