"""Statements on ``awa_cron_jobs``: the evaluator's reads, the operator verbs, runtime rows.

Each function runs named queries of ``sql/schedules/`` (``due.sql``,
``operator.sql``, ``runtime.sql``) on the cursor it is given, inside whatever
transaction and session context the caller set up (lock order, owner and
operator contexts are the caller's: see :mod:`awa_django.db.lock_order`).

``cursor`` is ``Any`` throughout: Django's ``CursorWrapper`` (and its debug
subclass) has no stub type that the callers share.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..db.sessions import dict_rows
from .queries import query
from .schedule_rows import NextSlot, ScheduleRow

__all__ = [
    "due_batch",
    "insert_runtime",
    "lock_definition",
    "last_jobs",
    "lock_state",
    "next_due",
    "next_slot",
    "notify_changed",
    "pause",
    "pause_runtime",
    "plan_row_of",
    "protocol_lock",
    "reevaluate_parked",
    "release",
    "remove",
    "resume",
    "schedule_exists",
    "schedule_names",
    "schedule_owner",
    "stored_names",
    "trigger",
    "update_runtime",
]


# -- the evaluator's reads ---------------------------------------------------


def due_batch(cursor: Any, after: str, limit: int, max_depth: int) -> list[ScheduleRow]:
    """The due rows after the name ``after`` (keyset), at most ``limit``, by name."""
    cursor.execute(query("due_schedules_batch"), {"after": after, "limit": limit, "max_depth": max_depth})
    return [ScheduleRow.from_row(row) for row in dict_rows(cursor)]


def plan_row_of(cursor: Any, name: str, max_depth: int) -> ScheduleRow | None:
    """Row ``name`` as a pass would read it, due or not (None: no such row)."""
    cursor.execute(query("schedule_plan_row"), {"name": name, "max_depth": max_depth})
    rows = dict_rows(cursor)
    return ScheduleRow.from_row(rows[0]) if rows else None


def next_slot(cursor: Any, ahead: float, limit: int, max_depth: int) -> NextSlot | None:
    """The rows at the earliest stored slot when it is at most ``ahead`` seconds
    away and not yet due, each planned as of that slot; None when there are none."""
    cursor.execute(query("next_slot_schedules"), {"ahead": ahead, "limit": limit, "max_depth": max_depth})
    rows = dict_rows(cursor)
    if not rows:
        return None
    slot: datetime = rows[0]["slot"]
    return NextSlot(slot, float(rows[-1]["slot_in"]), [ScheduleRow.from_row(r).at_slot(slot) for r in rows])


def next_due(cursor: Any) -> tuple[float | None, bool]:
    """Seconds until the earliest stored next fire (None: nothing scheduled), and
    whether a row awaits a (re)computation now."""
    cursor.execute(query("next_due_schedule"))
    seconds, pending = cursor.fetchone()
    return seconds, bool(pending)


def reevaluate_parked(cursor: Any, max_bytes: int, max_depth: int) -> int:
    """Queue parked active rows within the payload limits for evaluation; how many."""
    cursor.execute(query("reevaluate_parked_schedules"), {"bytes": max_bytes, "depth": max_depth})
    count: int = cursor.rowcount
    return count


# -- the operator verbs ------------------------------------------------------


def lock_state(cursor: Any, name: str) -> tuple[bool, str | None, bool, str | None] | None:
    """Lock row ``name``: (paused, paused_by, retired, owner_id), or None."""
    cursor.execute(query("lock_schedule_state"), [name])
    row = cursor.fetchone()
    return None if row is None else (bool(row[0]), row[1], bool(row[2]), row[3])


def pause(cursor: Any, name: str, actor: str) -> None:
    """Pause row ``name`` as ``actor``."""
    cursor.execute(query("pause_schedule"), [actor, name])


def resume(cursor: Any, name: str) -> None:
    """Resume row ``name``."""
    cursor.execute(query("resume_schedule"), [name])


def remove(cursor: Any, name: str) -> None:
    """Delete row ``name``."""
    cursor.execute(query("remove_schedule"), [name])


def trigger(cursor: Any, name: str, actor: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Enqueue one job for ``name`` now: (column names, the job row or none).

    The raw row is returned for the jobs' decoder (``Any``: its columns' values)."""
    cursor.execute(query("trigger_schedule"), [name, actor])
    return [c.name for c in cursor.description], cursor.fetchall()


def schedule_owner(cursor: Any, name: str) -> tuple[bool, str | None]:
    """(whether row ``name`` exists, its owner)."""
    cursor.execute(query("schedule_owner"), [name])
    row = cursor.fetchone()
    return (False, None) if row is None else (True, row[0])


def schedule_names(cursor: Any) -> list[str]:
    """Every stored name."""
    cursor.execute(query("schedule_names"))
    return [str(name) for (name,) in cursor.fetchall()]


def stored_names(cursor: Any) -> list[tuple[str, str | None, bool]]:
    """Every stored name with its owner and whether it is retired."""
    cursor.execute(query("schedule_names_owners"))
    return [(str(name), owner, bool(retired)) for name, owner, retired in cursor.fetchall()]


def schedule_exists(cursor: Any, name: str) -> bool:
    """Whether a row called ``name`` exists."""
    cursor.execute(query("schedule_name_exists"), [name])
    return bool(cursor.fetchone()[0])


def protocol_lock(cursor: Any) -> None:
    """Take the protocol lock (first in every writer's lock order)."""
    cursor.execute(query("take_protocol_lock"))


def notify_changed(cursor: Any, channel: str) -> None:
    """Wake the leader listening on ``channel`` after a change of schedules."""
    cursor.execute(query("notify_schedules_changed"), [channel])


def release(cursor: Any, name: str) -> None:
    """Release row ``name`` from its owner and lifecycle (operator context)."""
    cursor.execute(query("release_schedule"), [name])


# -- runtime schedules -------------------------------------------------------


def lock_definition(cursor: Any, name: str, lock: bool = True) -> tuple[list[Any], str | None, bool] | None:
    """Row ``name``'s definition columns (FIELDS order, jsonb as text), owner and
    retired flag, locked unless ``lock`` is False; None when there is no row.

    ``Any``: the definition columns' values, decoded by the caller."""
    cursor.execute(query("lock_runtime_schedule" if lock else "read_runtime_schedule"), [name])
    row = cursor.fetchone()
    if row is None:
        return None
    return list(row[:-2]), row[-2], bool(row[-1])


def insert_runtime(cursor: Any, owner: str, definitions: Sequence[dict[str, Any]]) -> set[str]:
    """Insert ``definitions`` owned by ``owner``; the names inserted (a taken one is left out).

    ``Any``: a definition's JSON values."""
    cursor.execute(query("insert_runtime_schedules"), [owner, json.dumps(list(definitions))])
    return {str(row[0]) for row in cursor.fetchall()}


def update_runtime(cursor: Any, definition: dict[str, Any], owner: str, timing: bool) -> bool:
    """Write ``definition`` to its row of ``owner``; with ``timing``, the fire clock
    moves to the edit. False when nothing was written (fenced).

    ``Any``: the definition's JSON values."""
    cursor.execute(query("update_runtime_schedule"), [timing, json.dumps([definition]), owner])
    return cursor.fetchone() is not None


def pause_runtime(cursor: Any, names: list[str], actor: str, owner: str) -> None:
    """Pause the named rows of ``owner`` as ``actor``."""
    cursor.execute(query("pause_runtime_schedules"), [actor, names, owner])


def last_jobs(cursor: Any, names: list[str]) -> dict[str, tuple[int, str, bool]]:
    """The newest job of each named schedule: (id, state, triggered manually)."""
    cursor.execute(query("schedules_last_jobs"), [names])
    return {name: (job_id, state, bool(manual)) for name, job_id, state, manual in cursor.fetchall()}
