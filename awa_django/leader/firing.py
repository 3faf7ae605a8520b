"""The fire statement: one call of ``awa_cron_fire_v8`` per batch of :class:`PlannedFire`.

The jobs it returns carry their ``args`` undecoded (:class:`~awa_django.db.jsonb.Deferred`)
until :func:`decode_args`: the firing thread never decodes a payload.

The evaluator (:mod:`.evaluator`) reads due rows and plans their fires; this
module sends a plan to the database, isolates a row whose values the
statement rejects anyway, and turns the returned ``awa_jobs`` rows into dicts.
Every fire is a compare-and-swap inside the statement, so sending a plan twice,
late, or from a deposed leader never enqueues a slot twice.
"""

from __future__ import annotations

import json
import logging
import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db import DataError, IntegrityError, InternalError, OperationalError

from .. import contract
from ..client import tracing
from ..conf import conf
from ..db import jsonb, sessions
from ..store import fires
from ..store.job_rows import job_row
from ..store.schedule_rows import PlannedFire

logger = logging.getLogger("awa_django.evaluator")

# Errors a value in one row can cause (constraint, bad data, a trigger's
# RAISE); anything else is not a row's fault.
ROW_FAULTS = (IntegrityError, DataError, InternalError)


@dataclass
class AtSlot:
    """When a prepared plan may fire: not before ``slot``, and not when the
    database reaches it more than ``stale`` seconds after (then nothing is
    fired and ``stale_seen`` is set)."""

    slot: datetime
    stale: float
    stale_seen: bool = False


# The entries a plan is sent as are JSON objects (``dict[str, Any]``:
# PlannedFire.as_json, to which tracing adds its carrier); the jobs returned
# are ``awa_jobs`` rows as the jobs' decoder (job_row) makes them.


class SerializedPlan(list[PlannedFire]):
    """A plan with its JSON made in advance (a prepared slot's batches are
    serialized before the slot, so only the statement runs after it) and,
    with ``at_slot``, sent by the query ``fire_plan_at_slot``. The text is
    used only while the plan is sent as it was made: entries re-built for
    tracing or sent one by one are serialized again."""

    def __init__(self, plan: list[PlannedFire], at_slot: AtSlot | None = None) -> None:
        super().__init__(plan)
        self.entries = [entry.as_json() for entry in plan]
        self.text = entries_text(self.entries)
        self.at_slot = at_slot


# A float JSON cannot hold, as the text PostgreSQL's float8 input reads.
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def plan_text(plan: Sequence[PlannedFire]) -> str:
    """A plan as the JSON the fire statement reads (see :func:`entries_text`)."""
    return entries_text([entry.as_json() for entry in plan])


def entries_text(entries: list[dict[str, Any]]) -> str:
    """Plan entries (as JSON objects) as the JSON text the fire statement reads.

    A row written by raw SQL may hold ``'NaN'`` or ``'Infinity'`` in a float
    column (``starting_deadline``, ``jitter``); its entry (the one that parks
    it) carries the value back for the statement to compare. JSON has no such
    number, so it is sent as the text float8 reads (``"NaN"``): the row is
    parked instead of the whole plan failing as invalid JSON.
    """
    try:
        return json.dumps(entries, allow_nan=False)
    except ValueError:
        return json.dumps([{k: _finite_or_text(v) for k, v in entry.items()} for entry in entries])


def _finite_or_text(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return _NON_FINITE[repr(value)]
    return value


def decode_args(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``jobs`` with their deferred ``args`` decoded (in place; returned for chaining)."""
    for job in jobs:
        args = job.get("args")
        if isinstance(args, jsonb.Deferred):
            job["args"] = args.value()
    return jobs


# The lock_timeout (ms) set on each fire connection, by its psycopg connection.
_bounded: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def _bound_waits(cursor: Any) -> None:
    """Bound what a fire statement waits on another transaction (AWA_LOCK_TIMEOUT).

    The fire takes no lock it would wait for (SKIP LOCKED), but a job insert
    waits for a transaction that is inserting a job with the same
    ``unique_key`` and has not committed. Set once per connection, for its
    session: these connections run fire statements only, or statements whose
    own waits are bounded the same way."""
    raw = cursor.db.connection
    milliseconds = max(1, round(conf.LOCK_TIMEOUT * 1000))
    # Inside a transaction the setting ends with it (rolled back, or reset at
    # its end): set it every time there.
    if raw is not None and _bounded.get(raw) == milliseconds and not cursor.db.in_atomic_block:
        return
    fires.set_lock_timeout(cursor, milliseconds)
    if raw is not None:
        _bounded[raw] = milliseconds


def _fire(cursor: Any, plan: Sequence[PlannedFire]) -> list[dict[str, Any]]:
    # Each firing entry in a trace of its own, carried into its jobs (a no-op
    # without OpenTelemetry, which then sends the very list it was given).
    made = plan if isinstance(plan, SerializedPlan) else None
    entries = made.entries if made is not None else [entry.as_json() for entry in plan]
    return tracing.fire_traced(entries, lambda sent: _send(cursor, sent, made, sent is entries))


def _send(
    cursor: Any, entries: list[dict[str, Any]], made: SerializedPlan | None, as_made: bool
) -> list[dict[str, Any]]:
    text = made.text if made is not None and as_made else entries_text(entries)
    if made is None or made.at_slot is None:
        columns, rows = fires.fire(cursor, text)
        return [job_row(columns, r, defer_args=True) for r in rows]
    at = made.at_slot
    fresh, (columns, rows) = fires.fire_at_slot(cursor, text, at.slot, at.stale)
    if not fresh:
        at.stale_seen = True
    return [job_row(columns, r, defer_args=True) for r in rows]


def _slot_passed(cursor: Any, plan: Sequence[PlannedFire]) -> bool:
    """For a plan sent at its slot: wait for the slot; False when it is stale."""
    at = plan.at_slot if isinstance(plan, SerializedPlan) else None
    if at is None:
        return True
    if fires.sleep_until_slot(cursor, at.slot, at.stale):
        return True
    at.stale_seen = True
    return False


def fire_plan(cursor: Any, plan: Sequence[PlannedFire]) -> list[dict[str, Any]]:
    """Run the set-based fire statement; if it fails anyway, isolate the row.

    Every value the statement uses was validated per row, so the fallback is
    a safety net for what validation cannot foresee (a user trigger on
    awa_jobs, a constraint added by hand): each entry then goes alone, and an
    entry whose own statement fails is parked with the database's message.
    Errors that are no row's fault (connection lost, a missing function or
    privilege, a timeout) propagate: the pass failed as a whole.
    """
    _bound_waits(cursor)  # outside the savepoints, which would undo it
    try:
        with sessions.savepoint_if_nested(cursor.db.alias):
            return _fire(cursor, plan)
    except (*ROW_FAULTS, OperationalError) as exc:
        if isinstance(exc, OperationalError) and not _lock_timed_out(exc):
            raise
        logger.warning(
            "fire statement failed (%s); firing row by row",
            (str(exc).strip().splitlines() or [""])[0],
            extra={"event": "cron.fire_isolated"},
        )
    jobs: list[dict[str, Any]] = []
    if not _slot_passed(cursor, plan):  # the statement failed before its sleep
        return jobs
    for entry in plan:
        try:
            with sessions.savepoint_if_nested(cursor.db.alias):
                jobs.extend(_fire(cursor, [entry]))
        except ROW_FAULTS as exc:
            _park_after_failure(cursor, entry, exc)
        except OperationalError as exc:
            if not _lock_timed_out(exc):
                raise
            _defer_after_timeout(entry, exc)
    return jobs


def _lock_timed_out(exc: Exception) -> bool:
    """A lock_timeout (55P03), not a cancel or a lost connection."""
    return getattr(exc.__cause__, "sqlstate", None) == "55P03"


def _defer_after_timeout(entry: PlannedFire, exc: Exception) -> None:
    """A row whose fire waited out AWA_LOCK_TIMEOUT on another transaction: not
    fired, not parked; the next pass tries it again (its slots are still due)."""
    logger.warning(
        "schedule %s not fired this pass: its fire waited over AWA_LOCK_TIMEOUT on another "
        "transaction (one inserting a job with the same unique_key?): %s",
        entry.name,
        (str(exc).strip().splitlines() or [""])[0],
        extra={"event": "cron.fire_deferred", "schedule": entry.name},
    )


def _park_after_failure(cursor: Any, entry: PlannedFire, exc: Exception) -> None:
    reason = f"fire statement failed: {(str(exc).strip().splitlines() or [''])[0]}"
    logger.error(
        "schedule %s cannot be fired and is parked: %s",
        entry.name,
        reason,
        extra={"event": "cron.parked", "schedule": entry.name, "reason": reason},
    )
    try:
        with sessions.savepoint_if_nested(cursor.db.alias):
            _fire(cursor, [replace(entry, fires=(), park=reason)])
    except ROW_FAULTS as park_exc:
        logger.error(
            "schedule %s cannot even be parked: %s",
            entry.name,
            park_exc,
            extra={"event": "cron.error", "schedule": entry.name},
        )


def log_fired(jobs: list[dict[str, Any]]) -> None:
    """One ``cron.fired`` record per committed job."""
    if not logger.isEnabledFor(logging.INFO):
        return
    for job in jobs:
        metadata = job["metadata"] if isinstance(job["metadata"], dict) else {}
        logger.info(
            "schedule %s fired for %s (job %s)",
            metadata.get(contract.CRON_NAME_KEY),
            metadata.get(contract.CRON_FIRE_AT_KEY),
            job["id"],
            extra={
                "event": "cron.fired",
                "schedule": metadata.get(contract.CRON_NAME_KEY),
                "fire_at": metadata.get(contract.CRON_FIRE_AT_KEY),
                "job_id": job["id"],
            },
        )
