"""Reading django-celery-beat's ``PeriodicTask`` rows for the import, whatever they hold.

The rows are data any celery-beat admin user edits, and some values no model
instance can hold: a crontab time zone such as ``'Mars/Olympus'`` (the model's
time zone field raises while loading it), a timestamp of ``'-infinity'`` or
beyond year 9999 (Python's ``datetime`` cannot hold it). Loading rows through
the models would fail the whole import on such a row, naming none. So the rows
are read with one plain query per page (columns named by the models' own
metadata, the statement composed in :mod:`awa_django.store.celery_beat_source`), in primary-key order, ``page_size`` rows at a time: a zone stays
text (validated per row, like any schedule's), and a timestamp is read as its
text and its epoch, so one that ``datetime`` cannot hold still says whether it
is in the past or the future (:class:`FarInstant`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db import connections

from ..store import celery_beat_source as source
from ..store.celery_beat_source import SourceColumn, SourceJoin, SourceShape

__all__ = ["FarInstant", "PeriodicTaskReader"]


@dataclass(frozen=True)
class FarInstant:
    """A stored timestamp ``datetime`` cannot hold: ``'-infinity'``, ``'infinity'``, year > 9999."""

    text: str
    future: bool

    def isoformat(self) -> str:
        return self.text


# (attribute, column) of each source read, per joined table; a timestamp
# column is read as text and epoch (see _instant).
_TASK = (
    "name", "task", "args", "kwargs", "queue", "exchange", "routing_key", "headers", "priority",
    "expires", "expire_seconds", "one_off", "start_time", "enabled", "last_run_at",
)  # fmt: skip
_TIMESTAMPS = frozenset({"expires", "start_time", "last_run_at", "clocked_time"})
_RELATED = {
    "crontab": ("minute", "hour", "day_of_month", "month_of_year", "day_of_week", "timezone"),
    "interval": ("every", "period"),
    "clocked": ("clocked_time",),
    "solar": ("event",),
}


def _instant(text: str | None, epoch: Any) -> datetime | FarInstant | None:
    """A timestamp read as (text, epoch seconds): a ``datetime``, or a :class:`FarInstant`."""
    if text is None:
        return None
    seconds = float(epoch)
    if not math.isinf(seconds):
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, ValueError, OSError):
            pass
    return FarInstant(text, seconds > 0)


class PeriodicTaskReader:
    """The ``PeriodicTask`` rows of database ``using``, page by page, as plain objects."""

    def __init__(self, model: Any, using: str = "default") -> None:
        self.using = using
        columns: list[SourceColumn] = [SourceColumn("p", model._meta.pk.column)]
        joins: list[SourceJoin] = []
        for attribute in _TASK:
            columns.append(_column(model, "p", attribute))
        for index, (relation, attributes) in enumerate(_RELATED.items()):
            alias = f"r{index}"
            target = model._meta.get_field(relation)
            related = target.related_model
            joins.append(SourceJoin(related._meta.db_table, alias, related._meta.pk.column, target.column))
            columns.append(SourceColumn(alias, related._meta.pk.column))
            columns.extend(_column(related, alias, attribute) for attribute in attributes)
        self._shape = SourceShape(model._meta.db_table, model._meta.pk.column, tuple(columns), tuple(joins))

    def count(self) -> int:
        with connections[self.using].cursor() as cursor:
            return source.count(cursor, self._shape)

    def pages(self, page_size: Callable[[], int]) -> Iterator[list[SimpleNamespace]]:
        """Every row, in primary-key order, one query per page of ``page_size()`` rows
        (asked before each page: the import adapts it to how long a batch takes)."""
        last: Any = None
        while True:
            size = page_size()
            with connections[self.using].cursor() as cursor:
                rows = source.page(cursor, self._shape, last, size)
            if not rows:
                return
            last = rows[-1][0]
            yield [self._source(row) for row in rows]
            if len(rows) < size:
                return

    @staticmethod
    def _source(row: tuple[Any, ...]) -> SimpleNamespace:
        """One row as the attributes a ``PeriodicTask`` has (related schedules as objects or None)."""
        values = iter(row[1:])
        source = SimpleNamespace()
        for attribute in _TASK:
            _read(source, attribute, values)
        for relation, attributes in _RELATED.items():
            related = SimpleNamespace()
            present = next(values) is not None
            for attribute in attributes:
                _read(related, attribute, values)
            setattr(source, relation, related if present else None)
        return source


def _read(target: SimpleNamespace, attribute: str, values: Iterator[Any]) -> None:
    if attribute in _TIMESTAMPS:
        text = next(values)
        setattr(target, attribute, _instant(text, next(values)))
    else:
        setattr(target, attribute, next(values))


def _column(model: Any, alias: str, attribute: str) -> SourceColumn:
    """How one attribute is read (NULL when this version has no such field)."""
    try:
        column: str | None = model._meta.get_field(attribute).column
    except FieldDoesNotExist:
        column = None
    if attribute in _TIMESTAMPS:
        return SourceColumn(alias, column, "timestamp")
    if attribute == "timezone":
        return SourceColumn(alias, column, "text")
    return SourceColumn(alias, column)
