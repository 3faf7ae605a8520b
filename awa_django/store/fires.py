"""The fire statement: a plan sent to ``awa_cron_fire_v8``, at once or at its slot.

Runs the named queries of ``sql/schedules/fire.sql``. Rows come back raw
(column names and value tuples): the ``awa_jobs`` row decoder reads them.
``cursor`` is ``Any``: Django's cursor wrapper has no shared stub type.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .queries import query

__all__ = ["FIRE_FUNCTION", "fire", "fire_at_slot", "set_lock_timeout", "sleep_until_slot"]

# The fire function the fire queries call (the health snapshot reports its version).
FIRE_FUNCTION = "awa_cron_fire_v8"

# A raw result: the column names and the rows (``Any``: the columns' values).
RawRows = tuple[list[str], list[tuple[Any, ...]]]


def fire(cursor: Any, plan_text: str) -> RawRows:
    """Fire a plan (its JSON text): the ``awa_jobs`` rows inserted."""
    cursor.execute(query("fire_plan"), [plan_text])
    return [c.name for c in cursor.description], cursor.fetchall()


def fire_at_slot(cursor: Any, plan_text: str, slot: datetime, stale: float) -> tuple[bool, RawRows]:
    """Fire a plan once the database reaches ``slot``, unless ``stale`` seconds late:
    (whether it was fresh, the ``awa_jobs`` rows inserted)."""
    cursor.execute(query("fire_plan_at_slot"), {"slot": slot, "stale": stale, "plan": plan_text})
    columns = [c.name for c in cursor.description][1:]
    rows = cursor.fetchall()
    fresh = not rows or bool(rows[0][0])
    return fresh, (columns, [r[1:] for r in rows if r[1] is not None])


def sleep_until_slot(cursor: Any, slot: datetime, stale: float) -> bool:
    """Wait (in the database) until ``slot``; False when it is then ``stale`` seconds past."""
    cursor.execute(query("sleep_until_slot"), {"slot": slot, "stale": stale})
    return bool(cursor.fetchone()[0])


def set_lock_timeout(cursor: Any, milliseconds: int) -> None:
    """Bound the session's lock waits (``lock_timeout``) to ``milliseconds``."""
    cursor.execute(query("set_fire_lock_timeout"), [str(milliseconds)])
