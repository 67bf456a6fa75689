"""Replica start-ups: draw each cold start's components, with a per-node image cache.

A pod pulls the serving image unless its node already has it (`image_cached_on_warm_nodes`):
nodes of the warm floor have it from the start, and a node keeps it after its first pull.
Every start's components (seconds by name) are kept for the run summary's `cold_start_s`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from gpuscale.cluster.objects import Pod
from gpuscale.serving.cold_start import cold_start_components
from gpuscale.serving.performance import ReplicaHardware


class Startups:
    def __init__(self, hw: ReplicaHardware, cold: Any, rng: np.random.Generator) -> None:
        self.hw = hw
        self.cold = cold  # a scenario `ColdStart`
        self.rng = rng
        self.image_nodes: set[str] = set()
        self.starts: list[dict[str, float]] = []  # per replica start, seconds by component

    def add_warm_nodes(self, names: Iterable[str]) -> None:
        """Nodes that already hold the image (the warm floor at t=0)."""
        self.image_nodes.update(names)

    def cold_start_s(self, pod: Pod, *group: Pod) -> float:
        """One replica's start on the node(s) its pod(s) are bound to: a replica spanning
        nodes (its leader and `group` workers) starts on all of them at once, pulling the
        image if any of its nodes lacks it (each node's pull runs in parallel)."""
        names = [p.node_name or "" for p in (pod, *group)]
        pull = not (self.cold.image_cached_on_warm_nodes
                    and all(name in self.image_nodes for name in names))
        self.image_nodes.update(names)
        parts = cold_start_components(self.hw, self.cold, self.rng, pull_image=pull)
        self.starts.append(parts)
        return sum(parts.values())

    def mean_components_s(self) -> dict[str, float]:
        """Mean seconds per component over every start (a component a start lacks counts 0)."""
        names = sorted({k for parts in self.starts for k in parts})
        return {k: round(float(np.mean([p.get(k, 0.0) for p in self.starts])), 3)
                for k in names}
