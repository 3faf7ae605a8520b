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
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connections

from ..conf import conf
from ..cron import search
from ..db import jsonb
from ..db.sessions import dict_rows
from ..store.job_rows import job_row
from . import policies
from .firing import FIRE, ROW_FAULTS, decode_args, fire_plan, log_fired
from .pipeline import FirePipeline
from .row_checks import PARSE_CACHE_SIZE, TIMESTAMP_HIGH, TIMESTAMP_LOW, max_args_bytes, row_problem

__all__ = [
    "FIRE",
    "ROW_FAULTS",
    "TIMESTAMP_HIGH",
    "TIMESTAMP_LOW",
    "PassResult",
    "evaluate",
    "fire_plan",
    "job_row",
    "plan_row",
    "reevaluate_parked",
    "row_problem",
]

logger = logging.getLogger("awa_django.evaluator")

# Rows needing evaluation: due, or awaiting a (re)computation. Two arms of a
# UNION ALL rather than an OR, so each is a range scan of the partial index
# awa_cron_jobs_due (an OR would make the planner filter the whole table).
_DUE_COLUMNS = """
    name, cron_expr, every_seconds, timezone, missed_fire_policy, kind, parked_reason, starting_deadline,
    jitter,
    -- Timestamps a Python datetime (and the fire-time arithmetic) can hold come
    -- back typed; anything else ('infinity', year 0001 or 9999, BC) as NULL,
    -- with the text for the CAS and the parking reason. Reading 'infinity'
    -- typed would fail the whole query, i.e. the pass of every schedule.
    CASE WHEN last_enqueued_at BETWEEN '{low}' AND '{high}' THEN last_enqueued_at END
        AS last_enqueued_at,
    last_enqueued_at::text AS prev_text,
    CASE WHEN created_at BETWEEN '{low}' AND '{high}' THEN created_at END AS created_at,
    created_at::text AS created_text,
    CASE WHEN anchor BETWEEN '{low}' AND '{high}' THEN anchor END AS anchor,
    anchor::text AS anchor_text,
    -- The payload a fire copies into the job, described rather than loaded.
    jsonb_typeof(args) AS args_type,
    jsonb_typeof(args -> 'args') AS args_args_type,
    jsonb_typeof(args -> 'kwargs') AS args_kwargs_type,
    (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(
        CASE WHEN jsonb_typeof(args) = 'object' THEN args ELSE '{{}}' END) AS k) AS args_keys,
    -- Size and depth as measured when the payload was written (columns kept by
    -- the trigger awa_cron_jobs_measure, sql/0026_payload_measure.sql): a pass
    -- costs the same whatever the payloads' sizes. Measured here only for a
    -- row written with triggers disabled (its measures NULL).
    COALESCE(args_bytes, octet_length(args::text)) AS args_bytes,
    jsonb_typeof(metadata) AS metadata_type,
    COALESCE(metadata_bytes, octet_length(metadata::text)) AS metadata_bytes,
    -- Nesting depth up to %(max_depth)s + 1 when measured here: a value with no
    -- more opening brackets than the limit cannot be deeper (no call then).
    COALESCE(args_depth, {depth_args}) AS args_depth,
    COALESCE(metadata_depth, {depth_metadata}) AS metadata_depth,
    statement_timestamp() AS now
"""

# The columns every read of rows to plan selects (see plan_row); its
# parameter %(max_depth)s is AWA_MAX_JSON_DEPTH (row_checks.max_json_depth()).
_DEPTH = """CASE WHEN octet_length({column}::text) - octet_length(translate({column}::text, '[{{', ''))
              <= %(max_depth)s THEN 0 ELSE awa_json_depth_v1({column}, %(max_depth)s) END"""
DUE_COLUMNS = _DUE_COLUMNS.format(
    low=TIMESTAMP_LOW,
    high=TIMESTAMP_HIGH,
    depth_args=_DEPTH.format(column="args"),
    depth_metadata=_DEPTH.format(column="metadata"),
)

# Rows needing evaluation: due, or awaiting a (re)computation. Two arms of a
# UNION ALL rather than an OR, so each is a range scan of the partial index
# awa_cron_jobs_due (an OR would make the planner filter the whole table).
SELECT_DUE = f"""
    SELECT {DUE_COLUMNS}
      FROM awa_cron_jobs
     WHERE paused_at IS NULL AND retired_at IS NULL AND next_fire_at <= statement_timestamp()
    UNION ALL
    SELECT {DUE_COLUMNS}
      FROM awa_cron_jobs
     WHERE paused_at IS NULL AND retired_at IS NULL AND next_fire_at IS NULL
     ORDER BY name
"""

# One batch of SELECT_DUE: the due rows after a name (keyset), at most a limit.
# A large due set is fired batch by batch, each batch its own fire statement
# (committed at once in autocommit), so the first jobs land while later rows
# are still being planned and the leader never holds every due row in memory.
# Rows whose CAS is lost keep next_fire_at NULL; the keyset (name > last) is
# what stops a pass from reading them again.
SELECT_DUE_BATCH = f"""
    SELECT {DUE_COLUMNS}
      FROM awa_cron_jobs
     WHERE name = ANY(ARRAY(
        -- Names first (each arm stops at the limit, through an index), the
        -- described columns only for the batch: computing them for every
        -- due row before the LIMIT made a pass quadratic in the due rows.
        SELECT name FROM (
            (SELECT name FROM awa_cron_jobs
              WHERE paused_at IS NULL AND retired_at IS NULL
                AND next_fire_at <= statement_timestamp() AND name > %(after)s
              ORDER BY name LIMIT %(limit)s)
            UNION ALL
            (SELECT name FROM awa_cron_jobs
              WHERE paused_at IS NULL AND retired_at IS NULL
                AND next_fire_at IS NULL AND name > %(after)s
              ORDER BY name LIMIT %(limit)s)
        ) AS due ORDER BY name LIMIT %(limit)s))
     ORDER BY name
"""
# Rows per fire statement: large enough that the per-statement round trip is
# noise, small enough that a batch commits within tens of milliseconds.
FIRE_BATCH_SIZE = 500

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

# Stored for a row that cannot be evaluated (bad expression written by raw SQL)
# or that never fires again, so it is not re-read every pass; any definition
# change resets it. Not 'infinity': Python datetimes (the ORM, the CLI, the
# admin) cannot represent it, while year 9999 loads fine.
NEVER = "9999-12-31T00:00:00+00:00"


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


def _entry(row: dict[str, Any]) -> dict[str, Any]:
    """A plan entry with the row's CAS values and no fires yet."""
    return {
        "name": row["name"],
        "prev": row["last_enqueued_at"].isoformat() if row["last_enqueued_at"] else None,
        "created_at": row["created_at"].isoformat() if row["created_at"] else None,
        "prev_text": row["prev_text"],
        "created_text": row["created_text"],
        "cron_expr": row["cron_expr"],
        "every_seconds": row.get("every_seconds"),
        # As read (text), so the CAS also holds for a value a datetime cannot hold.
        "anchor": row.get("anchor_text"),
        "timezone": row["timezone"],
        "missed_fire_policy": row["missed_fire_policy"],
        "starting_deadline": row["starting_deadline"],
        "fires": [],
        "missed": [],
        "missed_count": 0,
        "advance": None,
        "next_fire_at": NEVER,
        "park": None,
    }


# The keys of an entry that depend only on the inputs of _fire_key.
_PLANNED = ("fires", "missed", "missed_count", "advance", "next_fire_at")


def park_entry(row: dict[str, Any], reason: str) -> dict[str, Any]:
    """A plan entry that parks ``row`` with ``reason``; logged once per reason."""
    entry = _entry(row)
    entry["park"] = reason
    if row.get("parked_reason") != reason:
        logger.error(
            "schedule %s cannot be evaluated and is parked: %s",
            row["name"],
            reason,
            extra={"event": "cron.parked", "schedule": row["name"], "reason": reason},
        )
    else:
        logger.debug(
            "schedule %s is still parked: %s",
            row["name"],
            reason,
            extra={"event": "cron.still_parked", "schedule": row["name"]},
        )
    return entry


# What a row's fires and next fire depend on. The cron search is pure,
# so rows sharing these inputs (the same expression, zone and policy, fired
# at the same slot: typical after the first pass) share the computation.
FireKey = tuple[Any, ...]


def _fire_key(row: dict[str, Any], limit: int) -> FireKey:
    last = row["last_enqueued_at"]
    return (
        row["cron_expr"],
        row.get("every_seconds"),
        row.get("anchor"),
        row["timezone"],
        row["missed_fire_policy"],
        row["starting_deadline"],
        last,
        row["created_at"] if last is None or row.get("every_seconds") is not None else None,
        row["now"],
        limit,
    )


def plan_row(
    row: dict[str, Any],
    limit: int,
    memo: dict[FireKey, dict[str, Any]] | None = None,
    max_bytes: int | None = None,
) -> dict[str, Any]:
    """Compute the fires and the next fire of one row read by ``SELECT_DUE``.

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
            if entry["park"] is None:
                memo[key] = {k: entry[k] for k in _PLANNED}
            return entry
        entry = _entry(row)
        entry.update({k: list(v) if isinstance(v, list) else v for k, v in known.items()})
        _warn_catch_up_limit(row, len(known["fires"]) + known["missed_count"], limit)
        return entry
    except Exception as exc:  # one row must never fail the pass
        return park_entry(row, f"cannot be evaluated: {type(exc).__name__}: {exc}")


def plan_batch(rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The plan entries of one batch of rows read by ``SELECT_DUE_BATCH``.

    Every row of a batch shares its "now", so that is where inputs repeat:
    the memo of fire times lives for the batch, nothing is kept across batches.
    """
    memo: dict[FireKey, dict[str, Any]] = {}
    max_bytes = max_args_bytes()
    return [plan_row(row, limit, memo, max_bytes) for row in rows]


def _timing(row: dict[str, Any]) -> search.Timing | str:
    """The row's timing (its expression, or its interval), or why it has none."""
    if row.get("every_seconds") is not None:
        return search.Interval(
            row["every_seconds"], search.interval_anchor(row.get("anchor"), row["created_at"])
        )
    return _parsed_expression(row["cron_expr"])


def _plan_valid_row(row: dict[str, Any], limit: int) -> dict[str, Any]:
    entry = _entry(row)
    expression = _timing(row)
    if isinstance(expression, str):
        return park_entry(row, expression)
    try:
        zone = search.parse_timezone(row["timezone"])
    except search.CronError as exc:
        return park_entry(row, str(exc))
    last: datetime | None = row["last_enqueued_at"]
    fires = search.due_fires(
        expression,
        zone,
        last_enqueued_at=last,
        created_at=row["created_at"],
        now=row["now"],
        catch_up=row["missed_fire_policy"] == "catch_up",
        limit=limit,
    )
    _warn_catch_up_limit(row, len(fires), limit)
    # The new CAS token is the last due slot, fired or not.
    advance = fires[-1] if fires else None
    fires, missed = policies.split_deadline(fires, row["now"], row["starting_deadline"])
    # The next fire strictly after the new CAS token; for a never-fired row with
    # nothing due, after the (inclusive) first-fire search bound.
    after = advance or search.search_start(last, row["created_at"])
    upcoming = search.next_fire(expression, zone, after)
    entry["fires"] = [f.isoformat() for f in fires]
    entry["missed"] = [f.isoformat() for f in missed[-policies.HISTORY :]]
    entry["missed_count"] = len(missed)
    entry["advance"] = advance.isoformat() if advance else None
    entry["next_fire_at"] = upcoming.isoformat() if upcoming else NEVER
    return entry


def _warn_catch_up_limit(row: dict[str, Any], count: int, limit: int) -> None:
    if row["missed_fire_policy"] == "catch_up" and row["last_enqueued_at"] is not None and count >= limit:
        logger.warning(
            "schedule %s hit the catch-up limit (%d); the rest follow next pass",
            row["name"],
            limit,
            extra={"event": "cron.catch_up_limited", "schedule": row["name"]},
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
                cursor.execute(
                    SELECT_DUE_BATCH, {"after": after, "limit": FIRE_BATCH_SIZE, "max_depth": max_depth}
                )
                rows = dict_rows(cursor)
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
                after = rows[-1]["name"]
        finally:
            if pipeline is not None:
                result.fired += pipeline.finish()
        cursor.execute(SELECT_NEXT_DUE)
        result.next_due_in, result.pending = cursor.fetchone()
    return result


def _fire_batch(cursor: Any, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
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
        # Rows another session holds are skipped (next time), never waited for.
        cursor.execute(
            "UPDATE awa_cron_jobs SET next_fire_at = NULL WHERE name IN ("
            " SELECT name FROM awa_cron_jobs"
            "  WHERE parked_at IS NOT NULL AND next_fire_at IS NOT NULL"
            "    AND paused_at IS NULL AND retired_at IS NULL"
            "    AND COALESCE(args_bytes <= %(bytes)s AND metadata_bytes <= %(bytes)s"
            "                 AND args_depth <= %(depth)s AND metadata_depth <= %(depth)s, true)"
            "  ORDER BY name FOR UPDATE SKIP LOCKED)",
            {"bytes": max_args_bytes(), "depth": jsonb.max_depth()},
        )
        count: int = cursor.rowcount
    return count
