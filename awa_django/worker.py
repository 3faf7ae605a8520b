"""The ``runtasks`` worker: claim ready jobs, run them, record the outcome.

Claims go through ``awa_claim_v1`` (``FOR UPDATE SKIP LOCKED``, priority then
``run_at`` order, paused queues skipped). Each claim is one *attempt*; every
report back (completion, failure, heartbeat) names the attempt, so a late
report from an attempt that was rescued after its worker was presumed dead
changes nothing. A LISTEN connection wakes the worker the moment jobs are
inserted; polling every ``AWA_POLL_INTERVAL`` is the fallback.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import random
import socket
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import (
    DatabaseError,
    DataError,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connections,
)
from django.tasks import task_backends
from django.tasks.base import TaskContext, TaskResultStatus
from django.tasks.signals import task_finished, task_started
from django.utils.json import normalize_json

from . import db, jobcontext, metrics
from .backend import AwaBackend, job_from_row, unstorable_reason
from .conf import conf
from .connections import listen_alias
from .evaluator import job_row
from .exceptions import TaskTimeout, UnstorableResult
from .health import Progress
from .leader import leader_connection
from .models import Job
from .runtime import RuntimeReporter
from .schedules import Schedule
from .shutdown import install_two_stage_shutdown
from .taskpaths import TaskNotHere, TaskNotRunnable, call_arguments, load_task

logger = logging.getLogger(__name__)

NOTIFY_CHANNEL = "awa_jobs"
WAIT_SLICE = 0.05  # seconds; bounds how late a freed slot is refilled
# A job whose task this process cannot import is handed back for this long:
# another deployment sharing the database (and queue) may be able to run it.
RELEASE_DELAY = timedelta(seconds=60)
REPORT_RETRY_MAX_DELAY = 2.0  # seconds between report retries, at most


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
class Attempt:
    """One claimed attempt being run in its own thread."""

    row: dict[str, Any]
    started: float = field(default_factory=time.monotonic)
    timed_out: bool = False

    @property
    def key(self) -> tuple[int, int]:
        return (int(self.row["id"]), int(self.row["attempt"]))


# How long a task thread waits for its next attempt before it ends.
RUNNER_IDLE_TIMEOUT = 30.0


def _drop_unusable_connections() -> None:
    """After an attempt, close this thread's connections a task may have left
    unusable (broken, inside a transaction, autocommit off); keep healthy ones
    for the next attempt."""
    for conn in connections.all(initialized_only=True):
        if conn.connection is None:
            continue
        if conn.in_atomic_block or not conn.get_autocommit() or (
                conn.errors_occurred and not conn.is_usable()):
            conn.close()


class _Runner(threading.Thread):
    """A task thread: runs the attempts handed to it, one at a time."""

    def __init__(self, worker: Worker) -> None:
        super().__init__(daemon=True, name="awa-task")
        self.worker = worker
        self.handoff: queue.SimpleQueue[Attempt | None] = queue.SimpleQueue()

    def run(self) -> None:
        try:
            while True:
                try:
                    attempt = self.handoff.get(timeout=RUNNER_IDLE_TIMEOUT)
                except queue.Empty:
                    if self.worker._runner_retire(self):
                        return
                    continue  # an attempt was handed over just now
                if attempt is None:
                    return
                self.worker._execute(attempt)
                # Back in the pool before the slot is announced, so the next
                # claim finds this thread (and its connection) idle.
                idle = self.worker._runner_idle(self)
                self.worker._slot_freed.set()
                self.worker._listener.wake()
                if not idle:
                    return  # the worker has stopped (e.g. an attempt that outlived its timeout)
        finally:
            close_old_connections()
            connections.close_all()


class Worker:
    """Run jobs from ``awa_jobs``. ``runtasks`` is a thin wrapper around this class."""

    def __init__(
        self,
        *,
        queues: list[str] | None = None,
        concurrency: int = 1,
        burst: bool = False,
        backend: str = "default",
        shutdown_timeout: float | None = None,
        schedules: list[Schedule] | None = None,
        max_tasks: int | None = None,
        worker_id: str | None = None,
    ) -> None:
        self.queues = queues or None
        self.concurrency = max(1, concurrency)
        self.burst = burst
        self.backend_alias = backend
        backend_obj = task_backends[backend]
        if not isinstance(backend_obj, AwaBackend):
            raise ValueError(f"task backend {backend!r} is not an awa_django.backend.AwaBackend")
        self.backend: AwaBackend = backend_obj
        self.using = self.backend.database
        self.shutdown_timeout = (
            float(conf.SHUTDOWN_TIMEOUT) if shutdown_timeout is None else shutdown_timeout
        )
        if worker_id is not None and (not worker_id.strip() or len(worker_id) > 200 or "\x00" in worker_id):
            raise ValueError("a worker id is 1-200 characters, not blank, no NUL")
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        if max_tasks is not None and max_tasks < 1:
            raise ValueError("max_tasks must be at least 1")
        self.max_tasks = max_tasks
        self.claimed_total = 0
        self.stop_requested = threading.Event()
        self._drained = threading.Event()  # set once no task can still be running
        self._running: dict[tuple[int, int], Attempt] = {}
        self._lock = threading.Lock()
        # Set whenever an attempt gives its slot back, so the claim loop
        # refills it at once instead of at its next polling slice (issue 10:
        # the 50 ms slice capped every slot at ~20 jobs/s).
        self._slot_freed = threading.Event()
        # Task threads waiting for their next attempt. A thread keeps its
        # database connection between attempts (a new thread per attempt
        # opened and closed one per job: most of a no-op job's cost).
        self._idle_runners: list[_Runner] = []
        self._runners_closed = False
        # Wakes the claim loop on a NOTIFY of new jobs, a freed slot or a stop.
        # After a failed LISTEN connect it polls for AWA_POLL_INTERVAL (no
        # reconnect storm while the database is down or failing over).
        self._listener = db.Listener(
            NOTIFY_CHANNEL,
            lambda: leader_connection(listen_alias(self.using), role="runtasks listener"),
            retry_after=float(conf.POLL_INTERVAL),
        )
        self.completed = 0
        self.failed = 0  # attempts whose task raised (or timed out, or could not run)
        self.abandoned = 0  # tasks still running when the shutdown timeout expired
        # runtasks declares the same schedules as runcron: in authoritative
        # mode every runtime of the owner is evidence for reconciliation.
        self.schedules = list(schedules or [])
        self.progress = Progress()  # health probes (see health.py)
        metrics.track_worker(self)

    # -- lifecycle -----------------------------------------------------------
    def stop(self) -> None:
        """Stop claiming; running tasks finish (bounded by the shutdown timeout)."""
        self.stop_requested.set()
        self._listener.wake()

    def install_signal_handlers(self) -> None:
        """First SIGTERM/SIGINT drains; a second one exits at once."""
        install_two_stage_shutdown(self.stop, "worker", "no new claims, finishing running tasks")

    def run(self) -> None:
        """Claim and run jobs until stopped (or, with ``burst``, until idle)."""
        reporter = RuntimeReporter("runtasks", self.schedules, queues=self.queues or [], using=self.using,
                                   progress=self.progress)
        logger.info("worker %s started (queues=%s, concurrency=%d)", self.worker_id,
                    self.queues or "all", self.concurrency, extra={"event": "worker.started"})
        reporter.start()  # raises (publishing nothing) on an ownership conflict
        heartbeat = threading.Thread(target=self._heartbeat_loop, name="awa-heartbeat", daemon=True)
        heartbeat.start()
        next_rescue = time.monotonic()
        try:
            while not self.stop_requested.is_set():
                self.progress.mark()
                if time.monotonic() >= next_rescue:
                    self.rescue()
                    next_rescue = time.monotonic() + float(conf.HEARTBEAT_INTERVAL)
                self._enforce_timeout()
                # Cleared before counting: a slot freed from here on wakes _wait.
                self._slot_freed.clear()
                free = self.concurrency - len(self._running)
                if self.max_tasks is not None:
                    free = min(free, self.max_tasks - self.claimed_total)
                claimed = self.claim(free) if free > 0 else []
                self.claimed_total += len(claimed)
                metrics.observe_claimed(claimed)
                for row in claimed:
                    self._submit(row)
                if not claimed and not self._running and (
                    self.burst or (self.max_tasks is not None and self.claimed_total >= self.max_tasks)
                ):
                    break
                if claimed and len(claimed) == free:
                    continue  # there may be more ready work
                self._wait(bool(claimed))
        finally:
            self.stop_requested.set()
            self.abandoned = self._drain()
            self._drained.set()
            self._stop_idle_runners()
            self._listener.close()
            # Task threads are daemons: past the shutdown timeout the caller
            # exits the process without them, and rescue retries them.
        heartbeat.join(timeout=5)
        reporter.stop()
        logger.info("worker %s stopped", self.worker_id, extra={"event": "worker.stopped"})

    # -- claiming ------------------------------------------------------------
    def claim(self, limit: int) -> list[dict[str, Any]]:
        """Claim up to ``limit`` ready jobs (one new attempt each)."""
        with db.reconnect_on_error(self.using, "claim", logger, "worker.error"):
            with connections[self.using].cursor() as cursor:
                cursor.execute("SELECT * FROM awa_claim_v1(%s, %s, %s)", [self.queues, limit, self.worker_id])
                columns = [c.name for c in cursor.description]
                return [job_row(columns, r) for r in cursor.fetchall()]
        time.sleep(min(1.0, float(conf.POLL_INTERVAL)))
        return []

    def rescue(self) -> None:
        """Return attempts whose worker stopped heartbeating to the queue."""
        with db.reconnect_on_error(self.using, "rescue", logger, "worker.error"), \
                connections[self.using].cursor() as cursor:
            cursor.execute(
                "SELECT id, attempt, state FROM awa_rescue_v1(%s)",
                [timedelta(seconds=float(conf.RESCUE_AFTER))],  # type: ignore[list-item]
            )
            for job_id, attempt, state in cursor.fetchall():
                metrics.observe_rescued(state)
                logger.warning("job %s attempt %s rescued -> %s", job_id, attempt, state,
                               extra={"event": "job.rescued", "job_id": job_id})

    def _wait(self, busy: bool) -> None:
        """Sleep until a NOTIFY, a freed slot, a stop request or the poll interval."""
        timeout = WAIT_SLICE if busy else float(conf.POLL_INTERVAL)
        if self._slot_freed.is_set():
            return  # a slot freed up (or, in burst mode, maybe the last one)
        if len(self._running) >= self.concurrency:
            # Every slot is busy: a NOTIFY could not be acted on anyway.
            self._slot_freed.wait(timeout)
            return
        self._listener.wait(timeout, self.stop_requested)

    # -- running -------------------------------------------------------------
    def _submit(self, row: dict[str, Any]) -> None:
        # An idle task thread if there is one, else a new one (not a fixed
        # pool): an attempt that outlived AWA_TASK_TIMEOUT gives its slot back
        # while its thread runs on, and the next attempt gets another thread.
        attempt = Attempt(row)
        with self._lock:
            self._running[attempt.key] = attempt
            runner = self._idle_runners.pop() if self._idle_runners else None
        if runner is None:
            runner = _Runner(self)
            runner.start()
        runner.handoff.put(attempt)

    def _runner_idle(self, runner: _Runner) -> bool:
        """Put ``runner`` back in the pool; False once the worker has stopped."""
        with self._lock:
            if self._runners_closed:
                return False
            self._idle_runners.append(runner)
            return True

    def _runner_retire(self, runner: _Runner) -> bool:
        """Take an idle ``runner`` out of the pool; False if an attempt was just handed to it."""
        with self._lock:
            if runner in self._idle_runners:
                self._idle_runners.remove(runner)
                return True
            return False

    def _stop_idle_runners(self) -> None:
        """Let idle task threads close their connections and end (bounded)."""
        with self._lock:
            self._runners_closed = True
            runners, self._idle_runners = self._idle_runners, []
        for runner in runners:
            runner.handoff.put(None)
        for runner in runners:
            runner.join(timeout=5)

    def _execute(self, attempt: Attempt) -> None:
        try:
            self.execute(attempt.row)
        except ReportAbandoned:
            pass  # already logged; rescue decides the attempt's fate
        except Exception:  # never lose the slot on a bug in reporting
            logger.exception("job %s: unexpected worker error", attempt.row["id"],
                             extra={"event": "worker.error"})
        finally:
            with self._lock:
                if self._running.get(attempt.key) is attempt:
                    self._running.pop(attempt.key, None)
            _drop_unusable_connections()

    def _enforce_timeout(self) -> None:
        """Fail attempts running longer than ``AWA_TASK_TIMEOUT`` and free their slots.

        Python cannot stop a thread: the task runs on, but its attempt is over
        (a later report is ignored by the attempt guard) and the slot is reused.
        """
        limit = conf.TASK_TIMEOUT
        if not limit:
            return
        now = time.monotonic()
        with self._lock:
            expired = [a for a in self._running.values() if now - a.started > float(limit)]
            for attempt in expired:
                attempt.timed_out = True
                self._running.pop(attempt.key, None)
        if expired:
            self._slot_freed.set()
            self._listener.wake()
        for attempt in expired:
            row = attempt.row
            exc = TaskTimeout(f"attempt {row['attempt']} of job {row['id']} ({row['kind']}) "
                              f"exceeded AWA_TASK_TIMEOUT ({limit}s)")
            try:
                self._fail(row, exc, None)
            except (ReportAbandoned, DatabaseError):
                logger.exception("job %s: cannot record its timeout", row["id"], extra={"event": "worker.error"})

    def execute(self, row: dict[str, Any]) -> str | None:
        """Run one claimed attempt and record its outcome; return the new state.

        Whatever the task does (return, raise any ``BaseException``, return
        something PostgreSQL cannot store), the attempt ends with a recorded
        outcome. None means the report was stale (the attempt was rescued).
        """
        job_id, attempt = int(row["id"]), int(row["attempt"])
        try:
            task = load_task(row["kind"])
            args, kwargs = call_arguments(row["args"])
        except TaskNotHere as exc:
            return self._release(row, exc)
        except TaskNotRunnable as exc:
            return self._fail_job(row, exc)
        result = self.backend.result_for(job_from_row(row), task)
        info = jobcontext.JobInfo(
            id=job_id, attempt=attempt, max_attempts=int(row["max_attempts"]), queue=row["queue"],
            kind=row["kind"], metadata=dict(row["metadata"] or {}),
        )
        try:
            # Inside the try: a task_started receiver that raises fails this
            # attempt instead of leaving it running.
            task_started.send(type(self.backend), task_result=result)
            with jobcontext.running(info):
                if task.takes_context:
                    value = task.call(TaskContext(task_result=result), *args, **kwargs)
                else:
                    value = task.call(*args, **kwargs)
            value = normalize_json(value)
            reason = unstorable_reason(value)
            if reason is not None:
                raise UnstorableResult(f"the return value of {row['kind']} {reason}")
            encoded = json.dumps(value, allow_nan=False)
        # The task's failure is data, not a worker crash: SystemExit,
        # KeyboardInterrupt (raised by the task, not a signal: signals go to
        # the main thread's handler) and any other BaseException end the attempt.
        except BaseException as exc:
            return self._fail(row, exc, result)
        try:
            state: str | None = self._report(
                "complete", row, "SELECT awa_complete_v1(%s, %s, %s::jsonb)", [job_id, attempt, encoded],
                done=("completed",),
            )
        except DataError as exc:  # e.g. a value jsonb refuses that we did not foresee
            return self._fail(row, UnstorableResult(f"PostgreSQL refused the return value: {exc}"), result)
        if state is None:
            logger.warning("job %s attempt %s finished after it was rescued; ignored", job_id, attempt,
                           extra={"event": "job.stale_report", "job_id": job_id})
            return None
        self.completed += 1
        metrics.observe_finished(row, "completed")
        logger.info("job %s (%s) completed", job_id, row["kind"], extra={"event": "job.completed", "job_id": job_id})
        finished = self._finished_result(row, task, result)
        object.__setattr__(finished, "status", TaskResultStatus.SUCCESSFUL)
        object.__setattr__(finished, "_return_value", value)
        self._send_finished(finished)
        return state

    def _send_finished(self, result: Any) -> None:
        """Send ``task_finished``; the outcome is already stored, so a failing receiver is only logged."""
        try:
            task_finished.send(type(self.backend), task_result=result)
        except Exception:
            logger.exception("job %s: a task_finished receiver raised", result.id,
                             extra={"event": "worker.error", "job_id": result.id})

    def _finished_result(self, row: dict[str, Any], task: Any, fallback: Any) -> Any:
        """The ``TaskResult`` as stored (finished_at, errors), for ``task_finished``."""
        try:
            job = Job.objects.using(self.using).get(id=int(row["id"]))
            return self.backend.result_for(job, task)
        except (DatabaseError, Job.DoesNotExist):
            return fallback

    def _report(self, what: str, row: dict[str, Any], sql: str, params: list[Any],
                done: tuple[str, ...]) -> Any:
        """Run an idempotent report, retrying on a fresh connection.

        A lost connection is retried for up to ``AWA_REPORT_RETRY_TIMEOUT``: the
        report functions are guarded by (id, attempt, state='running'), so
        running one twice cannot record two outcomes. When a retry finds the
        guard already spent, the row tells whether our earlier try committed.
        """
        deadline = time.monotonic() + float(conf.REPORT_RETRY_TIMEOUT)
        delay, tries = 0.1, 0
        while True:
            tries += 1
            try:
                with connections[self.using].cursor() as cursor:
                    cursor.execute(sql, params)
                    value = cursor.fetchone()[0]
                    if value is None and tries > 1 and done:
                        cursor.execute("SELECT state FROM awa_jobs WHERE id = %s AND attempt = %s",
                                       [int(row["id"]), int(row["attempt"])])
                        found = cursor.fetchone()
                        if found is not None and found[0] in done:
                            value = found[0]  # our lost try did commit
                    return value
            except (OperationalError, InterfaceError) as exc:
                connections[self.using].close()  # the next try opens a fresh connection
                if time.monotonic() + delay > deadline:
                    logger.error(
                        "job %s attempt %s: %s report abandoned after %d tries: %s",
                        row["id"], row["attempt"], what, tries, exc,
                        extra={"event": "job.report_abandoned", "job_id": row["id"]},
                    )
                    raise ReportAbandoned(what) from exc
                logger.warning("job %s attempt %s: %s report failed (%s); retrying on a fresh connection",
                               row["id"], row["attempt"], what, exc,
                               extra={"event": "job.report_retry", "job_id": row["id"]})
                time.sleep(delay)
                delay = min(delay * 2, REPORT_RETRY_MAX_DELAY)

    def _release(self, row: dict[str, Any], reason: TaskNotHere) -> str | None:
        """Hand back an attempt whose task module this process does not have.

        Without counting the attempt, for another deployment sharing the
        queue; once the job is older than ``AWA_UNKNOWN_TASK_TIMEOUT`` it fails.
        """
        give_up = max(0.0, float(conf.UNKNOWN_TASK_TIMEOUT))
        delay = min(RELEASE_DELAY, timedelta(seconds=max(1.0, give_up)))
        entry = error_entry(reason, int(row["attempt"]), self.worker_id)
        state: str | None = self._report(
            "release", row, "SELECT awa_release_v2(%s, %s, %s, %s, %s::jsonb)",
            [int(row["id"]), int(row["attempt"]), delay, timedelta(seconds=give_up), json.dumps(entry)],
            done=(),
        )
        if state is not None:
            metrics.observe_finished(row, state if state == "failed" else "released")
        if state == "failed":
            self.failed += 1
            logger.error("job %s failed: %s (not run here for AWA_UNKNOWN_TASK_TIMEOUT=%ss)",
                         row["id"], reason, give_up, extra={"event": "job.failed", "job_id": row["id"]})
        elif state is not None:
            logger.warning("job %s released for another worker: %s", row["id"], reason,
                           extra={"event": "job.released", "job_id": row["id"]})
        return state

    def _fail_job(self, row: dict[str, Any], exc: BaseException) -> str | None:
        """Fail the job for good: it can never run here (bad path, bad args)."""
        entry = error_entry(exc, int(row["attempt"]), self.worker_id)
        state: str | None = self._report(
            "fail", row, "SELECT awa_fail_job_v1(%s, %s, %s::jsonb)",
            [int(row["id"]), int(row["attempt"]), json.dumps(entry)], done=("failed",),
        )
        if state is not None:
            metrics.observe_finished(row, state)
            self.failed += 1
            logger.error("job %s failed: %s", row["id"], exc, extra={"event": "job.failed", "job_id": row["id"]})
        return state

    def _fail(self, row: dict[str, Any], exc: BaseException, result: Any) -> str | None:
        job_id, attempt = int(row["id"]), int(row["attempt"])
        entry = error_entry(exc, attempt, self.worker_id)
        failed_state: str | None = self._report(
            "fail", row, "SELECT awa_fail_v1(%s, %s, %s::jsonb, clock_timestamp() + %s)",
            [job_id, attempt, json.dumps(entry), timedelta(seconds=retry_delay(attempt))],
            done=("retryable", "failed"),
        )
        if failed_state is None:
            return None
        self.failed += 1
        state = failed_state
        metrics.observe_finished(row, state)
        # A BaseException that is not an Exception (SystemExit, KeyboardInterrupt,
        # GeneratorExit, custom) is never an ordinary failure: always ERROR, with
        # its traceback, so it is not mistaken for a crash of the worker.
        level = logging.ERROR if state == "failed" or not isinstance(exc, Exception) else logging.WARNING
        logger.log(level, "job %s (%s) attempt %s failed -> %s: %s: %s", job_id, row["kind"], attempt, state,
                   entry["exception_class_path"], exc, exc_info=not isinstance(exc, Exception),
                   extra={"event": f"job.{state}", "job_id": job_id})
        # task_finished marks the end of the task, not of one attempt: a
        # retryable failure is not finished yet.
        if result is not None and state == "failed":
            finished = self._finished_result(row, result.task, result)
            object.__setattr__(finished, "status", TaskResultStatus.FAILED)
            self._send_finished(finished)
        return state

    # -- heartbeats and shutdown ----------------------------------------------
    def _heartbeat_loop(self) -> None:
        """Every ``AWA_HEARTBEAT_INTERVAL``, stamp the attempts still running."""
        interval = float(conf.HEARTBEAT_INTERVAL)
        while not self._drained.wait(interval):
            with self._lock:
                keys = list(self._running)
            if not keys:
                continue
            ids, attempts = [k[0] for k in keys], [k[1] for k in keys]
            try:
                self._report(
                    "heartbeat", {"id": ids, "attempt": attempts},
                    "SELECT awa_heartbeat_v1(%s::bigint[], %s::integer[])", [ids, attempts], done=(),
                )
            except (ReportAbandoned, DatabaseError) as exc:
                logger.error("heartbeat failed: %s", exc, extra={"event": "worker.error"})
                connections[self.using].close()
        connections.close_all()

    def _drain(self) -> int:
        """Wait up to the shutdown timeout for running tasks; return how many remain."""
        deadline = time.monotonic() + self.shutdown_timeout
        while self._running and time.monotonic() < deadline:
            time.sleep(WAIT_SLICE)
        if self._running:
            logger.warning("%d task(s) still running at shutdown; they will be rescued",
                           len(self._running), extra={"event": "worker.abandoned"})
        return len(self._running)
