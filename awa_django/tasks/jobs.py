"""One typed function per SQL operation on ``awa_jobs`` (claim, report, rescue,
operator actions).

Each function takes an open cursor (Django's or psycopg's) and returns plain
values or rows as dicts; it neither opens nor closes connections, retries or
logs: the worker (:mod:`awa_django.tasks.outcomes`) and :mod:`awa_django.actions.queues`
decide that. Every report on an attempt is fenced by ``(id, attempt,
state = 'running')``: a late report from an attempt that was rescued (its
worker presumed dead) changes nothing and comes back as None or absent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, NamedTuple

from ..db import jsonb
from ..db.timestamps import JOB_TIMESTAMPS, TIMESTAMP_HIGH, TIMESTAMP_LOW
from ..scheduler.evaluator import job_row

# Jobs an operator may cancel: not yet running (a running attempt is owned by
# its worker; cancelling under it would race its completion).
CANCELLABLE = ("available", "scheduled", "retryable")
FINISHED = ("completed", "failed", "cancelled")
Row = dict[str, Any]


def job_rows(cursor: Any) -> list[Row]:
    """The cursor's remaining ``awa_jobs`` rows as dicts, JSON columns decoded."""
    columns = [c.name for c in cursor.description]
    return [job_row(columns, values) for values in cursor.fetchall()]


class Done(NamedTuple):
    """A finished attempt to complete: its job id, attempt and JSON-encoded return value."""

    id: int
    attempt: int
    result: str


def limits_param(limits: dict[str, dict[str, int]] | None) -> str | None:
    """The claim's ``p_limits`` (JSON text), None without queue limits."""
    return json.dumps(limits) if limits else None


TIMESTAMP_COLUMNS = JOB_TIMESTAMPS
# The column a claimed row carries when one of its timestamps is outside the
# range: what each such column holds, as the database writes it; else NULL.
INVALID = "invalid_timestamps"


def _in_range(column: str) -> str:
    return f"{column} BETWEEN '{TIMESTAMP_LOW}' AND '{TIMESTAMP_HIGH}'"


def safe_timestamp(column: str, only_if: str = "TRUE") -> str:
    """A select item reading ``column`` typed when a datetime can hold it, else NULL
    (psycopg fails to load '-infinity' or year 10000, and with it every row fetched)."""
    return f"CASE WHEN {only_if} AND {_in_range(column)} THEN {column} END AS {column}"


INVALID_SQL = (
    "NULLIF(concat_ws(', ', "
    + ", ".join(f"CASE WHEN NOT {_in_range(c)} THEN '{c} ' || {c}::text END" for c in TIMESTAMP_COLUMNS)
    + f"), '') AS {INVALID}"
)
JOB_COLUMNS = (
    "id", "attempt", "state", "kind", "queue", "args", "priority", "max_attempts", "errors", "result",
    "tags", "metadata", "worker_ids", "unique_key", "concurrency_key", "concurrency_limit",
)  # fmt: skip
# A claim's rows: every column, its timestamps loaded safely, plus INVALID.
CLAIM = (
    f"SELECT {', '.join(JOB_COLUMNS)}, {', '.join(safe_timestamp(c) for c in TIMESTAMP_COLUMNS)}, "
    f"{INVALID_SQL} FROM awa_claim_v3(%s, %s, %s, %s::jsonb)"
)


def invalid_timestamps(row: Row) -> str | None:
    """What makes a claimed row unloadable ("run_at -infinity, ..."), or None."""
    value = row.get(INVALID)
    return None if value is None else str(value)


def claim(
    cursor: Any,
    queues: Sequence[str] | None,
    limit: int,
    worker_id: str,
    limits: dict[str, dict[str, int]] | None = None,
) -> list[Row]:
    """Claim up to ``limit`` ready jobs in one statement (one new attempt each).

    Jobs whose concurrency key or queue (``limits``, from
    :func:`awa_django.tasks.limits.claim_limits`) has no room are passed over.
    A row holding a timestamp no datetime can hold (written by raw SQL) comes
    back with that timestamp None and :data:`INVALID` saying why: the worker
    fails that job alone (see :func:`invalid_timestamps`).
    """
    cursor.execute(
        CLAIM,
        [list(queues) if queues is not None else None, limit, worker_id, limits_param(limits)],
    )
    return job_rows(cursor)


def held_back(cursor: Any, queues: Sequence[str] | None, limited: Sequence[str]) -> bool:
    """Whether a ready job in ``queues`` waits only for flow control: it has a
    concurrency key, or its queue is one of the ``limited`` ones."""
    cursor.execute(
        """SELECT EXISTS (
               SELECT 1 FROM awa_jobs AS j
                WHERE j.state IN ('available', 'scheduled', 'retryable')
                  AND j.run_at <= clock_timestamp()
                  AND (%s::text[] IS NULL OR j.queue = ANY (%s::text[]))
                  AND (j.concurrency_key IS NOT NULL OR j.queue = ANY (%s::text[]))
                  AND NOT EXISTS (SELECT 1 FROM awa_queue_meta AS q
                                   WHERE q.queue = j.queue AND q.paused_at IS NOT NULL))""",
        [list(queues) if queues is not None else None] * 2 + [list(limited)],
    )
    return bool(cursor.fetchone()[0])


def complete(cursor: Any, done: Sequence[Done]) -> list[Row]:
    """Complete a batch of attempts in one statement; the rows completed.

    A stale attempt (rescued, cancelled, already reported) is not completed
    and not returned.
    """
    if not done:
        return []
    cursor.execute(
        "SELECT * FROM awa_complete_many_v1(%s::bigint[], %s::integer[], %s::jsonb[])",
        [[d.id for d in done], [d.attempt for d in done], [d.result for d in done]],
    )
    return job_rows(cursor)


# The combined statement's columns: a claimed row (state 'running') comes back
# whole, a completed one with only what its completion changed (id, attempt,
# state, finished_at): its other columns are the claimed row's, which the
# worker already holds, and NULLs cost nothing to load. Timestamps as in CLAIM.
CLAIMED_ONLY = (
    "kind", "queue", "args", "priority", "max_attempts", "run_at", "created_at", "attempted_at",
    "heartbeat_at", "errors", "result", "tags", "metadata", "worker_ids", "started_at",
    "unique_key", "concurrency_key", "concurrency_limit",
)  # fmt: skip
COMPLETED_COLUMNS = ("id", "attempt", "state", "finished_at")
COMPLETE_AND_CLAIM_COLUMNS = [*COMPLETED_COLUMNS, *CLAIMED_ONLY, INVALID]
COMPLETE_AND_CLAIM = (
    f"SELECT id, attempt, state, {safe_timestamp('finished_at')}, "
    + ", ".join(
        safe_timestamp(c, "state = 'running'")
        if c in TIMESTAMP_COLUMNS
        else f"CASE WHEN state = 'running' THEN {c} END AS {c}"
        for c in CLAIMED_ONLY
    )
    + f", CASE WHEN state = 'running' THEN {INVALID_SQL.removesuffix(f' AS {INVALID}')} END AS {INVALID}"
    + " FROM awa_complete_claim_v3(%s::bigint[], %s::integer[], %s::jsonb[], %s::text[], %s, %s, %s::jsonb)"
)


def complete_and_claim(
    cursor: Any,
    done: Sequence[Done],
    queues: Sequence[str] | None,
    limit: int,
    worker_id: str,
    limits: dict[str, dict[str, int]] | None = None,
) -> tuple[list[Row], list[Row]]:
    """Complete ``done`` and claim up to ``limit`` ready jobs, in one statement.

    Returns (the rows completed, the rows claimed). The completions are fenced
    as in :func:`complete`; a completed row holds only ``id``, ``attempt``,
    ``state`` and ``finished_at`` (see :data:`CLAIMED_ONLY`). Each claimed row
    is a new attempt, whole, as from :func:`claim`.
    """
    cursor.execute(
        COMPLETE_AND_CLAIM,
        [
            [d.id for d in done],
            [d.attempt for d in done],
            [d.result for d in done],
            list(queues) if queues is not None else None,
            max(0, limit),
            worker_id,
            limits_param(limits),
        ],
    )
    # The columns are known: no cursor.description (a new Column object per column and call).
    completed: list[Row] = []
    claimed: list[Row] = []
    for values in cursor.fetchall():
        if values[2] == "completed":
            completed.append(dict(zip(COMPLETED_COLUMNS, values[:4], strict=True)))
        else:
            claimed.append(job_row(COMPLETE_AND_CLAIM_COLUMNS, values))
    return completed, claimed


def completed(cursor: Any, done: Sequence[Done]) -> list[Row]:
    """The rows of ``done`` already completed by exactly these attempts.

    After a report whose connection broke, these tell which part of it did commit.
    """
    if not done:
        return []
    cursor.execute(
        "SELECT j.* FROM awa_jobs AS j JOIN unnest(%s::bigint[], %s::integer[]) AS d(id, attempt)"
        " ON j.id = d.id AND j.attempt = d.attempt WHERE j.state = 'completed'",
        [[d.id for d in done], [d.attempt for d in done]],
    )
    return job_rows(cursor)


def errors_limits() -> list[int]:
    """The bounds a job's ``errors`` are kept within when an entry is appended
    (``AWA_MAX_ARGS_BYTES``, ``AWA_MAX_JSON_DEPTH``): ``awa_errors_append_v1``
    drops the oldest entries, or entries no reader could decode, to stay there."""
    return [jsonb.max_bytes(), jsonb.max_depth()]


def _state(cursor: Any) -> str | None:
    row = cursor.fetchone()
    return None if row is None else row[0]


def fail(cursor: Any, job_id: int, attempt: int, error: dict[str, Any], retry_in: timedelta) -> str | None:
    """Record a failed attempt: 'retryable' (again in ``retry_in``) or 'failed'; None when stale."""
    cursor.execute(
        "SELECT awa_fail_v2(%s, %s, %s::jsonb, clock_timestamp() + %s, %s, %s)",
        [job_id, attempt, json.dumps(error), retry_in, *errors_limits()],
    )
    return _state(cursor)


def fail_job(cursor: Any, job_id: int, attempt: int, error: dict[str, Any]) -> str | None:
    """Fail the job for good, whatever attempts remain; 'failed', or None when stale."""
    cursor.execute(
        "SELECT awa_fail_job_v2(%s, %s, %s::jsonb, %s, %s)",
        [job_id, attempt, json.dumps(error), *errors_limits()],
    )
    return _state(cursor)


def release(
    cursor: Any, job_id: int, attempt: int, delay: timedelta, give_up_after: timedelta, error: dict[str, Any]
) -> str | None:
    """Hand an attempt back uncounted (or fail the job once older than ``give_up_after``).

    Returns the new state ('available', 'retryable' or 'failed'), None when stale.
    """
    cursor.execute(
        "SELECT awa_release_v3(%s, %s, %s, %s, %s::jsonb, %s, %s)",
        [job_id, attempt, delay, give_up_after, json.dumps(error), *errors_limits()],
    )
    return _state(cursor)


def state_of(cursor: Any, job_id: int, attempt: int) -> str | None:
    """The state of job ``job_id`` if its latest attempt is ``attempt``, else None."""
    cursor.execute("SELECT state FROM awa_jobs WHERE id = %s AND attempt = %s", [job_id, attempt])
    return _state(cursor)


def fetch(cursor: Any, job_id: int) -> Row | None:
    """The row of job ``job_id``, or None."""
    cursor.execute("SELECT * FROM awa_jobs WHERE id = %s", [job_id])
    rows = job_rows(cursor)
    return rows[0] if rows else None


def heartbeat(cursor: Any, keys: Sequence[tuple[int, int]]) -> int:
    """Stamp the running attempts ``(id, attempt)`` in one statement; how many were stamped."""
    if not keys:
        return 0
    cursor.execute(
        "SELECT awa_heartbeat_v1(%s::bigint[], %s::integer[])", [[k[0] for k in keys], [k[1] for k in keys]]
    )
    return int(cursor.fetchone()[0])


def rescue(cursor: Any, stale_after: timedelta) -> list[Row]:
    """Return to the queue (or fail) attempts not heartbeated for ``stale_after``; their rows.

    Row by row: a row whose stored ``errors`` cannot take the rescue's entry
    (not an array, nested too deep, too large) has them replaced or trimmed,
    with an ``ErrorsDropped`` entry saying why (see :func:`dropped_errors`),
    and is rescued all the same, like every other stale row.
    """
    cursor.execute("SELECT * FROM awa_rescue_v2(%s, %s, %s)", [stale_after, *errors_limits()])
    return job_rows(cursor)


ERRORS_DROPPED = "awa_django.exceptions.ErrorsDropped"


def dropped_errors(row: Row) -> str | None:
    """What ``awa_errors_append_v1`` said it dropped from ``row``'s errors when
    its latest attempt's error was appended, or None."""
    errors = row.get("errors")
    if not isinstance(errors, list):
        return None
    for entry in errors[:1]:  # the note, when there is one, comes first
        if (
            isinstance(entry, dict)
            and entry.get("exception_class_path") == ERRORS_DROPPED
            and entry.get("attempt") == row.get("attempt")
        ):
            return str(entry.get("traceback", ""))
    return None


def cancel(
    cursor: Any, actor: str, *, cron_name: str | None = None, ids: Sequence[int] | None = None
) -> list[int]:
    """Cancel the not-yet-running jobs of schedule ``cron_name`` or with ``ids``; their ids, sorted.

    The state is re-checked by the UPDATE itself, so a job a worker claimed
    meanwhile is left to its worker.
    """
    if (cron_name is None) == (ids is None):
        raise ValueError("cancel needs exactly one of cron_name and ids")
    param: Any
    if cron_name is not None:
        where, param = "metadata ->> 'cron_name' = %s AND metadata ? 'cron_name'", cron_name
    else:
        where, param = "id = ANY (%s)", [int(i) for i in ids or ()]
    cursor.execute(
        f"""
        UPDATE awa_jobs
           SET state = 'cancelled', finished_at = clock_timestamp(),
               errors = awa_errors_append_v1(errors, jsonb_build_object(
                   'exception_class_path', 'awa_django.exceptions.JobCancelled',
                   'traceback', 'cancelled by ' || %s), %s, %s)
         WHERE {where} AND state = ANY (%s)
        RETURNING id
        """,
        [actor, *errors_limits(), param, list(CANCELLABLE)],
    )
    return sorted(int(r[0]) for r in cursor.fetchall())


# The states in which a job holds its unique key, written as the predicate of
# the partial index awa_jobs_unique_key so that the planner uses that index.
_HOLDING = "h.state IN ('available', 'scheduled', 'running', 'retryable')"


def retry(cursor: Any, job_id: int) -> bool:
    """Make a failed or cancelled job available again, with one more attempt even if
    its budget was spent; False if it is not failed or cancelled, or if another
    unfinished job holds its unique key (see :func:`key_holder`)."""
    cursor.execute(
        f"""
        UPDATE awa_jobs AS j
           SET state = 'available', run_at = statement_timestamp(), finished_at = NULL,
               max_attempts = greatest(j.max_attempts, j.attempt + 1)
         WHERE j.id = %s AND j.state IN ('failed', 'cancelled')
           AND (j.unique_key IS NULL OR NOT EXISTS (
                SELECT 1 FROM awa_jobs AS h
                 WHERE h.unique_key = j.unique_key AND h.id <> j.id AND {_HOLDING}))
        """,
        [job_id],
    )
    return bool(cursor.rowcount)


def key_holder(cursor: Any, job_id: int) -> tuple[int, str] | None:
    """(id, unique key) of the unfinished job holding the unique key of the
    finished job ``job_id``, if one does."""
    cursor.execute(
        f"""
        SELECT h.id, h.unique_key FROM awa_jobs AS j
          JOIN awa_jobs AS h ON h.unique_key = j.unique_key AND h.id <> j.id AND {_HOLDING}
         WHERE j.id = %s AND j.state IN ('failed', 'cancelled')
         LIMIT 1
        """,
        [job_id],
    )
    row = cursor.fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def count_prunable(cursor: Any, age: timedelta) -> int:
    """How many finished jobs finished more than ``age`` ago."""
    cursor.execute(
        "SELECT count(*) FROM awa_jobs WHERE state = ANY (%s) AND finished_at < clock_timestamp() - %s",
        [list(FINISHED), age],
    )
    return int(cursor.fetchone()[0])


def prune_batch(cursor: Any, age: timedelta, limit: int) -> int:
    """Delete up to ``limit`` jobs finished more than ``age`` ago; how many were deleted.

    Through the awa_jobs_finished index: a short transaction, no long lock.
    Rows another session holds (a worker, an operator's retry) are skipped,
    never waited for, and the outer WHERE re-checks state and age on the row
    actually deleted: a job retried since the batch was chosen is never deleted.
    """
    cursor.execute(
        """DELETE FROM awa_jobs WHERE id IN (
               SELECT id FROM awa_jobs
                WHERE state = ANY (%s) AND finished_at < clock_timestamp() - %s
                LIMIT %s
                  FOR UPDATE SKIP LOCKED)
             AND state = ANY (%s) AND finished_at < clock_timestamp() - %s""",
        [list(FINISHED), age, limit, list(FINISHED), age],
    )
    return int(cursor.rowcount)
