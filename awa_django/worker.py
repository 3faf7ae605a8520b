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
import random
import socket
import threading
import time
import traceback
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import psycopg
from django.db import DatabaseError, InterfaceError, close_old_connections, connections
from django.tasks import task_backends
from django.tasks.base import TaskContext, TaskResultStatus
from django.tasks.signals import task_finished, task_started
from django.utils.json import normalize_json

from . import jobcontext, metrics
from .backend import AwaBackend, job_from_row, resolve_task
from .conf import conf
from .connections import listen_alias
from .evaluator import job_row
from .health import Progress
from .leader import leader_connection
from .runtime import RuntimeReporter
from .schedules import Schedule
from .shutdown import install_two_stage_shutdown

logger = logging.getLogger(__name__)

NOTIFY_CHANNEL = "awa_jobs"
WAIT_SLICE = 0.05  # seconds; bounds how late a freed slot is refilled
# A job whose task this process cannot import is handed back for this long:
# another deployment sharing the database (and queue) may be able to run it.
RELEASE_DELAY = timedelta(seconds=60)


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
    """One claimed attempt being run in the pool."""

    row: dict[str, Any]
    future: Future[None] | None = None

    @property
    def key(self) -> tuple[int, int]:
        return (int(self.row["id"]), int(self.row["attempt"]))


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
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.stop_requested = threading.Event()
        self._drained = threading.Event()  # set once no task can still be running
        self._running: dict[tuple[int, int], Attempt] = {}
        self._lock = threading.Lock()
        self._listen: psycopg.Connection[Any] | None = None
        # After a failed LISTEN connect, poll until then (no reconnect storm
        # while the database is down or failing over).
        self._listen_retry_at = 0.0
        self.completed = 0
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
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="awa-task")
        try:
            while not self.stop_requested.is_set():
                self.progress.mark()
                if time.monotonic() >= next_rescue:
                    self.rescue()
                    next_rescue = time.monotonic() + float(conf.HEARTBEAT_INTERVAL)
                free = self.concurrency - len(self._running)
                claimed = self.claim(free) if free > 0 else []
                metrics.observe_claimed(claimed)
                for row in claimed:
                    self._submit(pool, row)
                if self.burst and not claimed and not self._running:
                    break
                if claimed and len(claimed) == free:
                    continue  # there may be more ready work
                self._wait(bool(claimed))
        finally:
            self.stop_requested.set()
            self.abandoned = self._drain()
            self._drained.set()
            self._close_listen()
            # Past the shutdown timeout, do not wait for the stragglers:
            # the caller exits the process, and rescue retries them.
            pool.shutdown(wait=not self.abandoned, cancel_futures=True)
        heartbeat.join(timeout=5)
        reporter.stop()
        logger.info("worker %s stopped", self.worker_id, extra={"event": "worker.stopped"})

    # -- claiming ------------------------------------------------------------
    def claim(self, limit: int) -> list[dict[str, Any]]:
        """Claim up to ``limit`` ready jobs (one new attempt each)."""
        try:
            with connections[self.using].cursor() as cursor:
                cursor.execute("SELECT * FROM awa_claim_v1(%s, %s, %s)", [self.queues, limit, self.worker_id])
                columns = [c.name for c in cursor.description]
                return [job_row(columns, r) for r in cursor.fetchall()]
        except (DatabaseError, InterfaceError) as exc:
            logger.error("claim failed: %s", exc, extra={"event": "worker.error"})
            connections[self.using].close()
            time.sleep(min(1.0, float(conf.POLL_INTERVAL)))
            return []

    def rescue(self) -> None:
        """Return attempts whose worker stopped heartbeating to the queue."""
        try:
            with connections[self.using].cursor() as cursor:
                cursor.execute(
                    "SELECT id, attempt, state FROM awa_rescue_v1(%s)",
                    [timedelta(seconds=float(conf.RESCUE_AFTER))],  # type: ignore[list-item]
                )
                for job_id, attempt, state in cursor.fetchall():
                    metrics.observe_rescued(state)
                    logger.warning("job %s attempt %s rescued -> %s", job_id, attempt, state,
                                   extra={"event": "job.rescued", "job_id": job_id})
        except (DatabaseError, InterfaceError) as exc:
            logger.error("rescue failed: %s", exc, extra={"event": "worker.error"})
            connections[self.using].close()

    def _wait(self, busy: bool) -> None:
        """Sleep until a NOTIFY, a freed slot, or the poll interval."""
        deadline = time.monotonic() + (WAIT_SLICE if busy else float(conf.POLL_INTERVAL))
        start_running = len(self._running)
        while not self.stop_requested.is_set() and time.monotonic() < deadline:
            if len(self._running) < start_running and start_running >= self.concurrency:
                return  # a slot freed up
            conn = self._listen_connection()
            if conn is None:
                time.sleep(WAIT_SLICE)
                continue
            try:
                for _ in conn.notifies(timeout=WAIT_SLICE, stop_after=1):
                    return
            except psycopg.Error:
                self._close_listen()

    def _listen_connection(self) -> psycopg.Connection[Any] | None:
        if self._listen is None:
            if time.monotonic() < self._listen_retry_at:
                return None
            try:
                conn = leader_connection(listen_alias(self.using), role="runtasks listener")
                conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                self._listen = conn
            except psycopg.Error as exc:
                self._listen_retry_at = time.monotonic() + float(conf.POLL_INTERVAL)
                logger.warning("cannot LISTEN (%s); polling", exc, extra={"event": "worker.error"})
                return None
        return self._listen

    def _close_listen(self) -> None:
        conn, self._listen = self._listen, None
        if conn is not None:
            conn.close()

    # -- running -------------------------------------------------------------
    def _submit(self, pool: ThreadPoolExecutor, row: dict[str, Any]) -> None:
        attempt = Attempt(row)
        with self._lock:
            self._running[attempt.key] = attempt
        attempt.future = pool.submit(self._execute, attempt)

    def _execute(self, attempt: Attempt) -> None:
        try:
            self.execute(attempt.row)
        except Exception:  # never lose the slot on a bug in reporting
            logger.exception("job %s: unexpected worker error", attempt.row["id"],
                             extra={"event": "worker.error"})
        finally:
            with self._lock:
                self._running.pop(attempt.key, None)
            close_old_connections()

    def execute(self, row: dict[str, Any]) -> str | None:
        """Run one claimed attempt and record its outcome; return the new state."""
        job_id, attempt = int(row["id"]), int(row["attempt"])
        task = resolve_task(row["kind"])
        if task is None:
            return self._release(row)
        result = self.backend.result_for(job_from_row(row), task)
        task_started.send(type(self.backend), task_result=result)
        info = jobcontext.JobInfo(
            id=job_id, attempt=attempt, max_attempts=int(row["max_attempts"]), queue=row["queue"],
            kind=row["kind"], metadata=dict(row["metadata"] or {}),
        )
        args = list(row["args"].get("args", []))
        kwargs = dict(row["args"].get("kwargs", {}))
        try:
            with jobcontext.running(info):
                if task.takes_context:
                    value = task.call(TaskContext(task_result=result), *args, **kwargs)
                else:
                    value = task.call(*args, **kwargs)
            value = normalize_json(value)
            encoded = json.dumps(value, allow_nan=False)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # the task's failure is data, not a worker crash
            return self._fail(row, exc, result)
        with connections[self.using].cursor() as cursor:
            cursor.execute("SELECT awa_complete_v1(%s, %s, %s::jsonb)", [job_id, attempt, encoded])
            state: str | None = cursor.fetchone()[0]
        if state is None:
            logger.warning("job %s attempt %s finished after it was rescued; ignored", job_id, attempt,
                           extra={"event": "job.stale_report", "job_id": job_id})
            return None
        self.completed += 1
        metrics.observe_finished(row, "completed")
        logger.info("job %s (%s) completed", job_id, row["kind"], extra={"event": "job.completed", "job_id": job_id})
        object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
        object.__setattr__(result, "_return_value", value)
        task_finished.send(type(self.backend), task_result=result)
        return state

    def _release(self, row: dict[str, Any]) -> str | None:
        """Hand back an attempt this process cannot run, without counting it."""
        with connections[self.using].cursor() as cursor:
            cursor.execute(
                "SELECT awa_release_v1(%s, %s, %s)",
                [int(row["id"]), int(row["attempt"]), RELEASE_DELAY],  # type: ignore[list-item]
            )
            state: str | None = cursor.fetchone()[0]
        logger.warning(
            "job %s: task %s is not importable here; released for another worker",
            row["id"], row["kind"], extra={"event": "job.released", "job_id": row["id"]},
        )
        metrics.observe_finished(row, "released")
        return state

    def _fail(self, row: dict[str, Any], exc: BaseException, result: Any) -> str | None:
        job_id, attempt = int(row["id"]), int(row["attempt"])
        entry = error_entry(exc, attempt, self.worker_id)
        with connections[self.using].cursor() as cursor:
            cursor.execute(
                "SELECT awa_fail_v1(%s, %s, %s::jsonb, clock_timestamp() + %s)",
                [job_id, attempt, json.dumps(entry), timedelta(seconds=retry_delay(attempt))],  # type: ignore[list-item]
            )
            failed_state: str | None = cursor.fetchone()[0]
        if failed_state is None:
            return None
        state = failed_state
        metrics.observe_finished(row, state)
        logger.warning("job %s (%s) attempt %s failed -> %s: %s", job_id, row["kind"], attempt, state, exc,
                       extra={"event": f"job.{state}", "job_id": job_id})
        # task_finished marks the end of the task, not of one attempt: a
        # retryable failure is not finished yet.
        if result is not None and state == "failed":
            object.__setattr__(result, "status", TaskResultStatus.FAILED)
            task_finished.send(type(self.backend), task_result=result)
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
            try:
                with connections[self.using].cursor() as cursor:
                    cursor.execute(
                        "SELECT awa_heartbeat_v1(%s::bigint[], %s::integer[])",
                        [[k[0] for k in keys], [k[1] for k in keys]],
                    )
            except (DatabaseError, InterfaceError) as exc:
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
