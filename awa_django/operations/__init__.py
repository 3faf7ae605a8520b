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

This package's face is the public path; the verbs live in its modules, one per
family, loaded on first use (so the leader or the admin importing one module does
not load the rest): ``schedules``, ``owners`` (lifecycle), ``queues`` (queues and
jobs), ``runtime_schedules`` (``create_schedule`` and friends), ``history`` (the
slot history), ``declarations`` (rows against this code's declarations),
``celery_beat`` (the import from django-celery-beat) and ``common``
(``require_actor``, ``ActionResult``).
"""

from __future__ import annotations

from .. import lazy

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
# Where each public name lives.
_HOMES = {
    "ActionResult": "awa_django.operations.common",
    "Manifest": "awa_django.reconciliation.manifest",
    "QueueStatus": "awa_django.operations.queues",
    "adopt": "awa_django.operations.owners",
    "build_manifest": "awa_django.reconciliation.manifest",
    "cancel_cron_jobs": "awa_django.operations.queues",
    "cancel_job": "awa_django.operations.queues",
    "cancel_jobs": "awa_django.operations.queues",
    "get_schedule": "awa_django.operations.schedules",
    "is_queue_paused": "awa_django.operations.queues",
    "list_queues": "awa_django.operations.queues",
    "list_schedules": "awa_django.operations.schedules",
    "manifest_for": "awa_django.reconciliation.manifest",
    "pause": "awa_django.operations.schedules",
    "pause_queue": "awa_django.operations.queues",
    "prune_jobs": "awa_django.operations.queues",
    "remove": "awa_django.operations.schedules",
    "restore": "awa_django.operations.owners",
    "restore_owner": "awa_django.operations.owners",
    "resume": "awa_django.operations.schedules",
    "resume_queue": "awa_django.operations.queues",
    "retire": "awa_django.operations.owners",
    "retire_owner": "awa_django.operations.owners",
    "retry_job": "awa_django.operations.queues",
    "trigger": "awa_django.operations.schedules",
    "upcoming_fires": "awa_django.operations.schedules",
}


__getattr__ = lazy.forwarding(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
