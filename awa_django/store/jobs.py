"""One typed function per statement on ``awa_jobs``: claim, report, rescue,
operator verbs, prune.

Each function takes an open cursor (Django's or psycopg's) and returns plain
values or :class:`~awa_django.store.job_rows.JobRow` rows; it neither opens
nor closes connections, retries or logs: the worker and the operator verbs
decide that. The statements are named queries (``store/sql/jobs/``). Every
report on an attempt is fenced by ``(id, attempt, state = 'running')``: a late
report from an attempt that was rescued (its worker presumed dead) changes
nothing and comes back as None or absent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple, Protocol

from ..db import jsonb
from .job_rows import INVALID, JobRow
from .queries import query

__all__ = [
    "CANCELLABLE",
    "CLAIMED_ONLY",
    "COMPLETED_COLUMNS",
    "COMPLETE_AND_CLAIM_COLUMNS",
    "FINISHED",
    "Cursor",
    "Done",
    "Inserted",
    "NewJob",
    "cancel",
    "claim",
    "complete",
    "complete_and_claim",
    "completed",
    "count_prunable",
    "errors_limits",
    "fail",
    "fail_job",
    "fetch",
    "fetch_result",
    "heartbeat",
    "held_back",
    "insert",
    "insert_keyed",
    "invalid_timestamps",
    "job_rows",
    "key_holder",
    "prune_all",
    "prune_batch",
    "release",
    "rescue",
    "retry",
    "state",
    "state_of",
    "unique_key_holder_of",
]

# Jobs an operator may cancel: not yet running (spelled out again in the
# cancel queries, store/sql/jobs/operator.sql).
CANCELLABLE = ("available", "scheduled", "retryable")
FINISHED = ("completed", "failed", "cancelled")


class Cursor(Protocol):
    """What the store needs of a cursor: Django's ``CursorWrapper`` and psycopg's
    ``Cursor`` both qualify. Parameters and rows are ``Any`` because the two
    type them differently (sequences or mappings; tuples of any column type)."""

    @property
    def description(self) -> Any: ...

    @property
    def rowcount(self) -> int: ...

    def execute(self, sql: Any, params: Any = ...) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> Any: ...


def job_rows(cursor: Cursor) -> list[JobRow]:
    """The cursor's remaining ``awa_jobs`` rows, JSON columns decoded."""
    columns = [c.name for c in cursor.description]
    return [JobRow.from_row(columns, values) for values in cursor.fetchall()]


class Done(NamedTuple):
    """A finished attempt to complete: its job id, attempt and JSON-encoded return value."""

    id: int
    attempt: int
    result: str


def _limits(limits: dict[str, dict[str, int]] | None) -> str | None:
    """The claim's ``limits`` (JSON text), None without queue limits."""
    return json.dumps(limits) if limits else None


def _queues(queues: Sequence[str] | None) -> list[str] | None:
    return list(queues) if queues is not None else None


def claim(
    cursor: Cursor,
    queues: Sequence[str] | None,
    limit: int,
    worker_id: str,
    limits: dict[str, dict[str, int]] | None = None,
) -> list[JobRow]:
    """Claim up to ``limit`` ready jobs in one statement (one new attempt each).

    Jobs whose concurrency key or queue (``limits``, from
    :func:`awa_django.client.limits.claim_limits`) has no room are passed over.
    A row holding a timestamp no datetime can hold (written by raw SQL) comes
    back with that timestamp None and ``invalid_timestamps`` saying why: the
    worker fails that job alone.
    """
    params = {"queues": _queues(queues), "limit": limit, "worker_id": worker_id, "limits": _limits(limits)}
    cursor.execute(query("claim_jobs"), params)
    return job_rows(cursor)


def held_back(cursor: Cursor, queues: Sequence[str] | None, limited: Sequence[str]) -> bool:
    """Whether a ready job in ``queues`` waits only for flow control: it has a
    concurrency key, or its queue is one of the ``limited`` ones."""
    cursor.execute(query("jobs_held_back"), {"queues": _queues(queues), "limited": list(limited)})
    return bool(cursor.fetchone()[0])


def _done_arrays(done: Sequence[Done]) -> dict[str, list[Any]]:  # Any: ints or JSON text
    return {
        "ids": [d.id for d in done],
        "attempts": [d.attempt for d in done],
        "results": [d.result for d in done],
    }


def complete(cursor: Cursor, done: Sequence[Done]) -> list[JobRow]:
    """Complete a batch of attempts in one statement; the rows completed.

    A stale attempt (rescued, cancelled, already reported) is not completed
    and not returned.
    """
    if not done:
        return []
    cursor.execute(query("complete_jobs"), _done_arrays(done))
    return job_rows(cursor)


# The combined statement's columns (complete_and_claim_jobs), in its order: a
# claimed row (state 'running') comes back whole, a completed one with only
# COMPLETED_COLUMNS. A test compares this list with the statement's columns.
CLAIMED_ONLY = (
    "kind", "queue", "args", "priority", "max_attempts", "run_at", "created_at", "attempted_at",
    "heartbeat_at", "errors", "result", "tags", "metadata", "worker_ids", "started_at",
    "unique_key", "concurrency_key", "concurrency_limit",
)  # fmt: skip
COMPLETED_COLUMNS = ("id", "attempt", "state", "finished_at")
COMPLETE_AND_CLAIM_COLUMNS = (*COMPLETED_COLUMNS, *CLAIMED_ONLY, INVALID)


def complete_and_claim(
    cursor: Cursor,
    done: Sequence[Done],
    queues: Sequence[str] | None,
    limit: int,
    worker_id: str,
    limits: dict[str, dict[str, int]] | None = None,
) -> tuple[list[JobRow], list[JobRow]]:
    """Complete ``done`` and claim up to ``limit`` ready jobs, in one statement.

    Returns (the rows completed, the rows claimed). The completions are fenced
    as in :func:`complete`; a completed row holds only ``id``, ``attempt``,
    ``state`` and ``finished_at``. Each claimed row is a new attempt, whole,
    as from :func:`claim`.
    """
    params = {
        **_done_arrays(done),
        "queues": _queues(queues),
        "limit": max(0, limit),
        "worker_id": worker_id,
        "limits": _limits(limits),
    }
    cursor.execute(query("complete_and_claim_jobs"), params)
    # The columns are known: no cursor.description (a new Column object per column and call).
    completed: list[JobRow] = []
    claimed: list[JobRow] = []
    for values in cursor.fetchall():
        if values[2] == "completed":
            completed.append(JobRow(id=values[0], attempt=values[1], state=values[2], finished_at=values[3]))
        else:
            claimed.append(JobRow.from_row(COMPLETE_AND_CLAIM_COLUMNS, values))
    return completed, claimed


def completed(cursor: Cursor, done: Sequence[Done]) -> list[JobRow]:
    """The rows of ``done`` already completed by exactly these attempts.

    After a report whose connection broke, these tell which part of it did commit.
    """
    if not done:
        return []
    cursor.execute(
        query("completed_jobs"), {"ids": [d.id for d in done], "attempts": [d.attempt for d in done]}
    )
    return job_rows(cursor)


def errors_limits() -> dict[str, int]:
    """The bounds a job's ``errors`` are kept within when an entry is appended
    (``AWA_MAX_ARGS_BYTES``, ``AWA_MAX_JSON_DEPTH``): ``awa_errors_append_v1``
    drops the oldest entries, or entries no reader could decode, to stay there."""
    return {"max_bytes": jsonb.max_bytes(), "max_depth": jsonb.max_depth()}


def _state(cursor: Cursor) -> str | None:
    row = cursor.fetchone()
    return None if row is None else row[0]


# ``error``: an error entry, a JSON object whose values are any JSON value.
def fail(cursor: Cursor, job_id: int, attempt: int, error: dict[str, Any], retry_in: timedelta) -> str | None:
    """Record a failed attempt: 'retryable' (again in ``retry_in``) or 'failed'; None when stale."""
    params = {"id": job_id, "attempt": attempt, "error": json.dumps(error), "retry_in": retry_in}
    cursor.execute(query("fail_attempt"), {**params, **errors_limits()})
    return _state(cursor)


def fail_job(cursor: Cursor, job_id: int, attempt: int, error: dict[str, Any]) -> str | None:
    """Fail the job for good, whatever attempts remain; 'failed', or None when stale."""
    params = {"id": job_id, "attempt": attempt, "error": json.dumps(error)}
    cursor.execute(query("fail_job_for_good"), {**params, **errors_limits()})
    return _state(cursor)


def release(
    cursor: Cursor,
    job_id: int,
    attempt: int,
    delay: timedelta,
    give_up_after: timedelta,
    error: dict[str, Any],
) -> str | None:
    """Hand an attempt back uncounted (or fail the job once older than ``give_up_after``).

    Returns the new state ('available', 'retryable' or 'failed'), None when stale.
    """
    params = {"id": job_id, "attempt": attempt, "delay": delay, "give_up_after": give_up_after}
    cursor.execute(query("release_attempt"), {**params, "error": json.dumps(error), **errors_limits()})
    return _state(cursor)


def state_of(cursor: Cursor, job_id: int, attempt: int) -> str | None:
    """The state of job ``job_id`` if its latest attempt is ``attempt``, else None."""
    cursor.execute(query("job_attempt_state"), {"id": job_id, "attempt": attempt})
    return _state(cursor)


def fetch(cursor: Cursor, job_id: int) -> JobRow | None:
    """The row of job ``job_id``, or None."""
    cursor.execute(query("job_by_id"), {"id": job_id})
    rows = job_rows(cursor)
    return rows[0] if rows else None


def heartbeat(cursor: Cursor, keys: Sequence[tuple[int, int]]) -> int:
    """Stamp the running attempts ``(id, attempt)`` in one statement; how many were stamped."""
    if not keys:
        return 0
    cursor.execute(
        query("heartbeat_attempts"), {"ids": [k[0] for k in keys], "attempts": [k[1] for k in keys]}
    )
    return int(cursor.fetchone()[0])


def rescue(cursor: Cursor, stale_after: timedelta) -> list[JobRow]:
    """Return to the queue (or fail) attempts not heartbeated for ``stale_after``; their rows.

    Row by row: a row whose stored ``errors`` cannot take the rescue's entry
    (not an array, nested too deep, too large) has them replaced or trimmed,
    with an ``ErrorsDropped`` entry saying why (see :meth:`JobRow.dropped_errors`),
    and is rescued all the same, like every other stale row.
    """
    cursor.execute(query("rescue_stale_attempts"), {"stale_after": stale_after, **errors_limits()})
    return job_rows(cursor)


def cancel(
    cursor: Cursor, actor: str, *, cron_name: str | None = None, ids: Sequence[int] | None = None
) -> list[int]:
    """Cancel the not-yet-running jobs of schedule ``cron_name`` or with ``ids``; their ids, sorted.

    The state is re-checked by the UPDATE itself, so a job a worker claimed
    meanwhile is left to its worker.
    """
    if (cron_name is None) == (ids is None):
        raise ValueError("cancel needs exactly one of cron_name and ids")
    params: dict[str, Any] = {"actor": actor, **errors_limits()}  # values: text, ints, a list
    if cron_name is not None:
        cursor.execute(query("cancel_jobs_of_schedule"), {**params, "cron_name": cron_name})
    else:
        cursor.execute(query("cancel_jobs_by_id"), {**params, "ids": [int(i) for i in ids or ()]})
    return sorted(int(r[0]) for r in cursor.fetchall())


def retry(cursor: Cursor, job_id: int) -> bool:
    """Make a failed or cancelled job available again, with one more attempt even if
    its budget was spent; False if it is not failed or cancelled, or if another
    unfinished job holds its unique key (see :func:`key_holder`)."""
    cursor.execute(query("retry_finished_job"), {"id": job_id})
    return bool(cursor.rowcount)


def key_holder(cursor: Cursor, job_id: int) -> tuple[int, str] | None:
    """(id, unique key) of the unfinished job holding the unique key of the
    finished job ``job_id``, if one does."""
    cursor.execute(query("unique_key_holder"), {"id": job_id})
    row = cursor.fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def count_prunable(cursor: Cursor, age: timedelta) -> int:
    """How many finished jobs finished more than ``age`` ago."""
    cursor.execute(query("count_prunable_jobs"), {"age": age})
    return int(cursor.fetchone()[0])


def prune_batch(cursor: Cursor, age: timedelta, limit: int) -> int:
    """Delete up to ``limit`` jobs finished more than ``age`` ago; how many were deleted.

    Rows another session holds are skipped, never waited for, and a job
    retried since the batch was chosen is never deleted (``prune_jobs_batch``).
    """
    cursor.execute(query("prune_jobs_batch"), {"age": age, "limit": limit})
    return int(cursor.rowcount)


class NewJob(NamedTuple):
    """A job to insert: its JSON already encoded (``args``) or to encode (``metadata``)."""

    kind: str
    queue: str
    args: str
    priority: int
    # A JSON object: its values are any JSON value.
    metadata: dict[str, Any]
    run_after: datetime | None


class Inserted(NamedTuple):
    """What the database computed for an inserted job."""

    id: int
    state: str
    run_at: datetime
    created_at: datetime


def insert(cursor: Cursor, new: Sequence[NewJob], max_attempts: int) -> list[Inserted]:
    """Insert ``new`` in one statement; what the database computed, in call order."""
    if len(new) == 1:  # enqueue(): plain VALUES, no arrays to build and unnest
        one = new[0]
        params: dict[str, Any] = {  # values of the statement's several types
            **one._asdict(),
            "max_attempts": max_attempts,
            "metadata": json.dumps(one.metadata),
        }
        cursor.execute(query("insert_job"), params)
    else:
        params = {
            "max_attempts": max_attempts,
            "kinds": [j.kind for j in new],
            "queues": [j.queue for j in new],
            "args": [j.args for j in new],
            "priorities": [j.priority for j in new],
            "metadatas": [json.dumps(j.metadata) for j in new],
            "run_afters": [j.run_after for j in new],
        }
        cursor.execute(query("insert_jobs"), params)
    return [Inserted(*row) for row in sorted(cursor.fetchall())]


def insert_keyed(
    cursor: Cursor,
    new: NewJob,
    max_attempts: int,
    unique_key: str | None,
    concurrency_key: str | None,
    concurrency_limit: int | None,
) -> JobRow | None:
    """Insert ``new`` with its flow-control keys; its row, or None while an
    unfinished job holds ``unique_key`` (see :func:`unique_key_holder_of`)."""
    params: dict[str, Any] = {  # values of the statement's several types
        **new._asdict(),
        "max_attempts": max_attempts,
        "metadata": json.dumps(new.metadata),
        "unique_key": unique_key,
        "concurrency_key": concurrency_key,
        "concurrency_limit": concurrency_limit,
    }
    cursor.execute(query("insert_keyed_job"), params)
    rows = job_rows(cursor)
    return rows[0] if rows else None


def unique_key_holder_of(cursor: Cursor, unique_key: str) -> JobRow | None:
    """The unfinished job holding ``unique_key``, or None."""
    cursor.execute(query("unique_key_holder_of_key"), {"unique_key": unique_key})
    rows = job_rows(cursor)
    return rows[0] if rows else None


def fetch_result(cursor: Cursor, job_id: int) -> JobRow | None:
    """The row of job ``job_id`` with every timestamp loadable (None where no
    datetime holds it), or None when there is no such job."""
    cursor.execute(query("job_result_by_id"), {"id": job_id})
    rows = job_rows(cursor)
    return rows[0] if rows else None


def invalid_timestamps(cursor: Cursor, job_id: int) -> str | None:
    """What makes job ``job_id``'s row unloadable ("run_at -infinity, ..."), or None."""
    cursor.execute(query("job_invalid_timestamps"), {"id": job_id})
    row = cursor.fetchone()
    return None if row is None else row[0]


def state(cursor: Cursor, job_id: int) -> str | None:
    """Job ``job_id``'s state, None when there is no such job."""
    cursor.execute(query("job_state"), {"id": job_id})
    return _state(cursor)


# Jobs deleted per statement: short transactions, no long lock on a large table.
PRUNE_BATCH = 5000


def prune_all(cursor: Cursor, age: timedelta, batch: int = PRUNE_BATCH) -> int:
    """Delete every job finished more than ``age`` ago, ``batch`` at a time; how many."""
    deleted = 0
    while True:
        done = prune_batch(cursor, age, batch)
        deleted += done
        if done < batch:
            return deleted
