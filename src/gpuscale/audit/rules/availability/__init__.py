"""Rules on keeping serving replicas available: readiness and disruption budgets."""
