"""Rules on KAI Scheduler queues and the preemption they allow."""
