"""Cluster Autoscaler expanders: pick one scale-up option among those that help.

`--expander` takes a chain; each expander keeps its best options and the next one breaks the
ties; whatever is left is picked at random (reference layer1-node-provisioning.md 2.2,
pkg/FAQ.md "What are Expanders?").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gpuscale.catalog import get_instance_type
from gpuscale.cluster.objects import Pod
from gpuscale.provisioning.cluster_autoscaler.params import NodeGroupParams
from gpuscale.provisioning.fit import capacity_of, sum_requests


@dataclass
class Option:
    """Scale `group` up by `node_count` nodes, which would host `pods`."""

    group: NodeGroupParams
    node_count: int
    pods: list[Pod]

    @property
    def price_usd_per_hour(self) -> float:
        return self.node_count * get_instance_type(self.group.instance_type).price_usd_per_hour(
            self.group.capacity_type)


def waste_score(option: Option) -> float:
    """Idle CPU fraction + idle memory fraction of the new nodes; GPUs are not part of the
    score (waste/waste.go)."""
    cap = capacity_of(get_instance_type(option.group.instance_type))
    used = sum_requests(option.pods)
    cpu = option.node_count * cap.cpu_milli
    mem = option.node_count * cap.memory_mib
    return (cpu - used.cpu_milli) / cpu + (mem - used.memory_mib) / mem


def _keep_best(options: list[Option], score) -> list[Option]:
    scores = [score(o) for o in options]
    best = min(scores)
    return [o for o, s in zip(options, scores, strict=True) if abs(s - best) <= 1e-9]


def _priority(options: list[Option], priorities: dict[int, list[str]]) -> list[Option]:
    for level in sorted(priorities, reverse=True):
        matched = [o for o in options
                   if any(re.search(rx, o.group.name) for rx in priorities[level])]
        if matched:
            return matched
    return []  # groups no priority matches are never chosen


def choose(options: list[Option], chain: Sequence[str], priorities: dict[int, list[str]],
           rng: np.random.Generator) -> Option | None:
    for name in chain:
        if name == "priority":  # also filters a lone option: unmatched groups never scale
            options = _priority(options, priorities)
        elif len(options) <= 1 or name == "random":
            continue
        elif name == "least-waste":
            options = _keep_best(options, waste_score)
        elif name == "price":
            options = _keep_best(options, lambda o: o.price_usd_per_hour / max(len(o.pods), 1))
        elif name == "most-pods":
            options = _keep_best(options, lambda o: -len(o.pods))
        elif name == "least-nodes":
            options = _keep_best(options, lambda o: o.node_count)
    if not options:
        return None
    return options[int(rng.integers(len(options)))]
