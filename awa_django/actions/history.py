"""What became of a schedule's slots: enqueued, triggered, skipped or missed.

Enqueued slots and manual triggers are their jobs in ``awa_jobs`` (kept for
``AWA_JOB_RETENTION``); slots not enqueued because of an execution policy or of a unique key
an unfinished job held are
rows of ``awa_cron_slot_outcomes`` (written by the fire statement under the
compare-and-swap, capped per schedule by the leader's maintenance) and are
counted, never trimmed, in ``awa_cron_slot_counts``. The CLI (``manage.py awa
cron history``), the admin and the metrics read them here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connections

from ..db.timestamps import TIMESTAMP_HIGH, TIMESTAMP_LOW

__all__ = [
    "HISTORY_KEPT",
    "OUTCOMES",
    "SKIP_REASONS",
    "SlotOutcome",
    "slot_history",
    "skip_counts",
    "skip_totals",
    "trim",
]

# Skipped and missed slots kept per schedule (the counters keep counting).
HISTORY_KEPT = 1000
OUTCOMES = ("enqueued", "triggered", "skipped_overlap", "skipped_unique", "missed_deadline")
# The reasons a slot was not enqueued, as awa_cron_slot_counts counts them.
SKIP_REASONS = ("overlap", "unique", "deadline")

# The most recent outcomes of one schedule, newest first. A job's slot is its
# cron_fire_at (the form the fire statement writes; anything else, written
# by raw SQL, is not read as a slot) or, for a manual trigger, its creation.
_HISTORY = f"""
    SELECT slot, outcome, job_id, blocked_by FROM (
        (SELECT (j.metadata ->> 'cron_fire_at')::timestamptz AS slot, 'enqueued' AS outcome,
                j.id AS job_id, NULL::bigint AS blocked_by
           FROM awa_jobs AS j
          WHERE j.metadata ? 'cron_name' AND (j.metadata ->> 'cron_name') = %(name)s
            AND (j.metadata ->> 'cron_fire_at') ~ '^\\d{{4}}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\+00:00$'
          ORDER BY j.id DESC LIMIT %(limit)s)
        UNION ALL
        (SELECT j.created_at, 'triggered', j.id, NULL
           FROM awa_jobs AS j
          WHERE j.metadata ? 'cron_name' AND (j.metadata ->> 'cron_name') = %(name)s
            AND j.metadata -> 'triggered_manually' = 'true'::jsonb
            -- A creation no datetime holds ('infinity', by raw SQL) is no slot.
            AND j.created_at BETWEEN '{TIMESTAMP_LOW}' AND '{TIMESTAMP_HIGH}'
          ORDER BY j.id DESC LIMIT %(limit)s)
        UNION ALL
        (SELECT o.slot, o.outcome, NULL, o.blocked_by
           FROM awa_cron_slot_outcomes AS o
          WHERE o.name = %(name)s
          ORDER BY o.slot DESC, o.id DESC LIMIT %(limit)s)
    ) AS h
    ORDER BY slot DESC, outcome LIMIT %(limit)s
"""


@dataclass(frozen=True)
class SlotOutcome:
    """One slot of a schedule and what became of it."""

    slot: datetime
    outcome: str  # one of OUTCOMES
    job_id: int | None = None  # the slot's job (enqueued, triggered)
    # skipped_overlap: the unfinished job then; skipped_unique: the job holding the key.
    blocked_by: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "slot": self.slot.isoformat(),
            "outcome": self.outcome,
            "job_id": self.job_id,
            "blocked_by": self.blocked_by,
        }


def slot_history(name: str, limit: int = 50, using: str = "default") -> list[SlotOutcome]:
    """The ``limit`` most recent slot outcomes of schedule ``name``, newest first."""
    with connections[using].cursor() as cursor:
        cursor.execute(_HISTORY, {"name": name, "limit": limit})
        return [SlotOutcome(*row) for row in cursor.fetchall()]


def skip_counts(name: str, using: str = "default") -> dict[str, int]:
    """Slots of ``name`` not enqueued, ever, by reason (``overlap``, ``unique``, ``deadline``)."""
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT reason, count FROM awa_cron_slot_counts WHERE name = %s", [name])
        return {reason: int(count) for reason, count in cursor.fetchall()}


def skip_totals(using: str = "default") -> dict[str, int]:
    """Slots not enqueued by any schedule, by reason (the metrics' counter)."""
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT reason, sum(count) FROM awa_cron_slot_counts GROUP BY reason")
        totals = {reason: int(count) for reason, count in cursor.fetchall()}
    return {reason: totals.get(reason, 0) for reason in SKIP_REASONS}


# Rows beyond the newest HISTORY_KEPT of their schedule, or of a schedule that
# no longer exists (its counters go with it).
# The schedules' names come first: PostgreSQL locks the tables as it parses
# the statement, and awa_cron_jobs goes before the slot tables in the lock
# order (awa_django.db.lock_order), so a migration holding the schedules never
# waits for this statement while it waits for the migration.
_TRIM = """
    WITH schedules AS MATERIALIZED (
        SELECT name FROM awa_cron_jobs
    ), excess AS (
        SELECT id FROM (
            SELECT o.id, row_number() OVER (PARTITION BY o.name ORDER BY o.slot DESC, o.id DESC) AS n
              FROM awa_cron_slot_outcomes AS o) AS ranked
         WHERE n > %(kept)s
        UNION ALL
        SELECT o.id FROM awa_cron_slot_outcomes AS o
         WHERE NOT EXISTS (SELECT 1 FROM schedules AS c WHERE c.name = o.name)
    ), gone AS (
        DELETE FROM awa_cron_slot_counts AS k
         WHERE NOT EXISTS (SELECT 1 FROM schedules AS c WHERE c.name = k.name)
    )
    DELETE FROM awa_cron_slot_outcomes WHERE id IN (SELECT id FROM excess)
"""


def trim(kept: int = HISTORY_KEPT, using: str = "default") -> int:
    """Keep the newest ``kept`` outcomes per schedule; forget removed schedules'.
    The leader runs it at each maintenance; returns the rows deleted."""
    with connections[using].cursor() as cursor:
        cursor.execute(_TRIM, {"kept": kept})
        deleted: int = cursor.rowcount
    return deleted
