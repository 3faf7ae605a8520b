"""One evaluation pass: find due schedules, fire them atomically.

"Now" is the database clock (``statement_timestamp()``), so leaders on hosts
with skewed clocks agree. Only rows whose stored ``next_fire_at`` is due (or
NULL, meaning "recompute") are read, through a partial index: an idle pass is
O(due), not O(all schedules). All fires of a pass go to the database in one
call of ``awa_cron_fire_v2``, which keeps the per-row compare-and-swap.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connections

from . import cronexpr
from .conf import conf

logger = logging.getLogger(__name__)

# Rows needing evaluation: due, or awaiting a (re)computation. Two arms of a
# UNION ALL rather than an OR, so each is a range scan of the partial index
# awa_cron_jobs_due (an OR would make the planner filter the whole table).
SELECT_DUE = """
    SELECT name, cron_expr, timezone, missed_fire_policy, last_enqueued_at, created_at,
           statement_timestamp() AS now
      FROM awa_cron_jobs
     WHERE paused_at IS NULL AND retired_at IS NULL AND next_fire_at <= statement_timestamp()
    UNION ALL
    SELECT name, cron_expr, timezone, missed_fire_policy, last_enqueued_at, created_at,
           statement_timestamp() AS now
      FROM awa_cron_jobs
     WHERE paused_at IS NULL AND retired_at IS NULL AND next_fire_at IS NULL
     ORDER BY name
"""

# Seconds until the earliest stored next fire, and whether any row awaits a
# (re)computation (a concurrent change, or a CAS this pass lost).
SELECT_NEXT_DUE = """
    SELECT (SELECT EXTRACT(EPOCH FROM next_fire_at - statement_timestamp())::float8
              FROM awa_cron_jobs
             WHERE paused_at IS NULL AND retired_at IS NULL
               AND next_fire_at IS NOT NULL AND next_fire_at < '9999-12-31T00:00:00+00:00'
             ORDER BY next_fire_at LIMIT 1),
           EXISTS (SELECT 1 FROM awa_cron_jobs
                    WHERE paused_at IS NULL AND retired_at IS NULL AND next_fire_at IS NULL)
"""

# Schedules that have never fired search from created_at minus this (Awa): a
# schedule created at HH:MM:30 still gets its HH:MM:00 fire.
FIRST_FIRE_LOOKBACK = timedelta(seconds=60)
# Stored for a row that cannot be evaluated (bad expression written by raw SQL)
# or that never fires again, so it is not re-read every pass; any definition
# change resets it. Not 'infinity': Python datetimes (the ORM, the CLI, the
# admin) cannot represent it, while year 9999 loads fine.
NEVER = "9999-12-31T00:00:00+00:00"


@dataclass
class PassResult:
    """What one evaluation pass did."""

    evaluated: int = 0
    jobs: list[dict[str, Any]] = field(default_factory=list)
    next_due_in: float | None = None  # seconds; None = nothing scheduled
    pending: bool = False  # some row awaits evaluation right now


def plan_row(row: dict[str, Any], limit: int) -> dict[str, Any]:
    """Compute the fires and the next fire of one row read by ``SELECT_DUE``."""
    entry = {
        "name": row["name"],
        "prev": row["last_enqueued_at"].isoformat() if row["last_enqueued_at"] else None,
        "created_at": row["created_at"].isoformat(),
        "cron_expr": row["cron_expr"],
        "timezone": row["timezone"],
        "missed_fire_policy": row["missed_fire_policy"],
        "fires": [],
        "next_fire_at": NEVER,
    }
    try:
        expression = cronexpr.parse_cron(row["cron_expr"])
        zone = cronexpr.parse_timezone(row["timezone"])
    except cronexpr.CronError as exc:
        logger.error(
            "schedule %s cannot be evaluated: %s",
            row["name"],
            exc,
            extra={"event": "cron.invalid", "schedule": row["name"]},
        )
        return entry
    last: datetime | None = row["last_enqueued_at"]
    fires = cronexpr.due_fires(
        expression,
        zone,
        last_enqueued_at=last,
        created_at=row["created_at"],
        now=row["now"],
        catch_up=row["missed_fire_policy"] == "catch_up",
        limit=limit,
    )
    if row["missed_fire_policy"] == "catch_up" and last is not None and len(fires) >= limit:
        logger.warning(
            "schedule %s hit the catch-up limit (%d); the rest follow next pass",
            row["name"],
            limit,
            extra={"event": "cron.catch_up_limited", "schedule": row["name"]},
        )
    # The next fire strictly after the new CAS token; for a never-fired row with
    # nothing due, after the (inclusive) first-fire search bound.
    after = fires[-1] if fires else last
    if after is None:
        after = row["created_at"] - FIRST_FIRE_LOOKBACK - timedelta(microseconds=1)
    upcoming = cronexpr.next_fire(expression, zone, after)
    entry["fires"] = [f.isoformat() for f in fires]
    entry["next_fire_at"] = upcoming.isoformat() if upcoming else NEVER
    return entry


def job_row(columns: list[str], values: Any) -> dict[str, Any]:
    """A raw ``awa_jobs`` row as a dict, with JSON columns decoded.

    Django's psycopg adapters hand jsonb to Python as text (JSONField decodes it
    itself), so raw cursors must decode it here.
    """
    job = dict(zip(columns, values, strict=True))
    for key in ("args", "metadata", "errors", "result"):
        if isinstance(job.get(key), str):
            job[key] = json.loads(job[key])
    return job


def evaluate(using: str = "default") -> PassResult:
    """Run one evaluation pass on database ``using``; return what happened."""
    result = PassResult()
    limit = int(conf.CATCH_UP_LIMIT)
    with connections[using].cursor() as cursor:
        cursor.execute(SELECT_DUE)
        columns = [c.name for c in cursor.description]
        rows = [dict(zip(columns, r, strict=True)) for r in cursor.fetchall()]
        result.evaluated = len(rows)
        if rows:
            plan = [plan_row(row, limit) for row in rows]
            cursor.execute("SELECT * FROM awa_cron_fire_v2(%s::jsonb)", [json.dumps(plan)])
            columns = [c.name for c in cursor.description]
            result.jobs = [job_row(columns, r) for r in cursor.fetchall()]
        cursor.execute(SELECT_NEXT_DUE)
        result.next_due_in, result.pending = cursor.fetchone()
    for job in result.jobs:
        logger.info(
            "schedule %s fired for %s (job %s)",
            job["metadata"]["cron_name"],
            job["metadata"]["cron_fire_at"],
            job["id"],
            extra={
                "event": "cron.fired",
                "schedule": job["metadata"]["cron_name"],
                "fire_at": job["metadata"]["cron_fire_at"],
                "job_id": job["id"],
            },
        )
    return result
