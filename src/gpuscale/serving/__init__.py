"""The serving model: one replica = one continuous-batching engine like vLLM V1.

Belongs here: the roofline performance model (pure functions of numbers and frozen specs), KV
cache sizing, the replica engine that advances analytically from one batch change to the next,
and the router. Must not know about Kubernetes objects or autoscalers: it exports the signals a
real vLLM pod and DCGM exporter would, and the engine layer wires them to the rest.
"""
