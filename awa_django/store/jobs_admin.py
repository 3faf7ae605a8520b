"""What the admin's job list reads beside its own changelist queryset.

The changelist's annotations are named SQL expressions (``*_expression`` in
``store/sql/jobs/admin.sql``) handed to the admin as ORM expressions; the
count estimate and the filters' choices are small statements of their own.
"""

from __future__ import annotations

from django.db.models import DurationField, Q, TextField
from django.db.models.expressions import RawSQL

from ..db import timestamps
from ..models import Job
from .jobs import Cursor
from .queries import query

__all__ = [
    "duration",
    "newest_jobs",
    "errors_text",
    "estimated_count",
    "first_schedule_names",
    "known_queue_names",
    "last_error_class",
    "last_error_tail",
    "schedule_kinds",
]


def last_error_class(max_bytes: int) -> RawSQL:
    """The latest attempt's exception class (nothing read of errors over ``max_bytes``)."""
    return RawSQL(query("job_last_error_class_expression"), [max_bytes], output_field=TextField())


def last_error_tail(max_bytes: int, chars: int) -> RawSQL:
    """The last ``chars`` characters of the latest attempt's traceback."""
    return RawSQL(query("job_last_error_tail_expression"), [max_bytes, chars], output_field=TextField())


def errors_text(max_bytes: int, chars: int, entries: int) -> RawSQL:
    """What the search reads of the latest ``entries`` errors of a job."""
    params = [max_bytes, chars, entries]
    return RawSQL(query("job_errors_text_expression"), params, output_field=TextField())


def duration() -> RawSQL:
    """How long the latest attempt ran, or has been running (NULL when it cannot say)."""
    return RawSQL(query("job_duration_expression"), [], output_field=DurationField())


def estimated_count(cursor: Cursor) -> int | None:
    """``awa_jobs``' estimated row count (autovacuum, ANALYZE), None when unknown."""
    cursor.execute(query("jobs_estimated_count"))
    row = cursor.fetchone()
    return None if row is None else int(row[0])


def known_queue_names(cursor: Cursor) -> set[str]:
    """Queues operated on or scheduled (read without scanning jobs)."""
    cursor.execute(query("queue_names_known"))
    return {row[0] for row in cursor.fetchall()}


def schedule_kinds(cursor: Cursor) -> set[str]:
    """The task kinds of the schedules."""
    cursor.execute(query("schedule_kinds"))
    return {row[0] for row in cursor.fetchall()}


def first_schedule_names(cursor: Cursor, limit: int) -> set[str]:
    """The first ``limit`` schedule names in name order."""
    cursor.execute(query("first_schedule_names"), {"limit": limit})
    return {row[0] for row in cursor.fetchall()}


def newest_jobs(matching: Q, limit: int) -> list[Job]:
    """The newest ``limit`` jobs ``matching`` (``awa jobs list``); a row holding a
    timestamp no datetime can hold (raw SQL, or stored before the check of
    migration 0024) comes back flagged instead of failing the listing."""
    safe = timestamps.with_safe_timestamps(Job.objects.filter(matching))
    return list(safe.order_by("-id")[:limit])
