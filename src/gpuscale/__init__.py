"""gpuscale: simulate, plan and audit GPU autoscaling for LLM serving on Kubernetes.

Three layers (nodes, scheduling, replicas) over a continuous-batching serving model; see
docs/architecture.md. The package never writes to a Kubernetes cluster.
"""

__version__ = "0.1.0"
