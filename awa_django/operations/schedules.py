"""Operator actions on schedules: the one service layer.

The CLI (``manage.py awa cron ...``), the admin and tests all call these
functions; nothing else edits schedule rows on an operator's behalf. Every
action records who did it (``actor``) and logs a stable event.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import IntegrityError, connections, transaction
from django.db.models import Case, F, QuerySet, TextField, When
from django.db.models.functions import Cast
from django.db.models.query import ModelIterable

from .. import validation
from ..client.backend import announce_fires
from ..cron import search
from ..db.guards import bound_transaction_waits
from ..db.sessions import database_now
from ..declarations.runtime import RUNTIME_OWNER
from ..exceptions import OperationRefused, ScheduleNotFound
from ..models import CronJob
from ..store import schedule_views
from ..store import schedules as store
from ..store.job_rows import job_row
from .common import ActionResult, require_actor, require_schedule_name

logger = logging.getLogger("awa_django.operations")


# Timestamps a row written by raw SQL may hold beyond what a Python datetime
# can ('infinity', year 10000+, BC). Operator views load them as None plus
# ``<column>_text`` (the database's text), instead of failing for every row.
TIMESTAMP_COLUMNS = (
    "last_enqueued_at",
    "next_fire_at",
    "created_at",
    "updated_at",
    "paused_at",
    "retired_at",
    "parked_at",
)


# The range a Python datetime can hold, with a day's margin for time zones.
_SAFE_RANGE = (datetime(1, 1, 2, tzinfo=UTC), datetime(9999, 12, 30, tzinfo=UTC))


class _SafeTimestampIterable(ModelIterable):  # type: ignore[type-arg]
    """Rows of :func:`with_safe_timestamps`: each timestamp column is set from its
    safe annotation, so no deferred load (and no out-of-range value) is ever read."""

    def __iter__(self) -> Any:
        for obj in super().__iter__():
            for column in TIMESTAMP_COLUMNS:
                obj.__dict__[column] = obj.__dict__.pop(f"awa_safe_{column}")
                obj.__dict__[f"{column}_text"] = obj.__dict__.pop(f"awa_text_{column}")
            yield obj


def with_safe_timestamps(queryset: QuerySet[CronJob]) -> QuerySet[CronJob]:
    """``queryset`` with the :data:`TIMESTAMP_COLUMNS` loaded as by the query ``schedule_rows_safe``.

    The ORM form of the operator views' raw query, for the admin: filtering,
    ordering and pagination still work on the real columns, while a row whose
    timestamp no datetime can hold (``'infinity'``) loads as None plus its text
    instead of failing the whole page.
    """
    annotations: dict[str, Any] = {}
    for column in TIMESTAMP_COLUMNS:
        annotations[f"awa_safe_{column}"] = Case(When(**{f"{column}__range": _SAFE_RANGE}, then=F(column)))
        annotations[f"awa_text_{column}"] = Cast(column, TextField())
    safe = queryset.defer(*TIMESTAMP_COLUMNS).annotate(**annotations)
    safe._iterable_class = _SafeTimestampIterable
    return safe


def get_schedule(name: str, using: str = "default") -> CronJob:
    """The schedule row called ``name``, or :class:`ScheduleNotFound`."""
    name = require_schedule_name(name, "get_schedule")
    rows = schedule_views.safe_schedule_rows(using, name)
    if not rows:
        raise ScheduleNotFound(name)
    return rows[0]


def list_schedules(using: str = "default") -> list[CronJob]:
    """All schedule rows, by name."""
    return schedule_views.safe_schedule_rows(using)


# The most fires upcoming_fires computes: one at a time, in Python, so a huge
# count would hold the caller in a loop (the CLI's --next has the same bound).
MAX_UPCOMING = 1000


def upcoming_fires(schedule: CronJob, count: int = 5, after: datetime | None = None) -> list[datetime]:
    """The next ``count`` automatic fire times of ``schedule`` (UTC).

    Computed for paused rows too ("would fire at X if resumed"); empty for
    retired rows and for rows whose expression or zone is invalid. ``count``
    is a whole number from 0 to :data:`MAX_UPCOMING`.
    """
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_UPCOMING:
        raise ValueError(f"count must be a whole number from 0 to {MAX_UPCOMING}, got {count!r:.40}")
    if schedule.is_retired or schedule.is_parked:
        return []
    if schedule.every_seconds is None and validation.expression_problem(schedule.cron_expr or ""):
        return []
    if validation.timezone_problem(schedule.timezone) or schedule.created_at is None:
        return []
    try:
        expression = search.timing_of(
            schedule.cron_expr, schedule.every_seconds, schedule.anchor, schedule.created_at
        )
        zone = search.parse_timezone(schedule.timezone)
    except search.CronError:
        return []
    start = after or database_now(schedule._state.db or "default")
    fires: list[datetime] = []
    while len(fires) < count:
        nxt = search.next_fire(expression, zone, start)
        if nxt is None:
            break
        fires.append(nxt)
        start = nxt
    return fires


def pause(name: str, actor: str, using: str = "default") -> ActionResult:
    """Stop automatic fires of ``name``; ``last_enqueued_at`` is kept.

    Pausing a paused schedule changes nothing (the original ``paused_by`` and
    ``paused_at`` stay: the audit trail names who paused it first).
    """
    actor = require_actor(actor)
    name = require_schedule_name(name, "pause")
    with transaction.atomic(using=using):
        row = _lock(name, using)
        if row.retired:
            raise OperationRefused(f"schedule {name!r} is retired; restore it first")
        if row.paused:
            return ActionResult("pause", [], name=name, detail=f"already paused by {row.paused_by}")
        with connections[using].cursor() as cursor:
            store.pause(cursor, name, actor)
    logger.info(
        "schedule %s paused by %s",
        name,
        actor,
        extra={"event": "cron.paused", "schedule": name, "actor": actor},
    )
    return ActionResult("pause", [name], name=name)


def resume(name: str, actor: str, using: str = "default") -> ActionResult:
    """Resume automatic fires; the missed-fire policy decides what fires now."""
    actor = require_actor(actor)
    name = require_schedule_name(name, "resume")
    with transaction.atomic(using=using):
        row = _lock(name, using)
        if row.retired:
            raise OperationRefused(f"schedule {name!r} is retired; restore it first")
        if not row.paused:
            return ActionResult("resume", [], name=name, detail="not paused")
        with connections[using].cursor() as cursor:
            store.resume(cursor, name)
    logger.info(
        "schedule %s resumed by %s",
        name,
        actor,
        extra={"event": "cron.resumed", "schedule": name, "actor": actor},
    )
    return ActionResult("resume", [name], name=name)


def trigger(name: str, actor: str, using: str = "default") -> dict[str, Any]:
    """Enqueue one job for ``name`` now, even while paused; return the job row.

    A manual trigger does not move ``last_enqueued_at``: the automatic
    schedule is unaffected. Retired schedules are refused.
    """
    actor = require_actor(actor)
    name = require_schedule_name(name, "trigger")
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        bound_transaction_waits(cursor)  # FOR SHARE may wait on a frozen peer
        try:
            with transaction.atomic(using=using):
                columns, rows = store.trigger(cursor, name, actor)
        except IntegrityError as exc:
            if (
                getattr(getattr(exc.__cause__, "diag", None), "constraint_name", None)
                != "awa_jobs_unique_key"
            ):
                raise
            raise OperationRefused(
                f"schedule {name!r}: an unfinished job holds its unique_key; trigger it once that job finished"
            ) from None
        if not rows:
            row = get_schedule(name, using)  # raises ScheduleNotFound
            raise OperationRefused(f"schedule {row.name!r} is retired; restore it first")
        job = job_row(columns, rows[0])
        # Like automatic fires and Task.enqueue(): task_enqueued after commit.
        transaction.on_commit(lambda: announce_fires([job]), using=using)
    logger.info(
        "schedule %s triggered by %s (job %s)",
        name,
        actor,
        job["id"],
        extra={"event": "cron.triggered", "schedule": name, "actor": actor, "job_id": job["id"]},
    )
    return job


def remove(name: str, actor: str, using: str = "default") -> ActionResult:
    """Delete the schedule row. Jobs it already enqueued are not touched.

    A schedule still declared in code comes back at the next sync; remove it
    from ``cron.py``/settings first. Retired rows are tombstones and refuse.
    """
    actor = require_actor(actor)
    name = require_schedule_name(name, "remove")
    with transaction.atomic(using=using):
        row = _lock(name, using)
        if row.retired:
            raise OperationRefused(f"schedule {name!r} is retired; its tombstone is kept")
        if row.owner_id == RUNTIME_OWNER:
            raise OperationRefused(f"schedule {name!r} is a runtime schedule; delete it (awa cron delete)")
        if row.owner_id is not None:
            raise OperationRefused(
                f"schedule {name!r} is owned by {row.owner_id!r}; retire it instead of removing it"
            )
        with connections[using].cursor() as cursor:
            store.remove(cursor, name)
    logger.info(
        "schedule %s removed by %s",
        name,
        actor,
        extra={"event": "cron.removed", "schedule": name, "actor": actor},
    )
    return ActionResult("remove", [name], name=name)


@dataclass(frozen=True)
class _Locked:
    """The state of a locked row the actions decide on."""

    paused: bool
    paused_by: str | None
    retired: bool
    owner_id: str | None


def _lock(name: str, using: str) -> _Locked:
    """Lock the row and return its state (inside a transaction)."""
    with connections[using].cursor() as cursor:
        bound_transaction_waits(cursor)  # the row may be held by a frozen peer
        # Flags computed in SQL, no timestamp converted: a pause or retirement
        # no datetime can hold ('infinity' by raw SQL) must not stop an
        # operator from resuming or removing the row.
        row = store.lock_state(cursor, name)
    if row is None:
        raise ScheduleNotFound(name)
    return _Locked(*row)
