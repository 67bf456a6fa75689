"""Workloads: request generators and trace readers, all returning columnar `Requests`.

Belongs here: arrival processes and token-length distributions, trace parsing. Must not know
about replicas, routing or Kubernetes.
"""
