"""Schedule rows as raw SQL can leave them, and what the row checks read.

``POISONS`` are values no declaration writes but a hand edit can (a column and
its SQL literal); ``poison`` writes one into a row and ``parked`` reads whether
the evaluator parked the row and why. ``healthy`` is the row dict the row
checks read (a :class:`ScheduleRow`), for a row a declaration could write
(``changes`` override columns).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db import connection

from awa_django.store.schedule_rows import ScheduleRow

POISONS = {
    "last_enqueued_at_year_9999": ("last_enqueued_at", "'9999-12-31 23:59+00'"),
    "last_enqueued_at_year_1": ("last_enqueued_at", "'0001-01-01 00:00+00'"),
    "last_enqueued_at_infinity": ("last_enqueued_at", "'infinity'"),
    "last_enqueued_at_minus_infinity": ("last_enqueued_at", "'-infinity'"),
    "created_at_year_9999": ("created_at", "'9999-12-31 23:59+00'"),
    "created_at_year_1": ("created_at", "'0001-01-01 00:00+00'"),
    "created_at_infinity": ("created_at", "'infinity'"),
    "created_at_minus_infinity": ("created_at", "'-infinity'"),
    "args_list": ("args", "'[1]'"),
    "args_number": ("args", """'{"args": 5}'"""),
    "args_extra_key": ("args", """'{"args": [], "kwargs": {}, "x": 1}'"""),
    "metadata_list": ("metadata", "'[]'"),
    "kind_relative": ("kind", "'.x'"),
    "kind_dots": ("kind", "'..'"),
    "cron_garbage": ("cron_expr", "'not a cron'"),
    "cron_step_too_large": ("cron_expr", "'*/61 * * * *'"),
    "zone_unknown": ("timezone", "'Mars/Olympus_Mons'"),
    "zone_localtime": ("timezone", "'localtime'"),
}


def poison(name: str, column: str, value: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE awa_cron_jobs SET {column} = {value} WHERE name = %s", [name])


def parked(name: str) -> tuple[bool, str | None]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT parked_at IS NOT NULL, parked_reason FROM awa_cron_jobs WHERE name = %s", [name]
        )
        row: tuple[bool, str | None] = cursor.fetchone()
    return row


def healthy(**changes: Any) -> ScheduleRow:
    row: dict[str, Any] = {
        "last_enqueued_at": datetime(2026, 3, 1, 12, 0, tzinfo=UTC),
        "prev_text": "2026-03-01 12:00:00+00",
        "created_at": datetime(2026, 1, 1, tzinfo=UTC),
        "created_text": "2026-01-01 00:00:00+00",
        "args_type": "object",
        "args_args_type": "array",
        "args_kwargs_type": "object",
        "args_keys": ["args", "kwargs"],
        "args_bytes": 30,
        "metadata_type": "object",
        "metadata_bytes": 2,
        "kind": "tests.testapp.tasks.record",
        "cron_expr": "*/5 * * * *",
        "timezone": "Europe/Berlin",
        "missed_fire_policy": "catch_up",
    }
    row.update(changes)
    return ScheduleRow.from_row({"name": "healthy", **row})
