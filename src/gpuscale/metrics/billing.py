"""What the nodes of a run cost: GPU-seconds and dollars billed, deleted nodes included.

The one place billing is summed; `simulate` (the series' `cost_usd`, the summary's `gpu_hours`
and `cost_usd`) and `schedule` (`gpu_hours_billed`, `usd_billed`) both read it. A node bills
from its launch request to its deletion (`Node.billed_s`: clouds bill a booting VM).
"""

from __future__ import annotations

from gpuscale.cluster.objects import Node
from gpuscale.cluster.state import ClusterState
from gpuscale.units import SECONDS_PER_HOUR


def all_nodes(cluster: ClusterState) -> list[Node]:
    """Every node the run ever had: live ones, then deleted ones (they were billed too)."""
    seen: dict[int, Node] = {id(n): n for n in cluster.nodes.values()}
    for node in cluster.gone_nodes:
        seen.setdefault(id(node), node)
    return list(seen.values())


def gpu_s(cluster: ClusterState, now_s: float) -> float:
    """GPU-seconds billed up to `now_s`."""
    return sum(n.billed_s(now_s) * n.num_gpus for n in all_nodes(cluster))


def gpu_s_until(cluster: ClusterState, until_s: float, now_s: float) -> float:
    """GPU-seconds billed before `until_s` in a run that is now at `now_s` (>= until_s): the
    traffic's window of a run whose drain continues after it (a node deleted in the drain
    bills up to `until_s` here, one launched in it bills nothing)."""
    return sum(max(0.0, min(until_s, now_s if n.deleted_s is None else n.deleted_s)
                   - n.created_s) * n.num_gpus for n in all_nodes(cluster))


def cost_usd_until(cluster: ClusterState, until_s: float, now_s: float) -> float:
    """Dollars billed before `until_s` (the window `gpu_s_until` bills), at each node's price."""
    return sum(max(0.0, min(until_s, now_s if n.deleted_s is None else n.deleted_s)
                   - n.created_s) * n.instance_type.price_usd_per_hour(n.capacity_type)
               for n in all_nodes(cluster)) / SECONDS_PER_HOUR


def cost_usd(cluster: ClusterState, now_s: float) -> float:
    """Dollars billed up to `now_s` at each node's own price (spot or on-demand).

    Every scrape asks (the series' `cost_usd`), so `Node.billed_s` and `price_usd_per_hour`
    are written out here, the same operations on the same values in the same order; with no
    deleted node, the live ones are every node (each is keyed by its own name once)."""
    nodes = all_nodes(cluster) if cluster.gone_nodes else cluster.nodes.values()
    return sum([max(0.0, (now_s if n.deleted_s is None else n.deleted_s) - n.created_s)
                * n.instance_type.price_usd_per_hour(n.capacity_type) for n in nodes]) \
        / SECONDS_PER_HOUR
