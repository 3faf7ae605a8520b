"""Schedule rows and their jobs as model instances, for the operator views.

The CLI, the actions and the admin show ``CronJob`` and ``Job`` instances;
these are read here, by a named query (``schedule_rows_safe``) or the ORM.
``Any`` in this module: a queryset filter's values.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.db.models.fields.json import KT

from .. import contract
from ..models import CronJob, Job, QueueMeta
from .queries import query

__all__ = ["cron_jobs", "paused_queues", "safe_schedule_rows", "schedule_jobs"]


def safe_schedule_rows(using: str, name: str | None = None) -> list[CronJob]:
    """Row ``name`` (every row when None), by name; a timestamp no datetime can
    hold loads as None plus its text in ``<column>_text``."""
    return list(CronJob.objects.using(using).raw(query("schedule_rows_safe"), {"name": name}))


def cron_jobs(using: str, where: Q) -> QuerySet[CronJob]:
    """The schedule rows matching ``where``, by name."""
    return CronJob.objects.using(using).filter(where).order_by("name")


def paused_queues(using: str, queues: list[str]) -> set[str]:
    """Which of ``queues`` are paused."""
    if not queues:
        return set()
    return set(
        QueueMeta.objects.using(using)
        .filter(queue__in=queues, paused_at__isnull=False)
        .values_list("queue", flat=True)
    )


def schedule_jobs(using: str, name: str) -> QuerySet[Job]:
    """The jobs a schedule enqueued (fires and manual triggers), newest first, with
    the columns its fire list shows."""
    return (
        Job.objects.using(using)
        .alias(cron_key=KT("metadata__cron_name"))
        .filter(metadata__has_key=contract.CRON_NAME_KEY, cron_key=name)
        .order_by("-id")
        .only("id", "state", "metadata", "attempted_at", "finished_at", "attempt", "created_at")
    )
