"""Pruning: finished jobs older than the retention are deleted, in small batches."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import connections

from ..conf import MAX_RETENTION, Kind, conf
from ..store import maintenance as store
from .service import EverySync

logger = logging.getLogger("awa_django.queues")

__all__ = ["BATCH", "Pruning", "prune_finished_jobs"]

# Jobs deleted per statement: short transactions, no long lock on a large table.
BATCH = 5000


def retention(older_than: float | None = None) -> timedelta:
    """``older_than`` seconds, else ``AWA_JOB_RETENTION``, as an age; ``ValueError``
    naming it when it is not a finite number from 0 to ``MAX_RETENTION``."""
    name, seconds = (
        ("older_than", older_than) if older_than is not None else ("AWA_JOB_RETENTION", conf.JOB_RETENTION)
    )
    # Kind.RETENTION is the range check E020 enforces on the setting; a larger
    # age would overflow the timedelta (or the timestamp now - age) instead.
    if not Kind.RETENTION.accepts(seconds):
        raise ValueError(
            f"{name} must be a finite number of seconds >= 0 and <= {MAX_RETENTION}, got {seconds!r}"
        )
    return timedelta(seconds=float(seconds))


def prune_finished_jobs(older_than: float | None = None, using: str = "default") -> int:
    """Delete the jobs finished longer ago than the retention; how many were."""
    age = retention(older_than)
    deleted = 0
    with connections[using].cursor() as cursor:
        while True:
            batch = store.prune_finished_jobs_batch(cursor, age, BATCH)
            deleted += batch
            if batch < BATCH:
                break
    if deleted:
        logger.info("pruned %d finished job(s)", deleted, extra={"event": "jobs.pruned", "count": deleted})
    return deleted


class Pruning(EverySync):
    """Deletes the jobs finished longer ago than ``AWA_JOB_RETENTION``."""

    name = "pruning"

    def run(self, using: str) -> None:
        prune_finished_jobs(using=using)
