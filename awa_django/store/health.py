"""The reads and the write of the health probe and of the metrics' database
gauges: the statements of ``store/sql/schema/health.sql`` and ``metrics.sql``.

Rows that cross into :mod:`awa_django.health` are :class:`LiveProcess`,
:class:`OverdueSchedule` and :class:`OldRuncron`, built here from a row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .queries import query

__all__ = [
    "GaugeRow",
    "LiveProcess",
    "OldRuncron",
    "OverdueSchedule",
    "database_gauges",
    "live_processes",
    "overdue_schedules",
    "policy_gap",
    "record_progress",
    "statement_timeout",
]

# A cursor of Django's or psycopg's: both take the same ``execute(sql, params)``.
Cursor = Any
# One database gauge: (kind, label 1, label 2, value).
GaugeRow = tuple[str, str, str, float]


@dataclass(frozen=True)
class LiveProcess:
    """A runtime row whose snapshot thread is alive."""

    hostname: str
    pid: int
    role: str
    leader: bool
    pass_age: float  # seconds since its last pass (since start before the first)
    pass_limit: float  # the most pass_age may be
    starting: bool  # no pass recorded yet

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> LiveProcess:
        hostname, pid, role, leader, age, limit, starting = row
        return cls(str(hostname), int(pid), str(role), bool(leader), float(age), float(limit), bool(starting))

    @property
    def progressing(self) -> bool:
        return self.pass_age <= self.pass_limit


@dataclass(frozen=True)
class OverdueSchedule:
    """An active schedule whose next fire is late, and by how many seconds."""

    name: str
    late: float

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> OverdueSchedule:
        return cls(str(row[0]), float(row[1]))


@dataclass(frozen=True)
class OldRuncron:
    """A live ``runcron`` whose fire statement predates the execution policies."""

    hostname: str
    pid: int
    leader: bool

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> OldRuncron:
        _, hostname, pid, leader = row
        return cls(str(hostname), int(pid), bool(leader))


def live_processes(cursor: Cursor, max_pass_age: float) -> list[LiveProcess]:
    """Every live runtime row, newest start first."""
    cursor.execute(query("health_live_processes"), {"max_pass_age": max_pass_age})
    return [LiveProcess.from_row(row) for row in cursor.fetchall()]


def overdue_schedules(cursor: Cursor, overdue_after: float) -> list[OverdueSchedule]:
    """Up to 11 active schedules late by more than ``overdue_after`` seconds, latest first."""
    cursor.execute(query("health_overdue_schedules"), {"overdue_after": overdue_after})
    return [OverdueSchedule.from_row(row) for row in cursor.fetchall()]


def policy_gap(cursor: Cursor, version: int) -> tuple[int, list[OldRuncron]]:
    """(active schedules with execution policies, live runcron processes whose fire
    statement is older than ``version``); the count is 0 when no such process lives."""
    cursor.execute(query("health_policy_gap"), {"version": version})
    rows = cursor.fetchall()
    return (int(rows[0][0]) if rows else 0), [OldRuncron.from_row(row) for row in rows]


def record_progress(cursor: Cursor, instance_id: str, age: float) -> None:
    """This instance made progress ``age`` seconds ago (by the database clock)."""
    cursor.execute(query("health_record_progress"), {"age": age, "instance_id": instance_id})


def database_gauges(cursor: Cursor) -> list[GaugeRow]:
    """Every database gauge of the metrics, empty labels as ``""``."""
    cursor.execute(query("metrics_database_gauges"))
    return [(str(k), str(a or ""), str(b or ""), float(v)) for k, a, b, v in cursor.fetchall()]


def statement_timeout(cursor: Cursor) -> str:
    """The session's ``statement_timeout`` as PostgreSQL shows it."""
    cursor.execute(query("session_statement_timeout"))
    return str(cursor.fetchone()[0])
