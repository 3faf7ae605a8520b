"""Queues as the store reads them: job counts by state, and the operator's
state of each queue (``awa_queue_meta``: pause and resume).

Each function takes an open cursor and runs named queries of
``store/sql/jobs/queues.sql``; the transaction and its bounds are the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .jobs import Cursor
from .queries import query

__all__ = ["QueueMetaRow", "job_counts", "lock_meta", "pause", "paused", "queue_meta", "resume"]


@dataclass(frozen=True, slots=True)
class QueueMetaRow:
    """One queue's operator state (``awa_queue_meta``)."""

    queue: str
    paused_at: datetime | None = None
    paused_by: str | None = None


def job_counts(cursor: Cursor) -> dict[str, dict[str, int]]:
    """How many jobs each queue holds, by state: ``{queue: {state: n}}``."""
    cursor.execute(query("job_counts_by_queue_and_state"))
    counts: dict[str, dict[str, int]] = {}
    for queue, state, n in cursor.fetchall():
        counts.setdefault(queue, {})[state] = int(n)
    return counts


def queue_meta(cursor: Cursor) -> dict[str, QueueMetaRow]:
    """Every queue's operator state, by queue."""
    cursor.execute(query("queue_meta_rows"))
    return {row[0]: QueueMetaRow(*row) for row in cursor.fetchall()}


def paused(cursor: Cursor, queue: str) -> bool:
    """Whether ``queue`` is paused."""
    cursor.execute(query("queue_is_paused"), {"queue": queue})
    return bool(cursor.fetchone()[0])


def lock_meta(cursor: Cursor, queue: str) -> QueueMetaRow:
    """``queue``'s operator state, its row created when missing and locked
    until the transaction ends (call inside one)."""
    # Locked first: an existing row (the usual case) is never written to, so
    # its statement trigger wakes no worker and no INSERT privilege is needed.
    cursor.execute(query("lock_queue_meta"), {"queue": queue})
    row = cursor.fetchone()
    if row is None:
        cursor.execute(query("ensure_queue_meta"), {"queue": queue})
        cursor.execute(query("lock_queue_meta"), {"queue": queue})
        row = cursor.fetchone()
    paused_at, paused_by = row
    return QueueMetaRow(queue, paused_at, paused_by)


def pause(cursor: Cursor, queue: str, actor: str) -> None:
    """Pause ``queue`` (its row locked by :func:`lock_meta` first)."""
    cursor.execute(query("pause_queue_meta"), {"queue": queue, "actor": actor})


def resume(cursor: Cursor, queue: str) -> bool:
    """Resume ``queue``; False when it was not paused."""
    cursor.execute(query("resume_queue_meta"), {"queue": queue})
    return bool(cursor.rowcount)
