"""Topology-aware placement order: which nodes a gang is tried on, and in what order.

KAI (layer2-scheduling.md 2.4): a Topology lists node-label levels coarse -> fine. A required
level keeps all pods of a gang inside one domain of that level; a preferred level is tried
first and the search falls back to coarser levels. Domains that cannot hold the whole gang are
skipped; among the rest the one with the least free capacity comes first (bin-pack), and inside
it nodes of the preferred sub-domain with the most free capacity come first (keep pods close).
"""

from __future__ import annotations

from collections import defaultdict

from gpuscale.cluster.groups import TopologyConstraint
from gpuscale.scheduling.snapshot import NodeFree

Attempt = tuple[list[NodeFree], dict[str, int]]  # nodes, node name -> preferred-domain rank


def _domains(nodes: list[NodeFree], level: str) -> dict[str, list[NodeFree]]:
    out: dict[str, list[NodeFree]] = defaultdict(list)
    for nf in nodes:
        value = nf.label(level)
        if value:  # a node without the label belongs to no domain of that level
            out[value].append(nf)
    return out


def _rank_by_subdomain(nodes: list[NodeFree], level: str) -> dict[str, int]:
    """Rank 0 for nodes in the sub-domain with the most free GPUs, then 1, ..."""
    if not level:
        return {nf.name: 0 for nf in nodes}
    doms = _domains(nodes, level)
    order = sorted(doms, key=lambda d: (-sum(n.gpus for n in doms[d]), d))
    rank = {nf.name: len(order) for nf in nodes}
    for i, dom in enumerate(order):
        for nf in doms[dom]:
            rank[nf.name] = i
    return rank


def _fitting_domains(nodes: list[NodeFree], level: str, need_gpus: int) -> list[list[NodeFree]]:
    doms = _domains(nodes, level)
    fit = [(sum(n.gpus for n in ns), d, ns) for d, ns in doms.items()
           if sum(n.gpus for n in ns) >= need_gpus]
    return [ns for _free, _d, ns in sorted(fit, key=lambda t: (t[0], t[1]))]


def placement_attempts(nodes: list[NodeFree], constraint: TopologyConstraint,
                       levels: tuple[str, ...], need_gpus: int) -> list[Attempt]:
    """Node sets to try in order; the caller commits the first one that holds the gang."""
    required, preferred = constraint.required_level, constraint.preferred_level
    if not required and not preferred:
        return [(nodes, {nf.name: 0 for nf in nodes})]
    # levels from the preferred one up to the required one (or the top), fine -> coarse
    chain: list[str] = []
    if preferred:
        start = levels.index(preferred) if preferred in levels else len(levels) - 1
        stop = levels.index(required) if required in levels else -1
        chain = [levels[i] for i in range(start, stop, -1)]
    attempts: list[Attempt] = []
    outer = _fitting_domains(nodes, required, need_gpus) if required else [nodes]
    for scope in outer:
        for level in chain:
            for dom in _fitting_domains(scope, level, need_gpus):
                attempts.append((dom, _rank_by_subdomain(dom, preferred)))
        attempts.append((scope, _rank_by_subdomain(scope, preferred)))
    return attempts


def crossed_levels(node_labels: list[dict[str, str]], levels: tuple[str, ...]) -> list[str]:
    """Levels at which a placed gang spans more than one domain (labels of its nodes)."""
    return [lvl for lvl in levels if len({labels.get(lvl, "") for labels in node_labels}) > 1]
