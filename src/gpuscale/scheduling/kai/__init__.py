"""KAI-style gang scheduler: PodGroups, hierarchical queues, fair share, reclaim/preempt.

Belongs here: the actions of one KAI scheduling cycle. Must not know about node provisioning
(pods it cannot place are reported through the scheduler's `on_unschedulable`).
"""

from gpuscale.scheduling.kai.params import KaiParams, QueueParams
from gpuscale.scheduling.kai.scheduler import KaiScheduler

__all__ = ["KaiParams", "KaiScheduler", "QueueParams"]
