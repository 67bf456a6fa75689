"""Rules on placing multi-pod GPU workloads: gangs, PodGroups, node and NVLink sizes."""
