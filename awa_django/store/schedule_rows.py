"""The rows an evaluation pass plans, and the plan it hands to the fire statement.

:class:`ScheduleRow` is one ``awa_cron_jobs`` row as the due queries of
``sql/schedules/due.sql`` read it (its timing, its CAS values, its payload
described rather than loaded); :class:`PlannedFire` is what the evaluator
plans for one row and the fire function ``awa_cron_fire_v8`` reads (as JSON,
:meth:`PlannedFire.as_json`). Each is built in one place: ``from_row``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

__all__ = ["NEVER", "PlannedFire", "ScheduleRow"]

# Stored for a row that cannot be evaluated (bad expression written by raw SQL)
# or that never fires again, so it is not re-read every pass; any definition
# change resets it. Not 'infinity': Python datetimes (the ORM, the CLI, the
# admin) cannot represent it, while year 9999 loads fine.
NEVER = "9999-12-31T00:00:00+00:00"


@dataclass(frozen=True, slots=True)
class ScheduleRow:
    """One schedule row as an evaluation pass reads it (``due_schedules_batch``).

    Timestamps a Python datetime cannot hold read as None, with the database's
    text beside them (``prev_text``, ``created_text``, ``anchor_text``): the
    CAS compares the text, the row checks park such a row. The columns are
    typed as the table declares them; a row written by raw SQL can still hold
    a value the row checks refuse (``NaN`` in a float), which is why they exist.
    """

    name: str
    cron_expr: str | None = None
    every_seconds: int | None = None
    timezone: str = "UTC"
    missed_fire_policy: str = "coalesce"
    kind: str = ""
    parked_reason: str | None = None
    starting_deadline: float | None = None
    jitter: float | None = None
    last_enqueued_at: datetime | None = None
    prev_text: str | None = None
    created_at: datetime | None = None
    created_text: str | None = None
    anchor: datetime | None = None
    anchor_text: str | None = None
    # The payload a fire copies into the job, described (JSON types, keys,
    # measures), never loaded.
    args_type: str | None = None
    args_args_type: str | None = None
    args_kwargs_type: str | None = None
    args_keys: tuple[str, ...] | None = None
    args_bytes: int = 0
    metadata_type: str | None = None
    metadata_bytes: int = 0
    args_depth: int | None = None
    metadata_depth: int | None = None
    # The database's "now" for the pass (statement_timestamp()); the slot a
    # prepared row fires at (see at_slot).
    now: datetime | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ScheduleRow:
        """The row from a mapping of the due queries' columns (absent keys: defaults).

        ``Any``: a database row's values, typed by the columns they come from."""
        names = cls.__dataclass_fields__
        values = {key: value for key, value in row.items() if key in names}
        if values.get("args_keys") is not None:
            values["args_keys"] = tuple(values["args_keys"])
        return cls(**values)

    def at_slot(self, slot: datetime) -> ScheduleRow:
        """The row planned as of ``slot`` (a prepared slot's rows fire at their slot)."""
        return replace(self, now=slot)


@dataclass(frozen=True, slots=True)
class PlannedFire:
    """What the evaluator plans for one row: the fire function's entry.

    The row's CAS values (``prev``, ``created_at``, their texts, the timing as
    read), the slots to fire, the slots missed by the starting deadline, the
    new CAS token (``advance``), the next fire, or a reason to park the row.
    """

    name: str
    prev: str | None
    created_at: str | None
    prev_text: str | None
    created_text: str | None
    cron_expr: str | None
    every_seconds: int | None
    anchor: str | None  # as read (text), so the CAS also holds for a value no datetime holds
    timezone: str
    missed_fire_policy: str
    starting_deadline: float | None
    fires: tuple[str, ...] = ()
    missed: tuple[str, ...] = ()
    missed_count: int = 0
    advance: str | None = None
    next_fire_at: str = NEVER
    park: str | None = None

    @classmethod
    def from_row(cls, row: ScheduleRow) -> PlannedFire:
        """The entry of ``row`` with its CAS values and nothing planned yet."""
        return cls(
            name=row.name,
            prev=row.last_enqueued_at.isoformat() if row.last_enqueued_at else None,
            created_at=row.created_at.isoformat() if row.created_at else None,
            prev_text=row.prev_text,
            created_text=row.created_text,
            cron_expr=row.cron_expr,
            every_seconds=row.every_seconds,
            anchor=row.anchor_text,
            timezone=row.timezone,
            missed_fire_policy=row.missed_fire_policy,
            starting_deadline=row.starting_deadline,
        )

    def as_json(self) -> dict[str, Any]:
        """The entry as the fire function reads it (a JSON object).

        ``Any``: JSON values (text, numbers, lists of text, null)."""
        entry = {name: getattr(self, name) for name in self.__dataclass_fields__}
        entry["fires"] = list(self.fires)
        entry["missed"] = list(self.missed)
        return entry


@dataclass(frozen=True, slots=True)
class NextSlot:
    """The rows due at the next slot, read ahead of it (``next_slot_schedules``)."""

    slot: datetime
    # Seconds from the read to the slot, by the database's clock (of the last row).
    slot_in: float
    rows: list[ScheduleRow] = field(default_factory=list)
