"""The slot history: what became of each slot of a schedule, and its trimming.

Runs the named queries of ``sql/schedules/history.sql`` over ``awa_jobs``,
``awa_cron_slot_outcomes`` and ``awa_cron_slot_counts``.
``cursor`` is ``Any``: Django's cursor wrapper has no shared stub type.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .queries import query

__all__ = ["SlotOutcome", "skip_counts", "skip_totals", "slot_history"]


@dataclass(frozen=True)
class SlotOutcome:
    """One slot of a schedule and what became of it."""

    slot: datetime
    outcome: str  # enqueued, triggered, skipped_overlap, skipped_unique, missed_deadline
    job_id: int | None = None  # the slot's job (enqueued, triggered)
    # skipped_overlap: the unfinished job then; skipped_unique: the job holding the key.
    blocked_by: int | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any] | tuple[Any, ...]) -> SlotOutcome:
        """The outcome from a row of ``schedule_slot_history`` (a mapping or its tuple).

        ``Any``: a database row's values, typed by its columns."""
        if isinstance(row, Mapping):
            return cls(row["slot"], row["outcome"], row.get("job_id"), row.get("blocked_by"))
        slot, outcome, job_id, blocked_by = row
        return cls(slot, outcome, job_id, blocked_by)

    def as_json(self) -> dict[str, Any]:
        """The outcome as JSON (``Any``: text, numbers, null)."""
        return {
            "slot": self.slot.isoformat(),
            "outcome": self.outcome,
            "job_id": self.job_id,
            "blocked_by": self.blocked_by,
        }


def slot_history(cursor: Any, name: str, limit: int) -> list[SlotOutcome]:
    """The ``limit`` most recent slot outcomes of schedule ``name``, newest first."""
    cursor.execute(query("schedule_slot_history"), {"name": name, "limit": limit})
    return [SlotOutcome.from_row(row) for row in cursor.fetchall()]


def skip_counts(cursor: Any, name: str) -> dict[str, int]:
    """Slots of ``name`` not enqueued, ever, by reason."""
    cursor.execute(query("schedule_skip_counts"), [name])
    return {reason: int(count) for reason, count in cursor.fetchall()}


def skip_totals(cursor: Any) -> dict[str, int]:
    """Slots not enqueued by any schedule, by reason."""
    cursor.execute(query("skip_totals"))
    return {reason: int(count) for reason, count in cursor.fetchall()}
