"""One evaluation pass: find due schedules, fire them atomically.

"Now" is the database clock (``statement_timestamp()``), so leaders on hosts
with skewed clocks agree. Only rows whose stored ``next_fire_at`` is due (or
NULL, meaning "recompute") are read, through a partial index: an idle pass is
O(due), not O(all schedules). The due rows are read and planned in batches
of ``FIRE_BATCH_SIZE``, each fired by one call of ``awa_cron_fire_v8`` (see
:mod:`.firing`), which keeps the per-row compare-and-swap; the leader has the
calls run on a second connection while the next batch is planned
(:mod:`.pipeline`), and fires the rows of the next slot planned ahead (:mod:`.prefire`).

A row the evaluator cannot handle (a value written by raw SQL or an old
writer) is parked alone, with its reason in ``parked_reason``; the leader
re-evaluates parked rows at every maintenance run (``reevaluate_parked``),
except those whose stored payload measures are still over the limits: those
are evaluated again when their payload changes (the measure trigger).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.db import connections

from ..conf import conf
from ..cron import search
from ..db import jsonb
from ..store import schedules as store
from ..store.schedule_rows import NEVER, PlannedFire, ScheduleRow
from . import policies
from .firing import ROW_FAULTS, decode_args, fire_plan, log_fired
from .pipeline import FirePipeline
from .row_checks import PARSE_CACHE_SIZE, TIMESTAMP_HIGH, TIMESTAMP_LOW, max_args_bytes, row_problem

__all__ = [
    "NEVER",
    "ROW_FAULTS",
    "TIMESTAMP_HIGH",
    "TIMESTAMP_LOW",
    "PassResult",
    "PlannedFire",
    "ScheduleRow",
    "evaluate",
    "fire_plan",
    "plan_row",
    "reevaluate_parked",
    "row_problem",
]

logger = logging.getLogger("awa_django.evaluator")

# Rows per fire statement: large enough that the per-statement round trip is
# noise, small enough that a batch commits within tens of milliseconds.
FIRE_BATCH_SIZE = 500


@dataclass
class PassResult:
    """What one evaluation pass did."""

    evaluated: int = 0
    jobs: list[dict[str, Any]] = field(default_factory=list)  # empty when on_fired took them
    fired: int = 0  # jobs enqueued by the pass
    next_due_in: float | None = None  # seconds; None = nothing scheduled
    pending: bool = False  # some row awaits evaluation right now


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def _parsed_expression(text: str) -> search.CronExpression | str:
    """``search.parse_cron(text)``, or the CronError's message (cached either
    way: parse_cron is pure, its result depends on the text alone)."""
    try:
        return search.parse_cron(text)
    except search.CronError as exc:
        return str(exc)


def _entry(row: ScheduleRow) -> PlannedFire:
    """A plan entry with the row's CAS values and no fires yet."""
    return PlannedFire.from_row(row)


# The fields of an entry that depend only on the inputs of _fire_key.
_PLANNED = ("fires", "missed", "missed_count", "advance", "next_fire_at")
# What a memo keeps of an entry: those fields' values (``Any``: each field's own type).
Planned = dict[str, Any]


def park_entry(row: ScheduleRow, reason: str) -> PlannedFire:
    """A plan entry that parks ``row`` with ``reason``; logged once per reason."""
    if row.parked_reason != reason:
        logger.error(
            "schedule %s cannot be evaluated and is parked: %s",
            row.name,
            reason,
            extra={"event": "cron.parked", "schedule": row.name, "reason": reason},
        )
    else:
        logger.debug(
            "schedule %s is still parked: %s",
            row.name,
            reason,
            extra={"event": "cron.still_parked", "schedule": row.name},
        )
    return replace(_entry(row), park=reason)


# What a row's fires and next fire depend on. The cron search is pure,
# so rows sharing these inputs (the same expression, zone and policy, fired
# at the same slot: typical after the first pass) share the computation.
# ``Any``: the inputs are of several types (text, numbers, datetimes, None).
FireKey = tuple[Any, ...]


def _fire_key(row: ScheduleRow, limit: int) -> FireKey:
    last = row.last_enqueued_at
    return (
        row.cron_expr,
        row.every_seconds,
        row.anchor,
        row.timezone,
        row.missed_fire_policy,
        row.starting_deadline,
        last,
        row.created_at if last is None or row.every_seconds is not None else None,
        row.now,
        limit,
    )


def plan_row(
    row: ScheduleRow,
    limit: int,
    memo: dict[FireKey, Planned] | None = None,
    max_bytes: int | None = None,
) -> PlannedFire:
    """Compute the fires and the next fire of one row read by ``due_schedules_batch``.

    ``memo`` (one per batch) holds the fire times already computed for the
    same inputs (see ``_fire_key``). Never raises: a row that cannot be
    evaluated, for whatever reason, gets a parking entry instead, so it fails
    alone.
    """
    try:
        problem = row_problem(row, max_bytes)
        if problem:
            return park_entry(row, problem)
        if memo is None:
            return _plan_valid_row(row, limit)
        key = _fire_key(row, limit)
        known = memo.get(key)
        if known is None:
            entry = _plan_valid_row(row, limit)
            if entry.park is None:
                memo[key] = {k: getattr(entry, k) for k in _PLANNED}
            return entry
        _warn_catch_up_limit(row, len(known["fires"]) + known["missed_count"], limit)
        return replace(_entry(row), **known)
    except Exception as exc:  # one row must never fail the pass
        return park_entry(row, f"cannot be evaluated: {type(exc).__name__}: {exc}")


def plan_batch(rows: list[ScheduleRow], limit: int) -> list[PlannedFire]:
    """The plan entries of one batch of rows read by ``due_schedules_batch``.

    Every row of a batch shares its "now", so that is where inputs repeat:
    the memo of fire times lives for the batch, nothing is kept across batches.
    """
    memo: dict[FireKey, Planned] = {}
    max_bytes = max_args_bytes()
    return [plan_row(row, limit, memo, max_bytes) for row in rows]


def _timing(row: ScheduleRow, created_at: datetime) -> search.Timing | str:
    """The row's timing (its expression, or its interval), or why it has none."""
    if row.every_seconds is not None:
        return search.Interval(row.every_seconds, search.interval_anchor(row.anchor, created_at))
    return _parsed_expression(row.cron_expr or "")


def _plan_valid_row(row: ScheduleRow, limit: int) -> PlannedFire:
    # A row the checks passed has both (created_at is NOT NULL; an
    # out-of-range one, read as None, is parked by row_problem).
    created_at, now = row.created_at, row.now
    assert created_at is not None and now is not None
    expression = _timing(row, created_at)
    if isinstance(expression, str):
        return park_entry(row, expression)
    try:
        zone = search.parse_timezone(row.timezone)
    except search.CronError as exc:
        return park_entry(row, str(exc))
    last: datetime | None = row.last_enqueued_at
    fires = search.due_fires(
        expression,
        zone,
        last_enqueued_at=last,
        created_at=created_at,
        now=now,
        catch_up=row.missed_fire_policy == "catch_up",
        limit=limit,
    )
    _warn_catch_up_limit(row, len(fires), limit)
    # The new CAS token is the last due slot, fired or not.
    advance = fires[-1] if fires else None
    fires, missed = policies.split_deadline(fires, now, row.starting_deadline)
    # The next fire strictly after the new CAS token; for a never-fired row with
    # nothing due, after the (inclusive) first-fire search bound.
    after = advance or search.search_start(last, created_at)
    upcoming = search.next_fire(expression, zone, after)
    return replace(
        _entry(row),
        fires=tuple(f.isoformat() for f in fires),
        missed=tuple(f.isoformat() for f in missed[-policies.HISTORY :]),
        missed_count=len(missed),
        advance=advance.isoformat() if advance else None,
        next_fire_at=upcoming.isoformat() if upcoming else NEVER,
    )


def _warn_catch_up_limit(row: ScheduleRow, count: int, limit: int) -> None:
    if row.missed_fire_policy == "catch_up" and row.last_enqueued_at is not None and count >= limit:
        logger.warning(
            "schedule %s hit the catch-up limit (%d); the rest follow next pass",
            row.name,
            limit,
            extra={"event": "cron.catch_up_limited", "schedule": row.name},
        )


def evaluate(
    using: str = "default",
    on_fired: Callable[[list[dict[str, Any]]], None] | None = None,
    pipelined: bool = False,
) -> PassResult:
    """Run one evaluation pass on database ``using``; return what happened.

    With ``on_fired``, each batch's jobs are handed to it as soon as the
    batch's fire statement has run (committed, in autocommit) and are not kept
    in the result: a pass over 100,000 due rows holds one batch, not all jobs.
    Their ``args`` are then not decoded yet (``firing.decode_args`` does it):
    the firing thread's time does not grow with payload sizes.
    With ``pipelined`` too (the leader, in autocommit), the fire statements
    from the second batch on run on a second connection while the next batch
    is read and planned (see :mod:`.pipeline`).
    """
    result = PassResult()
    limit = int(conf.CATCH_UP_LIMIT)
    max_depth = jsonb.max_depth()
    pipeline: FirePipeline | None = None

    def fired(jobs: list[dict[str, Any]]) -> None:
        log_fired(jobs)
        if on_fired is None:
            result.jobs.extend(decode_args(jobs))
        else:
            on_fired(jobs)

    with connections[using].cursor() as cursor:
        try:
            after = ""
            while True:
                rows = store.due_batch(cursor, after, FIRE_BATCH_SIZE, max_depth)
                result.evaluated += len(rows)
                more = len(rows) == FIRE_BATCH_SIZE
                if (
                    pipeline is None
                    and more
                    and pipelined
                    and on_fired is not None
                    and not connections[using].in_atomic_block
                ):
                    pipeline = FirePipeline(using, _fire_batch, fired)
                if pipeline is not None:
                    pipeline.submit(plan_batch(rows, limit))
                elif rows:
                    jobs = _fire_batch(cursor, plan_batch(rows, limit))
                    result.fired += len(jobs)
                    fired(jobs)
                if not more:
                    break
                after = rows[-1].name
        finally:
            if pipeline is not None:
                result.fired += pipeline.finish()
        result.next_due_in, result.pending = store.next_due(cursor)
    return result


def _fire_batch(cursor: Any, plan: list[PlannedFire]) -> list[dict[str, Any]]:
    # Looked up at each call: tests replace fire_plan in this module.
    return fire_plan(cursor, plan)


def reevaluate_parked(using: str = "default") -> int:
    """Queue parked active rows for evaluation again; return how many.

    A row may be parked by one process only (a leader whose tz database
    lacks the row's zone); the leader calls this at election and every
    ``AWA_SYNC_INTERVAL``, so the next leader that can evaluate it does.
    A row whose stored measures put its payload over ``AWA_MAX_ARGS_BYTES``
    or ``AWA_MAX_JSON_DEPTH`` stays parked: the measures only change with the
    payload, and a changed payload queues the row itself (the trigger
    awa_cron_jobs_measure); re-reading it every sync would cost a pass its size.
    """
    with connections[using].cursor() as cursor:
        count = store.reevaluate_parked(cursor, max_args_bytes(), jsonb.max_depth())
    return count
