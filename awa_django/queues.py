"""Public path of queue pause and the job verbs, as the documentation names it.

The code lives in :mod:`awa_django.actions.queues`; this module only re-exports it.
"""

from .actions.queues import (
    QueueStatus,
    cancel_cron_jobs,
    cancel_job,
    cancel_jobs,
    is_queue_paused,
    list_queues,
    pause_queue,
    prune_jobs,
    resume_queue,
    retry_job,
)

__all__ = [
    "QueueStatus",
    "cancel_cron_jobs",
    "cancel_job",
    "cancel_jobs",
    "is_queue_paused",
    "list_queues",
    "pause_queue",
    "prune_jobs",
    "resume_queue",
    "retry_job",
]
