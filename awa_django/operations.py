"""The operator verbs, shared by the admin, ``manage.py awa`` and your own code.

On schedules: :func:`list_schedules`, :func:`get_schedule`, :func:`upcoming_fires`,
:func:`pause`, :func:`resume`, :func:`trigger`, :func:`remove`. On owned schedules'
lifecycle: :func:`adopt`, :func:`retire`, :func:`restore`, :func:`retire_owner`,
:func:`restore_owner`. On queues and jobs: :func:`list_queues`,
:func:`is_queue_paused`, :func:`pause_queue`, :func:`resume_queue`,
:func:`cancel_job`, :func:`cancel_jobs`, :func:`cancel_cron_jobs`,
:func:`retry_job`, :func:`prune_jobs`. Verbs that change state return an
:class:`ActionResult`. :func:`manifest_for` gives the manifest of a set of
schedules (``awa cron plan --manifest``). Runtime schedules are created with
:func:`awa_django.create_schedule`.

The code lives in :mod:`awa_django.actions` and
:mod:`awa_django.reconciliation.manifest`; this module only re-exports it.
"""

from __future__ import annotations

from .actions.common import ActionResult
from .actions.owners import adopt, restore, restore_owner, retire, retire_owner
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
from .actions.schedules import (
    get_schedule,
    list_schedules,
    pause,
    remove,
    resume,
    trigger,
    upcoming_fires,
)
from .reconciliation.manifest import Manifest, build_manifest, manifest_for

__all__ = [
    "ActionResult",
    "Manifest",
    "QueueStatus",
    "adopt",
    "build_manifest",
    "cancel_cron_jobs",
    "cancel_job",
    "cancel_jobs",
    "get_schedule",
    "is_queue_paused",
    "list_queues",
    "list_schedules",
    "manifest_for",
    "pause",
    "pause_queue",
    "prune_jobs",
    "remove",
    "restore",
    "restore_owner",
    "resume",
    "resume_queue",
    "retire",
    "retire_owner",
    "retry_job",
    "trigger",
    "upcoming_fires",
]
