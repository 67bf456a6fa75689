"""`gpuscale diagnose`: why is a GPU pod Pending, and which autoscaling layer holds it.

Reads a `kubectl get nodes,pods,events,nodepools,nodeclaims,queues,podgroups -o json` dump (or
the same kinds from a cluster) and, for each Pending pod that requests `nvidia.com/gpu`, names
one cause with the evidence for it. Pure functions over loaded objects; no I/O here.
"""

from gpuscale.audit.diagnose.causes import Diagnosis, diagnose
from gpuscale.audit.diagnose.snapshot import Snapshot

__all__ = ["Diagnosis", "Snapshot", "diagnose"]
