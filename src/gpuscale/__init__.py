"""gpuscale: simulate, plan and audit GPU autoscaling for LLM serving on Kubernetes.

Three layers (nodes, scheduling, replicas) over a continuous-batching serving model; see
docs/architecture.md. The package never writes to a Kubernetes cluster.
"""

from gpuscale import _hot_path

__version__ = "0.1.0"

# Before any hot module is imported: picks their sources over a stale or unwanted compiled
# build (GPUSCALE_PURE=1); see _hot_path.py.
_hot_path.install()

__all__ = ["SimulationResult", "__version__", "simulate"]


def __getattr__(name: str):
    # Lazy: `import gpuscale` must not pay for numpy, pydantic and the engine.
    # importlib, not `from gpuscale import api`: every module imports this package, and the
    # import graph (.importlinter) must not see each of them reach the top layer through it.
    if name in ("simulate", "SimulationResult"):
        import importlib

        return getattr(importlib.import_module("gpuscale.api"), name)
    raise AttributeError(f"module 'gpuscale' has no attribute {name!r}")
