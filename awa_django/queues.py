"""Deprecated path of queue pause and the job verbs; import them from :mod:`awa_django.operations`.

Kept for one release: each name still resolves, to the very object of its new
path, and warns (``DeprecationWarning``) where it is imported. Removed in the
next release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import lazy

if TYPE_CHECKING:
    # The code's home, for type checkers; at run time each name loads on first use.
    from awa_django.operations.queues import (
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
_MOVED_TO = dict.fromkeys(__all__, "awa_django.operations")


__getattr__ = lazy.deprecated(__name__, _MOVED_TO)
