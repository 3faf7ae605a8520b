"""The fire statement: one call of ``awa_cron_fire_v7`` per batch of plan entries.

The evaluator (:mod:`.evaluator`) reads due rows and plans their fires; this
module sends a plan to the database, isolates a row whose values the
statement rejects anyway, and turns the returned ``awa_jobs`` rows into dicts.
Every fire is a compare-and-swap inside the statement, so sending a plan twice,
late, or from a deposed leader never enqueues a slot twice.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.db import DataError, IntegrityError, InternalError

from ..db import jsonb, sessions
from ..tasks import tracing

logger = logging.getLogger("awa_django.evaluator")

FIRE = "SELECT * FROM awa_cron_fire_v7(%s::jsonb)"
# Errors a value in one row can cause (constraint, bad data, a trigger's
# RAISE); anything else is not a row's fault.
ROW_FAULTS = (IntegrityError, DataError, InternalError)
_JSON_COLUMNS = ("args", "metadata", "errors", "result")
# What a column that cannot be decoded reads as (its reason goes to args).
_EMPTY: dict[str, Any] = {"metadata": {}, "errors": []}


def job_row(columns: list[str], values: Any) -> dict[str, Any]:
    """A raw ``awa_jobs`` row as a dict, with JSON columns decoded.

    Django's psycopg adapters hand jsonb to Python as text (JSONField decodes it
    itself), so raw cursors must decode it here, through :func:`jsonb.decode`:
    a value too large, too deep or invalid never raises. ``args`` then holds an
    :class:`~awa_django.db.jsonb.Undecodable` naming the column (the worker
    fails such a job with that reason); so does a ``metadata`` that is not an
    object or ``errors`` not an array, which then read as empty, so the row's
    other readers go on.
    """
    job = dict(zip(columns, values, strict=True))
    for key in _JSON_COLUMNS:
        value = job.get(key)
        if isinstance(value, str):
            job[key] = jsonb.decode(value, key)
    for key, empty in _EMPTY.items():
        value = job.get(key)
        if key in job and value is not None and not isinstance(value, (type(empty), jsonb.Undecodable)):
            value = jsonb.Undecodable(key, f"is {jsonb.type_name(value)}, not {jsonb.type_name(empty)}")
        if isinstance(value, jsonb.Undecodable):
            job[key] = empty
            if not isinstance(job.get("args"), jsonb.Undecodable):
                job["args"] = value
    return job


def _fire(cursor: Any, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Each firing entry in a trace of its own, carried into its jobs (a no-op
    # without OpenTelemetry).
    return tracing.fire_traced(plan, lambda sent: _send(cursor, sent))


def _send(cursor: Any, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cursor.execute(FIRE, [json.dumps(plan)])
    columns = [c.name for c in cursor.description]
    return [job_row(columns, r) for r in cursor.fetchall()]


def fire_plan(cursor: Any, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run the set-based fire statement; if it fails anyway, isolate the row.

    Every value the statement uses was validated per row, so the fallback is
    a safety net for what validation cannot foresee (a user trigger on
    awa_jobs, a constraint added by hand): each entry then goes alone, and an
    entry whose own statement fails is parked with the database's message.
    Errors that are no row's fault (connection lost, a missing function or
    privilege, a timeout) propagate: the pass failed as a whole.
    """
    try:
        with sessions.savepoint_if_nested(cursor.db.alias):
            return _fire(cursor, plan)
    except ROW_FAULTS as exc:
        logger.warning(
            "fire statement failed (%s); firing row by row", exc, extra={"event": "cron.fire_isolated"}
        )
    jobs: list[dict[str, Any]] = []
    for entry in plan:
        try:
            with sessions.savepoint_if_nested(cursor.db.alias):
                jobs.extend(_fire(cursor, [entry]))
        except ROW_FAULTS as exc:
            _park_after_failure(cursor, entry, exc)
    return jobs


def _park_after_failure(cursor: Any, entry: dict[str, Any], exc: Exception) -> None:
    reason = f"fire statement failed: {(str(exc).strip().splitlines() or [''])[0]}"
    logger.error(
        "schedule %s cannot be fired and is parked: %s",
        entry["name"],
        reason,
        extra={"event": "cron.parked", "schedule": entry["name"], "reason": reason},
    )
    try:
        with sessions.savepoint_if_nested(cursor.db.alias):
            _fire(cursor, [{**entry, "fires": [], "park": reason}])
    except ROW_FAULTS as park_exc:
        logger.error(
            "schedule %s cannot even be parked: %s",
            entry["name"],
            park_exc,
            extra={"event": "cron.error", "schedule": entry["name"]},
        )


def log_fired(jobs: list[dict[str, Any]]) -> None:
    """One ``cron.fired`` record per committed job."""
    if not logger.isEnabledFor(logging.INFO):
        return
    for job in jobs:
        metadata = job["metadata"] if isinstance(job["metadata"], dict) else {}
        logger.info(
            "schedule %s fired for %s (job %s)",
            metadata.get("cron_name"),
            metadata.get("cron_fire_at"),
            job["id"],
            extra={
                "event": "cron.fired",
                "schedule": metadata.get("cron_name"),
                "fire_at": metadata.get("cron_fire_at"),
                "job_id": job["id"],
            },
        )
