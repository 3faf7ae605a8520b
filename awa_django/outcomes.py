"""How the ``runtasks`` worker records the outcome of each attempt.

Every report goes through :meth:`Outcomes.report`: a lost connection is
retried on a fresh one for up to ``AWA_REPORT_RETRY_TIMEOUT`` (the SQL in
:mod:`awa_django.jobs` is fenced by the attempt, so a retry cannot record two
outcomes). Successful attempts are completed in batches: the task thread that
finds no batch in flight stores every finished attempt waiting so far in one
statement, while the others go back to running tasks (a group commit).
``task_finished`` is sent once the batch is stored.
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
from typing import Any, TypeVar

from django.db import DatabaseError, DataError, InterfaceError, OperationalError, connections
from django.tasks import Task
from django.tasks.base import TaskResult, TaskResultStatus
from django.tasks.signals import task_finished

from . import jobs, metrics
from .backend import AwaBackend, job_from_row
from .conf import conf
from .exceptions import UnstorableResult
from .taskpaths import TaskNotHere

logger = logging.getLogger("awa_django.worker")

# A job whose task this process cannot import is handed back for this long:
# another deployment sharing the database (and queue) may be able to run it.
RELEASE_DELAY = timedelta(seconds=60)
REPORT_RETRY_MAX_DELAY = 2.0  # seconds between report retries, at most
T = TypeVar("T")
Row = dict[str, Any]


class ReportAbandoned(Exception):
    """A report could not reach the database within ``AWA_REPORT_RETRY_TIMEOUT`` (logged)."""


def retry_delay(attempt: int) -> float:
    """Exponential backoff with jitter: base * 2^(attempt-1), capped, x0.75-1.25."""
    base = float(conf.RETRY_BACKOFF)
    capped = min(float(conf.RETRY_BACKOFF_MAX), base * (2 ** max(0, attempt - 1)))
    delay: float = capped * random.uniform(0.75, 1.25)
    return delay


def error_entry(exc: BaseException, attempt: int, worker_id: str) -> dict[str, Any]:
    """The JSON stored in ``awa_jobs.errors`` for a failed attempt."""
    kind = type(exc)
    return {
        "exception_class_path": f"{kind.__module__}.{kind.__qualname__}",
        "traceback": "".join(traceback.format_exception(exc)),
        "attempt": attempt,
        "worker_id": worker_id,
    }


@dataclass
class Success:
    """An attempt whose task returned: what is left is to store its value."""

    row: Row
    task: Task[Any, Any]
    result: TaskResult[Any, Any]
    value: Any
    encoded: str  # the value as JSON

    @property
    def key(self) -> tuple[int, int]:
        return (int(self.row["id"]), int(self.row["attempt"]))

    @property
    def done(self) -> jobs.Done:
        return jobs.Done(int(self.row["id"]), int(self.row["attempt"]), self.encoded)


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
    def report(self, what: str, label: Any, op: Callable[[Any, bool], T]) -> T:
        """Run ``op(cursor, retried)``, retrying on a fresh connection while it fails to connect.

        ``retried`` tells ``op`` that an earlier try may have committed before
        its connection broke, so it should look at the rows, not only at what
        the fenced statement returned. Raises :class:`ReportAbandoned` after
        ``AWA_REPORT_RETRY_TIMEOUT``.
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
                if time.monotonic() + delay > deadline:
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
        self, what: str, row: Row, call: Callable[[Any], str | None], done: tuple[str, ...]
    ) -> str | None:
        """Report one attempt; when a retry finds the fence spent, the row tells
        whether our earlier try committed (its state is one of ``done``)."""
        job_id, attempt = int(row["id"]), int(row["attempt"])

        def op(cursor: Any, retried: bool) -> str | None:
            state = call(cursor)
            if state is None and retried and done:
                found = jobs.state_of(cursor, job_id, attempt)
                state = found if found in done else None
            return state

        return self.report(what, f"{job_id} attempt {attempt}", op)

    # -- completion ------------------------------------------------------------
    def store_done(self, done: Sequence[jobs.Done]) -> dict[tuple[int, int], Row]:
        """Complete ``done`` in one statement; the stored rows by (id, attempt)."""

        def op(cursor: Any, retried: bool) -> list[Row]:
            rows = jobs.complete(cursor, done)
            if retried:  # what our lost try committed is completed already
                got = {int(r["id"]) for r in rows}
                rows += jobs.completed(cursor, [d for d in done if d.id not in got])
            return rows

        label = ",".join(str(d.id) for d in done)
        return {(int(r["id"]), int(r["attempt"])): r for r in self.report("complete", label, op)}

    def complete(self, success: Success) -> str | None:
        """Complete one attempt now; its new state ('completed', or 'retryable'/'failed'
        when PostgreSQL refuses its value), None when stale."""
        return self._complete_batch([success])[success.key]

    def add(self, success: Success) -> None:
        """Queue ``success`` for the next batch; :meth:`flush` stores it."""
        with self._lock:
            self._waiting.append(success)

    def flush(self) -> None:
        """Store the waiting completions, batch after batch, unless a batch is in
        flight already (its thread takes the waiting ones next)."""
        with self._lock:
            if self._in_flight or not self._waiting:
                return
            self._in_flight, self._waiting = self._waiting, []
        while True:
            try:
                self._complete_batch(self._in_flight)
            except ReportAbandoned:
                pass  # logged; rescue decides these attempts' fate
            except Exception:  # never lose the batch on a bug in reporting
                logger.exception("unexpected error completing a batch", extra={"event": "worker.error"})
            with self._lock:
                self._in_flight, self._waiting = self._waiting, []
                if not self._in_flight:
                    self._idle.notify_all()
                    return

    def unreported(self) -> list[tuple[int, int]]:
        """Attempts finished but not yet completed (they still need heartbeats)."""
        with self._lock:
            return [s.key for s in self._waiting + self._in_flight]

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no completion is waiting or in flight; False on timeout."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._waiting and not self._in_flight, timeout)

    def _complete_batch(self, batch: Sequence[Success]) -> dict[tuple[int, int], str | None]:
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
        return {success.key: "completed" if success.key in stored else None for success in batch}

    def _completed(self, success: Success, stored: Row) -> None:
        with self._lock:
            self.completed += 1
        job_id = success.key[0]
        metrics.observe_finished(success.row, "completed")
        logger.info(
            "job %s (%s) completed",
            job_id,
            success.row["kind"],
            extra={"event": "job.completed", "job_id": job_id},
        )
        finished = self.backend.result_for(job_from_row(stored), success.task)
        object.__setattr__(finished, "status", TaskResultStatus.SUCCESSFUL)
        object.__setattr__(finished, "_return_value", success.value)
        self.send_finished(finished)

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
    def fail(self, row: Row, exc: BaseException, result: TaskResult[Any, Any] | None) -> str | None:
        """Record a failed attempt: retryable while attempts remain, else failed."""
        job_id, attempt = int(row["id"]), int(row["attempt"])
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
        metrics.observe_finished(row, state)
        # A BaseException that is not an Exception (SystemExit, KeyboardInterrupt,
        # GeneratorExit, custom) is never an ordinary failure: always ERROR, with
        # its traceback, so it is not mistaken for a crash of the worker.
        level = logging.ERROR if state == "failed" or not isinstance(exc, Exception) else logging.WARNING
        logger.log(
            level,
            "job %s (%s) attempt %s failed -> %s: %s: %s",
            job_id,
            row["kind"],
            attempt,
            state,
            entry["exception_class_path"],
            exc,
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

    def _stored_result(self, row: Row, fallback: TaskResult[Any, Any]) -> TaskResult[Any, Any]:
        """The ``TaskResult`` as stored (finished_at, errors), for ``task_finished``."""
        try:
            with connections[self.using].cursor() as cursor:
                stored = jobs.fetch(cursor, int(row["id"]))
        except DatabaseError:
            return fallback
        return fallback if stored is None else self.backend.result_for(job_from_row(stored), fallback.task)

    def fail_job(self, row: Row, exc: BaseException) -> str | None:
        """Fail the job for good: it can never run here (bad path, bad args)."""
        job_id, attempt = int(row["id"]), int(row["attempt"])
        entry = error_entry(exc, attempt, self.worker_id)
        state = self._fenced(
            "fail", row, lambda c: jobs.fail_job(c, job_id, attempt, entry), done=("failed",)
        )
        if state is not None:
            metrics.observe_finished(row, state)
            with self._lock:
                self.failed += 1
            logger.error("job %s failed: %s", job_id, exc, extra={"event": "job.failed", "job_id": job_id})
        return state

    def release(self, row: Row, reason: TaskNotHere) -> str | None:
        """Hand back an attempt whose task module this process does not have.

        Without counting the attempt, for another deployment sharing the
        queue; once the job is older than ``AWA_UNKNOWN_TASK_TIMEOUT`` it fails.
        """
        job_id, attempt = int(row["id"]), int(row["attempt"])
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
            metrics.observe_finished(row, state if state == "failed" else "released")
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
