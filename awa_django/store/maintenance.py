"""The maintenance family: pruning, trims, vacuums and index rebuilds.

Each function runs named queries of ``store/sql/maintenance/`` on the caller's
cursor (a Django cursor or a psycopg one: both take the query text and a dict
of parameters) and returns plain values or the frozen rows below. The
statements that name an identifier only known at run time (an index of
``awa_jobs`` from the catalog, a timeout) are composed here with
:mod:`psycopg.sql`, never by string formatting: the identifier is quoted, the
literal escaped. The policies (when to vacuum, what to rebuild) live in
:mod:`awa_django.maintenance`.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import connections
from psycopg import sql

from .queries import query

__all__ = [
    "HISTORY_KEPT",
    "IndexDefinition",
    "TransactionHolder",
    "TupleCounts",
    "cleanup_holders",
    "drop_index_concurrently",
    "index_build_under_way",
    "index_leftovers",
    "jobs_btree_indexes",
    "jobs_heap_pages",
    "jobs_tuple_counts",
    "jobs_vacuum_under_way",
    "may_vacuum_jobs",
    "old_client_transaction",
    "reindex_concurrently",
    "relation_size",
    "sample_index_entries",
    "trim_slot_history",
    "vacuum_jobs",
    "vacuum_schedules",
]

# Outcomes kept per schedule in the slot history by each trim.
HISTORY_KEPT = 1000

# The cursor parameters below are ``Any``: the functions take Django's cursor
# wrapper and psycopg's cursor alike, which share no declared type.


@dataclass(frozen=True)
class TransactionHolder:
    """A client transaction open long enough to hold cleanup back."""

    pid: int
    role: str
    application: str
    state: str
    started: datetime.datetime
    open_seconds: float

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> TransactionHolder:
        pid, role, application, state, started, seconds = row
        return cls(int(pid), str(role), application or "", str(state), started, float(seconds))


@dataclass(frozen=True)
class TupleCounts:
    """Live and dead row versions of ``awa_jobs`` and its VACUUMs run by hand, as counted."""

    live: int
    dead: int
    vacuums: int

    @classmethod
    def from_row(cls, row: Sequence[Any] | None) -> TupleCounts:
        live, dead, vacuums = (int(value or 0) for value in (row or (0, 0, 0)))
        return cls(live, dead, vacuums)


@dataclass(frozen=True)
class IndexDefinition:
    """A btree index of ``awa_jobs`` as the catalog has it: SQL fragments of its
    predicate (None for a full index) and key expressions, written by PostgreSQL."""

    name: str
    size: int
    predicate: str | None
    keys: tuple[str, ...]

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> IndexDefinition:
        name, size, predicate, keys = row
        return cls(str(name), int(size), predicate, tuple(keys))


# -- pruning and trims ---------------------------------------------------------------


def trim_slot_history(kept: int = HISTORY_KEPT, using: str = "default") -> int:
    """Keep the newest ``kept`` outcomes per schedule, forget removed schedules';
    the rows deleted."""
    with connections[using].cursor() as cursor:
        cursor.execute(query("trim_slot_history"), {"kept": kept})
        return int(cursor.rowcount)


# -- the catch-up VACUUM of awa_jobs ------------------------------------------------------


def old_client_transaction(cursor: Any, older_than: float) -> tuple[bool, datetime.datetime]:
    """Whether another client transaction has been open ``older_than`` seconds
    or more, and the server's time."""
    cursor.execute(query("old_client_transaction"), {"seconds": older_than})
    old, now = cursor.fetchone()
    return bool(old), now


def cleanup_holders(cursor: Any, older_than: float) -> list[TransactionHolder]:
    """The client transactions open ``older_than`` seconds or more, oldest first."""
    cursor.execute(query("cleanup_holders"), {"seconds": older_than})
    return [TransactionHolder.from_row(row) for row in cursor.fetchall()]


def jobs_tuple_counts(cursor: Any) -> TupleCounts:
    """Live and dead row versions of awa_jobs and its VACUUMs by hand."""
    cursor.execute(query("jobs_tuple_counts"))
    return TupleCounts.from_row(cursor.fetchone())


def jobs_vacuum_under_way(cursor: Any, after: datetime.datetime | None) -> bool:
    """Whether a vacuum of awa_jobs that began after ``after`` (any, when None) runs now."""
    cursor.execute(query("jobs_vacuum_under_way"), {"after": after})
    return bool(cursor.fetchone()[0])


def may_vacuum_jobs(cursor: Any) -> bool:
    """Whether this role owns awa_jobs, is a superuser, or may MAINTAIN it (PostgreSQL 17+)."""
    cursor.execute(query("may_vacuum_jobs"))
    row = cursor.fetchone()
    if row is not None and row[0]:
        return True
    if cursor.connection.info.server_version >= 170000:
        cursor.execute(query("may_maintain_jobs"))
        return bool(cursor.fetchone()[0])
    return False


@contextmanager
def _session_timeouts(cursor: Any, **timeouts_ms: int) -> Iterator[None]:
    """``SET`` each named timeout for the block (a literal: ``SET`` takes no
    parameter), ``RESET`` after it whatever happens."""
    try:
        for name, value in timeouts_ms.items():
            cursor.execute(
                _text(cursor, sql.SQL("SET {} = {}").format(sql.Identifier(name), sql.Literal(value)))
            )
        yield
    finally:
        for name in timeouts_ms:
            cursor.execute(_text(cursor, sql.SQL("RESET {}").format(sql.Identifier(name))))


def vacuum_jobs(cursor: Any, lock_timeout_ms: int, statement_timeout_ms: int) -> None:
    """``VACUUM awa_jobs`` within the timeouts; their errors propagate."""
    with _session_timeouts(cursor, lock_timeout=lock_timeout_ms, statement_timeout=statement_timeout_ms):
        cursor.execute(query("vacuum_jobs"))


def vacuum_schedules(cursor: Any) -> None:
    """``VACUUM (SKIP_LOCKED) awa_cron_jobs`` (outside any transaction)."""
    cursor.execute(query("vacuum_schedules"))


# -- index upkeep ---------------------------------------------------------------------


def jobs_btree_indexes(cursor: Any) -> list[IndexDefinition]:
    """Each valid btree index of awa_jobs."""
    cursor.execute(query("jobs_btree_indexes"))
    return [IndexDefinition.from_row(row) for row in cursor.fetchall()]


def jobs_heap_pages(cursor: Any) -> int:
    """The pages of awa_jobs' heap."""
    cursor.execute(query("jobs_heap_pages"))
    return int(cursor.fetchone()[0])


def sample_index_entries(
    cursor: Any, indexes: Sequence[IndexDefinition], percent: float
) -> list[tuple[int, int]]:
    """For each of ``indexes``, the entries and their summed widths in a
    ``percent`` sample of awa_jobs' pages.

    Composed: the predicates and key expressions are SQL that PostgreSQL wrote
    (``pg_get_expr``, ``pg_get_indexdef``) for indexes only known at run time.
    """
    columns = []
    for index in indexes:
        where = sql.SQL(index.predicate or "true")
        row = sql.SQL("pg_column_size(ROW({}))").format(sql.SQL(", ").join(sql.SQL(k) for k in index.keys))
        columns.append(
            sql.SQL("count(*) FILTER (WHERE {w}), sum({r}) FILTER (WHERE {w})").format(w=where, r=row)
        )
    statement = sql.SQL("SELECT {} FROM awa_jobs TABLESAMPLE SYSTEM ({})").format(
        sql.SQL(", ").join(columns), sql.Literal(percent)
    )
    cursor.execute(_text(cursor, statement))  # no parameters: a "%" in an expression stays as it is
    sampled = cursor.fetchone()
    return [(int(sampled[2 * n] or 0), int(sampled[2 * n + 1] or 0)) for n in range(len(indexes))]


def index_build_under_way(cursor: Any) -> bool:
    """Whether an index of awa_jobs is being built or rebuilt now (by anyone)."""
    cursor.execute(query("jobs_index_build_under_way"))
    return bool(cursor.fetchone()[0])


def index_leftovers(cursor: Any) -> list[str]:
    """The invalid ``_ccnew`` copies of awa_jobs' indexes interrupted rebuilds left."""
    cursor.execute(query("jobs_index_leftovers"))
    return [str(name) for (name,) in cursor.fetchall()]


def drop_index_concurrently(cursor: Any, name: str, lock_timeout_ms: int) -> None:
    """``DROP INDEX CONCURRENTLY`` the index ``name``, waiting at most
    ``lock_timeout_ms`` for the transactions using the table (the error
    propagates). Composed: the name comes from the catalog."""
    with _session_timeouts(cursor, lock_timeout=lock_timeout_ms):
        cursor.execute(
            _text(cursor, sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
        )


def reindex_concurrently(cursor: Any, name: str, statement_timeout_ms: int) -> None:
    """``REINDEX INDEX CONCURRENTLY`` the index ``name`` within the timeout (errors
    propagate). Composed: the name comes from the catalog."""
    with _session_timeouts(cursor, statement_timeout=statement_timeout_ms):
        cursor.execute(_text(cursor, sql.SQL("REINDEX INDEX CONCURRENTLY {}").format(sql.Identifier(name))))


def relation_size(cursor: Any, name: str) -> int:
    """The size in bytes of the relation ``name``."""
    cursor.execute(query("relation_size"), {"relation": name})
    return int(cursor.fetchone()[0])


def _text(cursor: Any, statement: sql.Composable) -> str:
    """A composed statement as text, for Django's cursor (run without parameters)."""
    return statement.as_string(cursor.connection)
