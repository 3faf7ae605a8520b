"""Pruning: finished jobs older than the retention are deleted, in small batches."""

from __future__ import annotations

import logging

from django.db import connections

from ..conf import retention_age
from ..store import jobs
from .service import EverySync

logger = logging.getLogger("awa_django.queues")

__all__ = ["BATCH", "Pruning", "prune_finished_jobs"]

# Jobs deleted per statement (the store's batch).
BATCH = jobs.PRUNE_BATCH


def prune_finished_jobs(older_than: float | None = None, using: str = "default") -> int:
    """Delete the jobs finished longer ago than the retention; how many were."""
    age = retention_age(older_than)
    with connections[using].cursor() as cursor:
        deleted = jobs.prune_all(cursor, age, BATCH)
    if deleted:
        logger.info("pruned %d finished job(s)", deleted, extra={"event": "jobs.pruned", "count": deleted})
    return deleted


class Pruning(EverySync):
    """Deletes the jobs finished longer ago than ``AWA_JOB_RETENTION``."""

    name = "pruning"

    def run(self, using: str) -> None:
        prune_finished_jobs(using=using)
