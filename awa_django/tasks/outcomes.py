"""How the ``runtasks`` worker records the outcome of each attempt.

Every report goes through :meth:`Outcomes.report`: a lost connection is
retried on a fresh one for up to ``AWA_REPORT_RETRY_TIMEOUT`` (the SQL in
:mod:`awa_django.jobs` is fenced by the attempt, so a retry cannot record two
outcomes). Successful attempts are completed in batches
(:mod:`awa_django.completions`).
"""

from __future__ import annotations

import logging
import random
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, TypeVar

from django.db import DatabaseError, InterfaceError, OperationalError, connections

from .. import metrics
from ..conf import conf
from . import jobs
from .backend import AwaBackend
from .compat import TaskResult, TaskResultStatus, task_finished
from .completions import Completions, ReportAbandoned, Success
from .paths import TaskNotHere
from .payloads import exception_text, storable_text

logger = logging.getLogger("awa_django.worker")

__all__ = ["Outcomes", "ReportAbandoned", "Success", "error_entry", "retry_delay"]

# A job whose task this process cannot import is handed back for this long:
# another deployment sharing the database (and queue) may be able to run it.
RELEASE_DELAY = timedelta(seconds=60)
REPORT_RETRY_MAX_DELAY = 2.0  # seconds between report retries, at most
T = TypeVar("T")
Row = dict[str, Any]


def retry_delay(attempt: int) -> float:
    """Exponential backoff with jitter: base * 2^(attempt-1), capped, x0.75-1.25."""
    base = float(conf.RETRY_BACKOFF)
    capped = min(float(conf.RETRY_BACKOFF_MAX), base * (2 ** max(0, attempt - 1)))
    delay: float = capped * random.uniform(0.75, 1.25)
    return delay


def error_entry(exc: BaseException, attempt: int, worker_id: str) -> dict[str, Any]:
    """The JSON stored in ``awa_jobs.errors`` for a failed attempt.

    Whatever the exception: its text may hold NUL or lone surrogates (written
    visibly, see :func:`~awa_django.payloads.storable_text`), its ``__str__``
    may raise (the class name stands in); storing the failure never fails.
    """
    kind = type(exc)
    class_path = storable_text(f"{kind.__module__}.{kind.__qualname__}")
    try:
        text = "".join(traceback.format_exception(exc))
    except Exception:  # e.g. a RecursionError on a pathological __cause__ chain
        text = f"{class_path}: {exception_text(exc)}\n(the traceback could not be formatted)\n"
    return {
        "exception_class_path": class_path,
        "traceback": storable_text(text),
        "attempt": attempt,
        "worker_id": worker_id,
    }


class Outcomes(Completions):
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
            exception_text(exc),  # never exc itself: its __str__ may raise in the log handler
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
        return fallback if stored is None else self.backend.result_from_row(stored, fallback.task)

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
            logger.error(
                "job %s failed: %s",
                job_id,
                exception_text(exc),
                extra={"event": "job.failed", "job_id": job_id},
            )
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
