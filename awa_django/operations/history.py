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

from django.db import connections

from ..store import slot_history as store
from ..store.maintenance import HISTORY_KEPT, trim_slot_history
from ..store.slot_history import SlotOutcome

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

OUTCOMES = ("enqueued", "triggered", "skipped_overlap", "skipped_unique", "missed_deadline")
# The reasons a slot was not enqueued, as awa_cron_slot_counts counts them.
SKIP_REASONS = ("overlap", "unique", "deadline")


def slot_history(name: str, limit: int = 50, using: str = "default") -> list[SlotOutcome]:
    """The ``limit`` most recent slot outcomes of schedule ``name``, newest first.

    A job's slot is its ``cron_fire_at`` or, for a manual trigger, its creation."""
    with connections[using].cursor() as cursor:
        return store.slot_history(cursor, name, limit)


def skip_counts(name: str, using: str = "default") -> dict[str, int]:
    """Slots of ``name`` not enqueued, ever, by reason (``overlap``, ``unique``, ``deadline``)."""
    with connections[using].cursor() as cursor:
        return store.skip_counts(cursor, name)


def skip_totals(using: str = "default") -> dict[str, int]:
    """Slots not enqueued by any schedule, by reason (the metrics' counter)."""
    with connections[using].cursor() as cursor:
        totals = store.skip_totals(cursor)
    return {reason: totals.get(reason, 0) for reason in SKIP_REASONS}


def trim(kept: int = HISTORY_KEPT, using: str = "default") -> int:
    """Keep the newest ``kept`` outcomes per schedule; forget removed schedules'
    (their counters go with them). The leader runs it at each maintenance;
    returns the rows deleted."""
    return trim_slot_history(kept, using)
