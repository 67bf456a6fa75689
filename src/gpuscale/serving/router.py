"""The router in front of the replicas: least outstanding requests by default.

Ties go to the replica that became ready first (list order), so routing is deterministic.
"""

from __future__ import annotations

from gpuscale.serving.prefix_router import PrefixAwareRouter
from gpuscale.serving.replica import Replica


def least_outstanding(replicas: list[Replica]) -> Replica:
    """Replica with the fewest waiting + running requests (vLLM production-stack's default)."""
    best = replicas[0]
    best_load = len(best.waiting) + len(best.running)
    for replica in replicas:
        load = len(replica.waiting) + len(replica.running)
        if load < best_load:
            best, best_load = replica, load
    return best


def round_robin_factory():
    counter = [0]

    def round_robin(replicas: list[Replica]) -> Replica:
        counter[0] += 1
        return replicas[counter[0] % len(replicas)]

    return round_robin


ROUTERS = {"least_outstanding": lambda: least_outstanding, "round_robin": round_robin_factory,
           "prefix_aware": PrefixAwareRouter}
