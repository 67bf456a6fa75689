"""Simulation core: one clock, one event heap, periodic controllers, named random streams.

Belongs here: time and ordering only. Must not import anything about Kubernetes or LLMs,
and never reads the wall clock (time arrives as `now_s`).
"""

from gpuscale.core.random_streams import RandomStreams, stable_hash
from gpuscale.core.simulation import Priority, Simulation

__all__ = ["Priority", "RandomStreams", "Simulation", "stable_hash"]
