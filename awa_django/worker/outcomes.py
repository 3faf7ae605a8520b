"""How the ``runtasks`` worker records the outcome of each attempt.

Every report goes through :meth:`Outcomes.report`: a lost connection is
retried on a fresh one for up to ``AWA_REPORT_RETRY_TIMEOUT`` (the SQL in
:mod:`awa_django.store.jobs` is fenced by the attempt, so a retry cannot
record two outcomes). Failures are recorded at once, by the task thread.

Successful attempts are completed in batches (a group commit): the task thread
that finds no batch in flight stores every finished attempt waiting so far in
one statement, while the others go back to running tasks. With a
:class:`Refill` (the worker), the same statement also claims the slots that
are free by then (``awa_complete_claim_v3``): one round trip and one
transaction both ends an attempt and starts the next, and the flushing thread
keeps one of the new attempts to run itself. ``task_finished`` is sent once
the batch is stored, after the new attempts were handed out.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol, TypeVar

from django.db import DatabaseError, DataError, InterfaceError, OperationalError, connections

from .. import bounded_text, metrics
from ..client.backend import AwaBackend
from ..client.compat import Task, TaskResult, TaskResultStatus, task_finished
from ..client.paths import TaskNotHere
from ..client.payloads import exception_text, storable_text
from ..client.results import to_task_result
from ..conf import conf
from ..exceptions import UnstorableResult
from ..store import jobs
from ..store.job_rows import JobRow
from ..store.jobs import Cursor

logger = logging.getLogger("awa_django.worker")

__all__ = ["Outcomes", "Refill", "ReportAbandoned", "Success", "error_entry", "retry_delay"]

# A job whose task this process cannot import is handed back for this long:
# another deployment sharing the database (and queue) may be able to run it.
RELEASE_DELAY = timedelta(seconds=60)
REPORT_RETRY_MAX_DELAY = 2.0  # seconds between report retries, at most
# An exception class's dotted path, as stored (a class's __qualname__ is code's to choose).
CLASS_PATH_MAX_CHARS = 300
T = TypeVar("T")
Key = tuple[int, int]


def _labels(row: JobRow) -> dict[str, str]:
    """What the metrics label an attempt's outcome with."""
    return {"queue": row.queue}


def retry_delay(attempt: int) -> float:
    """Exponential backoff with jitter: base * 2^(attempt-1), capped, x0.75-1.25."""
    base = float(conf.RETRY_BACKOFF)
    capped = min(float(conf.RETRY_BACKOFF_MAX), base * (2 ** max(0, attempt - 1)))
    delay: float = capped * random.uniform(0.75, 1.25)
    return delay


def error_entry(exc: BaseException, attempt: int, worker_id: str) -> dict[str, Any]:
    """The JSON stored in ``awa_jobs.errors`` for a failed attempt.

    Whatever the exception: its text may hold NUL or lone surrogates (written
    visibly, see :func:`~awa_django.client.payloads.storable_text`), its ``__str__``
    may raise (the class name stands in); storing the failure never fails.
    Its traceback (a message of any size, a chain of any length) is cut to
    ``AWA_ERROR_MAX_CHARS`` (:mod:`awa_django.bounded_text`), so the job's
    errors stay readable and its next attempt runs.
    """
    kind = type(exc)
    class_path = storable_text(
        bounded_text.cut(f"{kind.__module__}.{kind.__qualname__}", CLASS_PATH_MAX_CHARS)
    )
    try:
        text = bounded_text.cut_chunks(
            traceback.TracebackException.from_exception(exc, compact=True).format()
        )
    except Exception:  # e.g. a RecursionError on a pathological __cause__ chain
        message = bounded_text.cut(exception_text(exc))
        text = f"{class_path}: {message}\n(the traceback could not be formatted)\n"
    return {
        "exception_class_path": class_path,
        "traceback": storable_text(text),
        "attempt": attempt,
        "worker_id": worker_id,
    }


# SQLSTATE class of errors the same statement meets again on every try
# (program_limit_exceeded: stack depth, statement too complex): retrying
# would only hold the attempt's slot for AWA_REPORT_RETRY_TIMEOUT.
REPEATING_SQLSTATE_CLASSES = ("54",)


def repeats_on_retry(exc: BaseException) -> bool:
    """Whether the database error ``exc`` would recur if the same report were retried."""
    sqlstate = getattr(exc.__cause__, "sqlstate", None) or getattr(exc, "sqlstate", None)
    return isinstance(sqlstate, str) and sqlstate[:2] in REPEATING_SQLSTATE_CLASSES


class ReportAbandoned(Exception):
    """A report could not reach the database within ``AWA_REPORT_RETRY_TIMEOUT`` (logged)."""


@dataclass(slots=True)
class Success:
    """An attempt whose task returned: what is left is to store its value."""

    row: JobRow
    task: Task[Any, Any]
    result: TaskResult[Any, Any]
    value: Any
    encoded: str  # the value as JSON

    @property
    def key(self) -> Key:
        return (self.row.id, self.row.attempt)

    @property
    def done(self) -> jobs.Done:
        return jobs.Done(self.row.id, self.row.attempt, self.encoded)


class Refill(Protocol):
    """What a flush needs to claim the slots it frees (the worker)."""

    queues: list[str] | None

    def reserve(self) -> int:
        """How many attempts to claim now (reserved until :meth:`admit`)."""

    def admit(self, rows: list[JobRow], reserved: int, keep: bool, wake: bool = True) -> Any:
        """Start the attempts ``rows`` claimed for ``reserved`` slots; with
        ``keep``, one of them is returned for the calling thread to run."""

    def handoff(self, attempt: Any) -> None:
        """Run an admitted attempt in another task thread."""


class Outcomes:
    """Record attempts' outcomes for one worker; counts them for ``runtasks``' summary."""

    def __init__(self, backend: AwaBackend, worker_id: str) -> None:
        self.backend = backend
        self.using = backend.database
        self.worker_id = worker_id
        self.completed = 0
        self.failed = 0  # attempts whose task raised (or timed out, or could not run)
        self._lock = threading.Lock()
        self._waiting: list[Success] = []  # finished, not yet in a batch
        self._in_flight: list[Success] = []  # the batch being stored
        self._idle = threading.Condition(self._lock)

    # -- retries ---------------------------------------------------------------
    def report(self, what: str, label: Any, op: Callable[[Cursor, bool], T]) -> T:
        """Run ``op(cursor, retried)``, retrying on a fresh connection while it fails to connect.

        ``retried`` tells ``op`` that an earlier try may have committed before
        its connection broke, so it should look at the rows, not only at what
        the fenced statement returned. Raises :class:`ReportAbandoned` after
        ``AWA_REPORT_RETRY_TIMEOUT``, or at once on an error every retry would
        meet again (:func:`repeats_on_retry`).
        """
        deadline = time.monotonic() + float(conf.REPORT_RETRY_TIMEOUT)
        delay, tries = 0.1, 0
        while True:
            tries += 1
            try:
                with connections[self.using].cursor() as cursor:
                    return op(cursor, tries > 1)
            except (OperationalError, InterfaceError) as exc:
                connections[self.using].close()  # the next try opens a fresh connection
                if time.monotonic() + delay > deadline or repeats_on_retry(exc):
                    logger.error(
                        "job %s: %s report abandoned after %d tries: %s",
                        label,
                        what,
                        tries,
                        exc,
                        extra={"event": "job.report_abandoned", "job_id": label},
                    )
                    raise ReportAbandoned(what) from exc
                logger.warning(
                    "job %s: %s report failed (%s); retrying on a fresh connection",
                    label,
                    what,
                    exc,
                    extra={"event": "job.report_retry", "job_id": label},
                )
                time.sleep(delay)
                delay = min(delay * 2, REPORT_RETRY_MAX_DELAY)

    def _fenced(
        self, what: str, row: JobRow, call: Callable[[Cursor], str | None], done: tuple[str, ...]
    ) -> str | None:
        """Report one attempt; when a retry finds the fence spent, the row tells
        whether our earlier try committed (its state is one of ``done``)."""
        job_id, attempt = row.id, row.attempt

        def op(cursor: Cursor, retried: bool) -> str | None:
            state = call(cursor)
            if state is None and retried and done:
                found = jobs.state_of(cursor, job_id, attempt)
                state = found if found in done else None
            return state

        return self.report(what, f"{job_id} attempt {attempt}", op)

    def send_finished(self, result: TaskResult[Any, Any]) -> None:
        """Send ``task_finished``; the outcome is already stored, so a failing receiver is only logged."""
        try:
            task_finished.send(type(self.backend), task_result=result)
        except Exception:
            logger.exception(
                "job %s: a task_finished receiver raised",
                result.id,
                extra={"event": "worker.error", "job_id": result.id},
            )

    # -- failures --------------------------------------------------------------
    def fail(self, row: JobRow, exc: BaseException, result: TaskResult[Any, Any] | None) -> str | None:
        """Record a failed attempt: retryable while attempts remain, else failed."""
        job_id, attempt = row.id, row.attempt
        entry = error_entry(exc, attempt, self.worker_id)
        retry_in = timedelta(seconds=retry_delay(attempt))
        state = self._fenced(
            "fail",
            row,
            lambda c: jobs.fail(c, job_id, attempt, entry, retry_in),
            done=("retryable", "failed"),
        )
        if state is None:
            return None
        with self._lock:
            self.failed += 1
        metrics.observe_finished(_labels(row), state)
        # A BaseException that is not an Exception (SystemExit, KeyboardInterrupt,
        # GeneratorExit, custom) is never an ordinary failure: always ERROR, with
        # its traceback, so it is not mistaken for a crash of the worker. The
        # message, like the traceback (awa_django.logs), is cut to AWA_ERROR_MAX_CHARS.
        level = logging.ERROR if state == "failed" or not isinstance(exc, Exception) else logging.WARNING
        logger.log(
            level,
            "job %s (%s) attempt %s failed -> %s: %s: %s",
            job_id,
            row.kind,
            attempt,
            state,
            entry["exception_class_path"],
            # never exc itself: its __str__ may raise in the log handler
            bounded_text.cut(exception_text(exc)),
            exc_info=not isinstance(exc, Exception),
            extra={"event": f"job.{state}", "job_id": job_id},
        )
        # task_finished marks the end of the task, not of one attempt: a
        # retryable failure is not finished yet.
        if result is not None and state == "failed":
            finished = self._stored_result(row, result)
            object.__setattr__(finished, "status", TaskResultStatus.FAILED)
            self.send_finished(finished)
        return state

    def _stored_result(self, row: JobRow, fallback: TaskResult[Any, Any]) -> TaskResult[Any, Any]:
        """The ``TaskResult`` as stored (finished_at, errors), for ``task_finished``."""
        try:
            with connections[self.using].cursor() as cursor:
                stored = jobs.fetch(cursor, row.id)
        except DatabaseError:
            return fallback
        return fallback if stored is None else to_task_result(stored, self.backend.alias, fallback.task)

    def fail_job(self, row: JobRow, exc: BaseException) -> str | None:
        """Fail the job for good: it can never run here (bad path, bad args)."""
        job_id, attempt = row.id, row.attempt
        entry = error_entry(exc, attempt, self.worker_id)
        state = self._fenced(
            "fail", row, lambda c: jobs.fail_job(c, job_id, attempt, entry), done=("failed",)
        )
        if state is not None:
            metrics.observe_finished(_labels(row), state)
            with self._lock:
                self.failed += 1
            logger.error(
                "job %s failed: %s",
                job_id,
                bounded_text.cut(exception_text(exc)),
                extra={"event": "job.failed", "job_id": job_id},
            )
        return state

    def release(self, row: JobRow, reason: TaskNotHere) -> str | None:
        """Hand back an attempt whose task module this process does not have.

        Without counting the attempt, for another deployment sharing the
        queue; once the job is older than ``AWA_UNKNOWN_TASK_TIMEOUT`` it fails.
        """
        job_id, attempt = row.id, row.attempt
        give_up = max(0.0, float(conf.UNKNOWN_TASK_TIMEOUT))
        delay = min(RELEASE_DELAY, timedelta(seconds=max(1.0, give_up)))
        entry = error_entry(reason, attempt, self.worker_id)
        state = self._fenced(
            "release",
            row,
            lambda c: jobs.release(c, job_id, attempt, delay, timedelta(seconds=give_up), entry),
            done=(),
        )
        if state is not None:
            metrics.observe_finished(_labels(row), state if state == "failed" else "released")
        if state == "failed":
            with self._lock:
                self.failed += 1
            logger.error(
                "job %s failed: %s (not run here for AWA_UNKNOWN_TASK_TIMEOUT=%ss)",
                job_id,
                reason,
                give_up,
                extra={"event": "job.failed", "job_id": job_id},
            )
        elif state is not None:
            logger.warning(
                "job %s released for another worker: %s",
                job_id,
                reason,
                extra={"event": "job.released", "job_id": job_id},
            )
        return state

    def heartbeat(self, keys: Sequence[tuple[int, int]]) -> int:
        """Stamp the attempts ``keys`` still running (or awaiting completion); how many were stamped."""
        return self.report(
            "heartbeat", ",".join(str(k[0]) for k in keys), lambda c, _: jobs.heartbeat(c, keys)
        )

    # -- completions -----------------------------------------------------------
    def store_done(self, done: Sequence[jobs.Done]) -> dict[Key, JobRow]:
        """Complete ``done`` in one statement; the stored rows by (id, attempt)."""
        return self.store_and_claim(done, None, None)[0]

    def store_and_claim(
        self, done: Sequence[jobs.Done], queues: list[str] | None, limit: int | None
    ) -> tuple[dict[Key, JobRow], list[JobRow]]:
        """Complete ``done`` and claim up to ``limit`` jobs in one statement;
        (the stored rows by (id, attempt), the claimed rows). ``limit`` None:
        complete only (``awa_complete_many_v1``).

        A retry (the connection broke) completes only: whatever the lost try
        claimed, if it committed, is rescued once its heartbeat is stale, like
        a claim whose connection breaks.
        """

        def op(cursor: Cursor, retried: bool) -> tuple[list[JobRow], list[JobRow]]:
            claimed: list[JobRow] = []
            if limit is None:
                rows = jobs.complete(cursor, done)
            else:
                claim = 0 if retried else limit
                rows, claimed = jobs.complete_and_claim(
                    cursor, done, queues, claim, self.worker_id, self.backend.queue_limits
                )
            if retried:  # what our lost try committed is completed already
                got = {r.id for r in rows}
                rows += jobs.completed(cursor, [d for d in done if d.id not in got])
            return rows, claimed

        label = ",".join(str(d.id) for d in done)
        rows, claimed = self.report("complete", label, op)
        return {(r.id, r.attempt): r for r in rows}, claimed

    def complete(self, success: Success) -> str | None:
        """Complete one attempt now; its new state ('completed', or 'retryable'/'failed'
        when PostgreSQL refuses its value), None when stale."""
        return self._complete_batch([success])[success.key]

    def add(self, success: Success, release: Callable[[], None] | None = None) -> None:
        """Queue ``success`` for the next batch; :meth:`flush` stores it.

        ``release`` (giving its slot back) runs under the same lock: a batch
        that takes ``success`` reserves after its slot is free.
        """
        with self._lock:
            self._waiting.append(success)
            if release is not None:
                release()

    def flush(self, refill: Refill | None = None) -> Any:
        """Store the waiting completions, batch after batch, unless a batch is in
        flight already (its thread takes the waiting ones next).

        With ``refill``, each batch also claims the free slots; the attempt
        kept for this thread is returned (None: none, or no flush here).
        """
        with self._lock:
            if self._in_flight or not self._waiting:
                return None
            self._in_flight, self._waiting = self._waiting, []
        kept: Any = None
        while True:
            batch = self._in_flight
            reserved = refill.reserve() if refill is not None else 0
            limit = None if refill is None else reserved
            stored, claimed = self._store_batch(batch, refill.queues if refill else None, limit)
            if refill is not None:
                with self._lock:
                    last = not self._waiting
                kept = refill.admit(claimed, reserved, keep=last)
            self._finish_batch(batch, stored)
            with self._lock:
                self._in_flight, self._waiting = self._waiting, []
                if not self._in_flight:
                    self._idle.notify_all()
                    return kept
            if kept is not None and refill is not None:
                refill.handoff(kept)  # more to store first: another thread runs it
                kept = None

    def _store_batch(
        self, batch: Sequence[Success], queues: list[str] | None, limit: int | None
    ) -> tuple[dict[Key, JobRow] | bool, list[JobRow]]:
        """Store ``batch`` (claiming up to ``limit``): (the stored rows, the claimed rows).

        Instead of the rows: True when each attempt must be stored alone (a
        value PostgreSQL refused), False when nothing could be stored (logged).
        """
        done = [s.done for s in batch]
        try:
            return (self.store_done(done), []) if limit is None else self.store_and_claim(done, queues, limit)
        except DataError:  # a value jsonb refuses that we did not foresee: find it
            return True, []
        except ReportAbandoned:
            return False, []  # logged; rescue decides these attempts' fate
        except Exception:  # never lose the batch on a bug in reporting
            logger.exception("unexpected error completing a batch", extra={"event": "worker.error"})
            return False, []

    def _finish_batch(self, batch: Sequence[Success], stored: dict[Key, JobRow] | bool) -> None:
        """Count, log and announce (``task_finished``) the attempts of a stored batch."""
        if stored is True:
            for success in batch:
                try:
                    self._complete_batch([success])
                except ReportAbandoned:
                    pass  # logged; rescue decides this attempt's fate
                except Exception:  # never lose the rest of the batch on a bug in reporting
                    logger.exception(
                        "unexpected error completing an attempt", extra={"event": "worker.error"}
                    )
            return
        if stored is False:
            return
        for success in batch:
            row = stored.get(success.key)
            if row is None:
                logger.warning(
                    "job %s attempt %s finished after it was rescued; ignored",
                    *success.key,
                    extra={"event": "job.stale_report", "job_id": success.key[0]},
                )
                continue
            self._completed(success, row)

    def unreported(self) -> list[Key]:
        """Attempts finished but not yet completed (they still need heartbeats)."""
        with self._lock:
            return [s.key for s in self._waiting + self._in_flight]

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no completion is waiting or in flight; False on timeout."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._waiting and not self._in_flight, timeout)

    def _complete_batch(self, batch: Sequence[Success]) -> dict[Key, str | None]:
        """Complete ``batch``; each attempt's new state (None: stale, e.g. rescued meanwhile)."""
        try:
            stored = self.store_done([s.done for s in batch])
        except DataError as exc:  # a value jsonb refuses that we did not foresee: find it
            if len(batch) > 1:
                return {k: v for success in batch for k, v in self._complete_batch([success]).items()}
            state = self.fail(
                batch[0].row, UnstorableResult(f"PostgreSQL refused the return value: {exc}"), batch[0].result
            )
            return {batch[0].key: state}
        self._finish_batch(batch, stored)
        return {success.key: "completed" if success.key in stored else None for success in batch}

    def _completed(self, success: Success, stored: JobRow) -> None:
        with self._lock:
            self.completed += 1
        job_id = success.key[0]
        metrics.observe_finished(_labels(success.row), "completed")
        if logger.isEnabledFor(logging.INFO):
            logger.info(
                "job %s (%s) completed",
                job_id,
                success.row.kind,
                extra={"event": "job.completed", "job_id": job_id},
            )
        # The result task_started was sent with, marked finished: the
        # completion changed no other column, so no read back is needed.
        finished = success.result
        object.__setattr__(finished, "status", TaskResultStatus.SUCCESSFUL)
        object.__setattr__(finished, "finished_at", stored.finished_at)
        object.__setattr__(finished, "_return_value", success.value)
        self.send_finished(finished)
