"""Operator actions on queues and jobs (the service layer for ``awa queue`` /
``awa jobs`` and the admin).

Queue pause is enforced at dispatch (the worker's claim), never at enqueue:
cron fires into a paused queue still enqueue, and run once it resumes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, connections, transaction
from django.db.models import Q

from ..client.backend import AwaBackend
from ..client.compat import task_backends
from ..conf import MAX_RETENTION, retention_age
from ..db import timestamps
from ..db.guards import bound_transaction_waits
from ..exceptions import OperationRefused, ScheduleNotFound
from ..store import jobs, queues
from ..validation import queue_problem, text_problem
from .common import ActionResult, require_actor, require_schedule_name

logger = logging.getLogger("awa_django.queues")

# Jobs an operator may cancel: not yet running (a running attempt is owned by
# its worker; cancelling under it would race its completion).
CANCELLABLE = jobs.CANCELLABLE
FINISHED = jobs.FINISHED
# The oldest age prune_jobs takes (see conf.MAX_RETENTION).
MAX_PRUNE_AGE = timedelta(seconds=MAX_RETENTION)


# The job operations below validate their actor with the one validator too.
_actor = require_actor


@contextmanager
def _bounded(using: str) -> Iterator[Any]:
    """A cursor in a transaction whose waits are bounded: a job's row may be
    held by a worker or a session frozen inside its transaction."""
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        bound_transaction_waits(cursor)
        yield cursor


def _queue(queue: Any, *, stored: bool = False) -> str:
    """A queue name awa_jobs can hold, before any query (or ValueError naming it).

    ``stored``: any text PostgreSQL can hold, so that a pause written by raw
    SQL under an odd name (a control character) can still be resumed.
    """
    if stored:
        problem = (
            text_problem(queue) if isinstance(queue, str) else f"must be a string, not {type(queue).__name__}"
        )
    else:
        problem = queue_problem(queue)
    if problem:
        raise ValueError(f"queue {queue!r:.80} {problem}")
    return str(queue)


def _job_id(job_id: Any) -> int:
    """A job id is a whole number: ``True``, ``1.0`` or ``"12"`` is a caller's mistake."""
    if isinstance(job_id, bool) or not isinstance(job_id, int):
        raise ValueError(f"a job id must be a whole number, got {job_id!r:.80}")
    return job_id


def _job_ids(job_ids: Any) -> list[int]:
    # A string is iterable: "12" must not cancel jobs 1 and 2.
    if isinstance(job_ids, (str, bytes)) or not isinstance(job_ids, Iterable):
        raise ValueError(f"job ids must be a list of whole numbers, got {job_ids!r:.80}")
    return [_job_id(i) for i in job_ids]


@dataclass(frozen=True)
class QueueStatus:
    """A queue as operators see it."""

    queue: str
    paused_at: datetime | None
    paused_by: str | None
    counts: dict[str, int]
    # QUEUE_LIMITS as the claim enforces them: {"rate": n, "period": seconds, "concurrency": m}.
    limits: dict[str, int] = field(default_factory=dict)


def queue_limits(using: str = "default") -> dict[str, dict[str, int]]:
    """The ``QUEUE_LIMITS`` of the AwaBackends storing jobs in database ``using``
    (by backend alias order when two limit one queue)."""
    merged: dict[str, dict[str, int]] = {}
    for backend in task_backends.all():
        if isinstance(backend, AwaBackend) and backend.database == using:
            for queue, limits in backend.queue_limits.items():
                merged.setdefault(queue, limits)
    return merged


def list_queues(using: str = "default") -> list[QueueStatus]:
    """Every queue that has jobs, operator state or limits, with job counts by state."""
    with connections[using].cursor() as cursor:
        counts = queues.job_counts(cursor)
        meta = queues.queue_meta(cursor)
    limits = queue_limits(using)
    return [
        QueueStatus(
            queue=name,
            paused_at=meta[name].paused_at if name in meta else None,
            paused_by=meta[name].paused_by if name in meta else None,
            counts=counts.get(name, {}),
            limits=limits.get(name, {}),
        )
        for name in sorted(set(counts) | set(meta) | set(limits))
    ]


def is_queue_paused(queue: str, using: str = "default") -> bool:
    with connections[using].cursor() as cursor:
        return queues.paused(cursor, queue)


def pause_queue(queue: str, actor: str, using: str = "default") -> ActionResult:
    """Stop workers claiming from ``queue``; the result is false if it was already paused."""
    queue = _queue(queue)
    actor = require_actor(actor)
    with transaction.atomic(using=using):
        with connections[using].cursor() as cursor:
            bound_transaction_waits(cursor)
            meta = queues.lock_meta(cursor, queue)
            if meta.paused_at is not None:
                return ActionResult(
                    "pause_queue", [], name=queue, detail=f"already paused by {meta.paused_by}"
                )
            queues.pause(cursor, queue, actor)
    logger.info(
        "queue %s paused by %s", queue, actor, extra={"event": "queue.paused", "queue": queue, "actor": actor}
    )
    return ActionResult("pause_queue", [queue], name=queue)


def resume_queue(queue: str, actor: str, using: str = "default") -> ActionResult:
    """Let workers claim from ``queue`` again; the result is false if it was not paused."""
    queue = _queue(queue, stored=True)
    actor = require_actor(actor)
    with transaction.atomic(using=using):
        with connections[using].cursor() as cursor:
            bound_transaction_waits(cursor)  # a frozen pause may hold the row
            changed = queues.resume(cursor, queue)
    if not changed:
        return ActionResult("resume_queue", [], name=queue, detail="not paused")
    logger.info(
        "queue %s resumed by %s",
        queue,
        actor,
        extra={"event": "queue.resumed", "queue": queue, "actor": actor},
    )
    return ActionResult("resume_queue", [queue], name=queue)


def cancel_cron_jobs(cron_name: str, actor: str, using: str = "default") -> list[int]:
    """Cancel every not-yet-running job of schedule ``cron_name``; return their ids.

    Running attempts are left alone (ADR-007: there is no canonical answer to
    "kill running work too?"). Pause the schedule first to stop new fires.
    """
    actor = _actor(actor)
    try:
        cron_name = require_schedule_name(cron_name, "cancel_cron_jobs")
    except ScheduleNotFound:
        return []  # no job can carry a name jsonb cannot hold
    with _bounded(using) as cursor:
        ids = jobs.cancel(cursor, actor, cron_name=cron_name)
    logger.info(
        "%d job(s) of schedule %s cancelled by %s",
        len(ids),
        cron_name,
        actor,
        extra={"event": "jobs.cancelled", "schedule": cron_name, "actor": actor},
    )
    return ids


def _refuse_impossible_timestamps(exc: IntegrityError, job_id: int, using: str) -> None:
    """Raise :class:`OperationRefused` when ``exc`` is awa_jobs_timestamps_check
    refusing to make job ``job_id`` unfinished again (a timestamp no datetime holds,
    stored before the check or by raw SQL: a retry rewrites only ``run_at``)."""
    if (
        getattr(getattr(exc.__cause__, "diag", None), "constraint_name", None)
        != timestamps.JOB_TIMESTAMPS_CHECK
    ):
        return
    with connections[using].cursor() as cursor:
        why = jobs.invalid_timestamps(cursor, job_id) or "?"
    raise OperationRefused(
        f"job {job_id} cannot be retried: it holds a timestamp no job can have ({why}); "
        "correct or delete the row"
    ) from exc


def retry_job(job_id: int, actor: str, using: str = "default") -> bool:
    """Make a failed or cancelled job available again (one more attempt); False if
    it does not exist or is not failed or cancelled. Raises
    :class:`~awa_django.exceptions.OperationRefused` (naming the holder) while
    another unfinished job holds its unique key."""
    job_id = _job_id(job_id)
    actor = _actor(actor)
    try:
        with _bounded(using) as cursor:
            changed = jobs.retry(cursor, job_id)
            holder = None if changed else jobs.key_holder(cursor, job_id)
    except IntegrityError as exc:  # a holder committed between the check and the write
        _refuse_impossible_timestamps(exc, job_id, using)
        with _bounded(using) as cursor:
            holder = jobs.key_holder(cursor, job_id)
        if holder is None:  # not the unique key after all (a constraint added by hand)
            raise
        changed = False
    if holder is not None:
        raise OperationRefused(
            f"job {job_id} cannot be retried: job {holder[0]} holds its unique key {holder[1]!r} "
            "and has not finished"
        )
    if changed:
        logger.info(
            "job %s retried by %s",
            job_id,
            actor,
            extra={"event": "job.retried", "job_id": job_id, "actor": actor},
        )
    return bool(changed)


def prune_jobs(older_than: float | None = None, using: str = "default", *, dry_run: bool = False) -> int:
    """Delete finished jobs whose ``finished_at`` is older than the retention.

    ``older_than`` (seconds) overrides ``AWA_JOB_RETENTION`` and must be a
    finite number from 0 to :data:`MAX_PRUNE_AGE`. With ``dry_run`` nothing is
    deleted and the number of jobs that would be is returned.
    """
    age = retention_age(older_than)
    with connections[using].cursor() as cursor:
        if dry_run:
            return jobs.count_prunable(cursor, age)
        deleted = jobs.prune_all(cursor, age)
    if deleted:
        logger.info("pruned %d finished job(s)", deleted, extra={"event": "jobs.pruned", "count": deleted})
    return deleted


def job_filter(state: str | None = None, queue: str | None = None, cron: str | None = None) -> Q:
    """A ``Q`` for listing jobs by state, queue and schedule name."""
    q = Q()
    if state:
        q &= Q(state=state)
    if queue:
        q &= Q(queue=queue)
    if cron:
        q &= Q(metadata__cron_name=cron)
    return q


def cancel_jobs(job_ids: list[int], actor: str, using: str = "default") -> list[int]:
    """Cancel the given jobs that are not yet running; return the ids cancelled.

    The per-job form of :func:`cancel_cron_jobs` (the admin's "Cancel" action):
    running, finished and missing jobs are left alone and not returned.
    """
    job_ids = _job_ids(job_ids)
    actor = _actor(actor)
    with _bounded(using) as cursor:
        ids = jobs.cancel(cursor, actor, ids=job_ids)
    if ids:
        logger.info(
            "%d job(s) cancelled by %s",
            len(ids),
            actor,
            extra={"event": "jobs.cancelled", "job_ids": ids, "actor": actor},
        )
    return ids


def cancel_job(job_id: int, actor: str, using: str = "default") -> None:
    """Cancel one job that is not running yet; raise ``OperationRefused`` otherwise.

    A running attempt belongs to its worker (cancelling under it would race its
    completion); ``AWA_TASK_TIMEOUT`` bounds how long it can run.
    """
    if cancel_jobs([_job_id(job_id)], actor, using=using):
        return
    with connections[using].cursor() as cursor:
        found = jobs.state(cursor, job_id)
    if found is None:
        raise OperationRefused(f"job {job_id} does not exist")
    raise OperationRefused(f"job {job_id} is {found}; only jobs not yet running can be cancelled")
