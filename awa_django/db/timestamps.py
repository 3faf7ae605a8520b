"""Timestamps a Python datetime cannot hold, read without failing the page.

A job row written by raw SQL (or stored before migration 0024's check) may hold
``'-infinity'``, a year before 1 or after 9999: psycopg fails to load such a
value, and with it every row of the query. :func:`with_safe_timestamps` reads
each timestamp column typed when a datetime holds it (the range of
``awa_jobs_timestamps_check`` and of enqueue's ``run_after``), else as None,
with the database's text beside it as ``<column>_text``; :func:`invalid` and
:func:`shown` say what a row loaded so holds.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import Case, F, QuerySet, TextField, When
from django.db.models.functions import Cast
from django.db.models.query import ModelIterable

__all__ = [
    "COUNT_CAP",
    "JOB_TIMESTAMPS",
    "JOB_TIMESTAMPS_CHECK",
    "SAFE_RANGE",
    "TIMESTAMP_HIGH",
    "TIMESTAMP_LOW",
    "invalid",
    "shown",
    "with_safe_timestamps",
]

# What a datetime holds, a day's margin each side for time zones.
SAFE_RANGE = (
    datetime.min.replace(tzinfo=UTC) + timedelta(days=1),
    datetime.max.replace(tzinfo=UTC) - timedelta(days=1),
)
# The check that keeps an unfinished job's timestamps in the range (migration 0024).
JOB_TIMESTAMPS_CHECK = "awa_jobs_timestamps_check"
# The same range as SQL literals.
TIMESTAMP_LOW = "0001-01-02 00:00:00+00"
TIMESTAMP_HIGH = "9999-12-30 23:59:59.999999+00"
JOB_TIMESTAMPS = ("run_at", "created_at", "attempted_at", "started_at", "heartbeat_at", "finished_at")
SAFE = "awa_safe_"
TEXT = "awa_text_"


class SafeTimestampIterable(ModelIterable):  # type: ignore[type-arg]
    """Rows of :func:`with_safe_timestamps`: each timestamp column is set from its
    safe annotation, so no deferred load (and no out-of-range value) is ever read."""

    def __iter__(self) -> Iterator[Any]:
        for obj in super().__iter__():
            for key in [k for k in obj.__dict__ if k.startswith(SAFE)]:
                column = key.removeprefix(SAFE)
                obj.__dict__[column] = obj.__dict__.pop(key)
                obj.__dict__[f"{column}_text"] = obj.__dict__.pop(f"{TEXT}{column}")
            yield obj


def with_safe_timestamps(queryset: QuerySet[Any], columns: Sequence[str] = JOB_TIMESTAMPS) -> QuerySet[Any]:
    """``queryset`` whose rows hold each of ``columns`` as a datetime, or None plus
    ``<column>_text`` when no datetime holds it. Filtering, ordering and
    pagination still work on the real columns."""
    annotations: dict[str, Any] = {}
    for column in columns:
        annotations[f"{SAFE}{column}"] = Case(When(**{f"{column}__range": SAFE_RANGE}, then=F(column)))
        annotations[f"{TEXT}{column}"] = Cast(column, TextField())
    safe: QuerySet[Any] = queryset.defer(*columns).annotate(**annotations)
    safe._iterable_class = SafeTimestampIterable
    return safe


def shown(obj: Any, column: str) -> str | None:
    """``"invalid timestamp: -infinity"`` when ``obj``'s ``column`` holds a value no
    datetime can (loaded by :func:`with_safe_timestamps`), else None."""
    if getattr(obj, column, None) is not None:
        return None
    text = getattr(obj, f"{column}_text", None)
    return None if text is None else f"invalid timestamp: {text}"


def invalid(obj: Any, columns: Sequence[str] = JOB_TIMESTAMPS) -> str | None:
    """``"run_at -infinity, created_at infinity"``: the columns of ``obj`` no datetime
    can hold, with their stored text; None when every one loaded."""
    found = [
        f"{column} {getattr(obj, f'{column}_text')}"
        for column in columns
        if getattr(obj, column, None) is None and getattr(obj, f"{column}_text", None) is not None
    ]
    return ", ".join(found) or None


# At most this many unfinished jobs out of the range are counted (only a
# database missing the check can hold one): see store.job_timestamps.
COUNT_CAP = 10_000
