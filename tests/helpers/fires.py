"""Cron fires: calling the SQL fire functions, preparing fires, reading what fired.

``FIRE`` names the fire function :func:`fire` calls (a fixture of the SQL tests
sets it to each installed version in turn); ``plan_entry`` builds the JSON the
evaluator passes it, ``planned`` the same entry as the evaluator hands it to
the firing module. ``prepared_for`` prepares a slot a few seconds ahead for
the prefire tests. ``slots`` and ``assert_exactly_once_no_gap`` read the fires
real ``runcron`` processes left in ``awa_jobs``.
"""

from __future__ import annotations

import itertools
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection

from awa_django import contract
from awa_django.leader import prefire
from awa_django.models import CronJob, Job
from awa_django.store.job_rows import job_row
from awa_django.store.schedule_rows import PlannedFire

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def plan_entry(
    row: CronJob, fires: list[datetime], next_fire_at: Any = None, prev: Any = "read"
) -> dict[str, Any]:
    """A fire-plan entry as the evaluator would build it from ``row``."""
    if prev == "read":
        prev = row.last_enqueued_at
    return {
        "name": row.name,
        "prev": prev.isoformat() if prev else None,
        "created_at": row.created_at.isoformat(),
        "cron_expr": row.cron_expr,
        "timezone": row.timezone,
        "missed_fire_policy": row.missed_fire_policy,
        "fires": [f.isoformat() for f in fires],
        "next_fire_at": (next_fire_at or (fires[-1] + timedelta(minutes=1) if fires else T0)).isoformat(),
    }


def planned(row: CronJob, fires: list[datetime], next_fire_at: Any = None, prev: Any = "read") -> PlannedFire:
    """The entry of :func:`plan_entry` as the evaluator hands it to ``firing.fire_plan``
    (no slot missed, no parking; the CAS token is the last fire, as the function
    takes it when none is given)."""
    entry = plan_entry(row, fires, next_fire_at, prev)
    return PlannedFire(
        name=entry["name"],
        prev=entry["prev"],
        created_at=entry["created_at"],
        prev_text=None,
        created_text=None,
        cron_expr=entry["cron_expr"],
        every_seconds=None,
        anchor=None,
        timezone=entry["timezone"],
        missed_fire_policy=entry["missed_fire_policy"],
        starting_deadline=None,
        fires=tuple(entry["fires"]),
        next_fire_at=entry["next_fire_at"],
    )


# The fire function ``fire`` calls; the SQL tests set it to each installed version.
CURRENT_FIRE = contract.current_function("awa_cron_fire")
FIRE = {"function": CURRENT_FIRE}


def fire(*entries: dict[str, Any]) -> list[dict[str, Any]]:
    """Call the fire function ``FIRE`` names with these plan entries: the jobs it inserted."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {FIRE['function']}(%s::jsonb)", [json.dumps(list(entries))])
        columns = [c.name for c in cursor.description]
        return [job_row(columns, r) for r in cursor.fetchall()]


def fresh(name: str) -> CronJob:
    """Schedule row ``name`` as stored now."""
    return CronJob.objects.get(name=name)


def set_slot(names: list[str], seconds_ahead: int) -> datetime:
    """Store the next whole second at least ``seconds_ahead`` away as these rows' next fire."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE awa_cron_jobs SET next_fire_at = date_trunc('second', clock_timestamp())"
            " + make_interval(secs => %s) WHERE name = ANY(%s) RETURNING next_fire_at",
            [seconds_ahead, names],
        )
        slot: datetime = cursor.fetchone()[0]
    return slot


def prepared_for(names: list[str], **kwargs: Any) -> prefire.Prepared:
    """Prepare the slot of ``names``; a machine stalled past the slot retries (60 s)."""
    deadline = time.monotonic() + 60
    while True:
        slot = set_slot(names, 2)
        prepared = prefire.prepare(ahead=30, **kwargs)
        if prepared is not None or time.monotonic() > deadline:
            assert prepared is not None, "nothing prepared"
            assert prepared.slot == slot
            return prepared


def slots(name: str) -> list[datetime]:
    """The fire slots of schedule ``name`` that landed in ``awa_jobs``."""
    values = Job.objects.filter(metadata__cron_name=name).values_list("metadata__cron_fire_at", flat=True)
    return [datetime.fromisoformat(v) for v in values]


def assert_exactly_once_no_gap(name: str, since: datetime | None = None) -> list[datetime]:
    """Every second from ``since`` fired once for ``name`` (at least two): its slots."""
    fired = slots(name)
    assert len(fired) == len(set(fired)), f"{name}: duplicate fires"
    window = sorted(f for f in fired if since is None or f >= since)
    assert len(window) >= 2, f"{name}: too few fires: {window}"
    gaps = [(a, b) for a, b in itertools.pairwise(window) if b - a != timedelta(seconds=1)]
    assert gaps == [], f"{name}: gaps {gaps}"
    return window
