"""Read what users deploy and translate it into gpuscale's own inputs.

Belongs here: user catalog files (`--catalog`, GPUSCALE_CATALOG), Kubernetes manifests
(vLLM Deployment/StatefulSet/LeaderWorkerSet, HPA, KEDA ScaledObject, Karpenter NodePool and
EC2NodeClass, KAI queues, PDBs) and a trace file turned into a `Scenario`, the PromQL of their
scalers parsed into the simulator's metric and aggregation, and the `resolved` summary of what
a run simulated. The simulator is reused unchanged: nothing here runs a simulation.
Must not write files (only `cli` does) nor talk to a cluster.
"""
