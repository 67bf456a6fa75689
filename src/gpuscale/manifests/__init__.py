"""Plans and params -> Kubernetes YAML objects (plain dicts with stable key order).

Belongs here: pure renderers. Must not write files or talk to a cluster (only `cli` writes).
"""
