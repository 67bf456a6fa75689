"""Rules on GPU node provisioning: Karpenter NodePools, EC2NodeClasses, Cluster Autoscaler."""
