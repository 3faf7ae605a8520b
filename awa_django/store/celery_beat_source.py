"""Reads of django-celery-beat's ``PeriodicTask`` table, for an import of its rows.

Not an ``awa_*`` table, and not one shape: its table and column names come
from the installed django-celery-beat's models (a field a version lacks reads
as NULL). So these statements cannot be static text in a ``.sql`` file; they
are composed here from a :class:`SourceShape` with :mod:`psycopg.sql`, which
quotes every identifier. ``cursor`` is ``Any``: Django's cursor wrapper has no
shared stub type; a row's values are ``Any``, typed by their columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg import sql

__all__ = ["SourceColumn", "SourceJoin", "SourceShape", "count", "page"]


@dataclass(frozen=True)
class SourceColumn:
    """One select-list entry: ``alias.column`` read as is, as text, or (a
    timestamp) as its text and its epoch; NULL when ``column`` is None."""

    alias: str
    column: str | None
    form: str = "value"  # "value", "text" or "timestamp"


@dataclass(frozen=True)
class SourceJoin:
    """A related table joined to the task row: ``LEFT JOIN table alias ON alias.pk = p.fk``."""

    table: str
    alias: str
    pk: str
    fk: str


@dataclass(frozen=True)
class SourceShape:
    """The task table (aliased ``p``), its primary key, what to select and join."""

    table: str
    pk: str
    columns: tuple[SourceColumn, ...]
    joins: tuple[SourceJoin, ...]


def _entries(item: SourceColumn) -> list[sql.Composable]:
    column: sql.Composable = (
        sql.SQL("NULL") if item.column is None else sql.Identifier(item.alias, item.column)
    )
    if item.form == "timestamp":
        return [sql.SQL("{}::text").format(column), sql.SQL("extract(epoch from {})").format(column)]
    if item.form == "text":
        return [sql.SQL("{}::text").format(column)]
    return [column]


def _head(shape: SourceShape) -> sql.Composed:
    selected = [entry for item in shape.columns for entry in _entries(item)]
    joins = [
        sql.SQL("LEFT JOIN {} {} ON {} = {}").format(
            sql.Identifier(join.table),
            sql.Identifier(join.alias),
            sql.Identifier(join.alias, join.pk),
            sql.Identifier("p", join.fk),
        )
        for join in shape.joins
    ]
    return sql.SQL("SELECT {} FROM {} p {}").format(
        sql.SQL(", ").join(selected), sql.Identifier(shape.table), sql.SQL(" ").join(joins)
    )


def _text(cursor: Any, statement: sql.Composed) -> str:
    """The statement as text for Django's cursor (which takes strings)."""
    return statement.as_string(cursor.cursor.connection)


def count(cursor: Any, shape: SourceShape) -> int:
    """How many task rows there are."""
    cursor.execute(_text(cursor, sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(shape.table))))
    return int(cursor.fetchone()[0])


def page(cursor: Any, shape: SourceShape, after: Any, size: int) -> list[tuple[Any, ...]]:
    """At most ``size`` task rows after the primary key ``after`` (None: from the
    first), in primary-key order, each with the columns of ``shape``."""
    key = sql.Identifier("p", shape.pk)
    if after is None:
        statement = sql.SQL("{} ORDER BY {} LIMIT %s").format(_head(shape), key)
        cursor.execute(_text(cursor, statement), [size])
    else:
        statement = sql.SQL("{} WHERE {} > %s ORDER BY {} LIMIT %s").format(_head(shape), key, key)
        cursor.execute(_text(cursor, statement), [after, size])
    rows: list[tuple[Any, ...]] = cursor.fetchall()
    return rows
