"""What a running task can learn about the job that runs it.

The worker sets the current job for the duration of each task call::

    from awa_django.jobcontext import current_fire

    @task
    def nightly_report():
        fire = current_fire()          # None when not started by a schedule
        if fire is not None:
            build_report(for_time=fire.fire_at)
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from . import contract

# Public: what a task reads. ``running`` is the worker's, which sets the current job.
__all__ = ["CronFire", "JobInfo", "current_fire", "current_job"]


@dataclass(frozen=True, slots=True)
class JobInfo:
    """The job (one ``awa_jobs`` row) whose attempt is running."""

    id: int
    attempt: int
    max_attempts: int
    queue: str
    kind: str
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CronFire:
    """How a schedule started this job."""

    schedule: str
    fire_at: datetime | None  # the slot (UTC) for automatic fires; None when triggered manually
    triggered_manually: bool
    triggered_by: str | None


_current: contextvars.ContextVar[JobInfo | None] = contextvars.ContextVar("awa_current_job", default=None)


def current_job() -> JobInfo | None:
    """The running job, inside a task run by ``runtasks``; otherwise None."""
    return _current.get()


def current_fire() -> CronFire | None:
    """The schedule fire behind the running job, or None if it was not a cron fire."""
    job = _current.get()
    if job is None or contract.CRON_NAME_KEY not in job.metadata:
        return None
    meta = job.metadata
    fire_at = meta.get(contract.CRON_FIRE_AT_KEY)
    return CronFire(
        schedule=str(meta[contract.CRON_NAME_KEY]),
        fire_at=datetime.fromisoformat(fire_at) if isinstance(fire_at, str) else None,
        triggered_manually=bool(meta.get(contract.TRIGGERED_MANUALLY_KEY, False)),
        triggered_by=meta.get(contract.TRIGGERED_BY_KEY),
    )


@contextmanager
def running(job: JobInfo) -> Iterator[None]:
    """Make ``job`` the current job within the block (used by the worker's task threads, ``tasks.runner``)."""
    token = _current.set(job)
    try:
        yield
    finally:
        _current.reset(token)
