"""Running one claimed attempt, and the task threads that run them.

:func:`run_attempt` imports the job's task, sends ``task_started``, calls it
and hands back a :class:`~awa_django.worker.outcomes.Success` to complete, or
records the failure itself. :class:`Runner` is a task thread of the worker's
pool: it keeps its database connection between attempts, and calls back into
the worker only through the :class:`Pool` protocol.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.db import close_old_connections, connections

from .. import jobcontext as context
from ..client import tracing
from ..client.compat import TaskContext, normalize_json, task_started
from ..client.paths import TaskNotHere, TaskNotRunnable, call_arguments, load_task
from ..client.payloads import payload_problem, unstorable_reason
from ..client.results import to_task_result
from ..db import sessions
from ..exceptions import InvalidJobRow, UnstorableResult
from ..store.job_rows import JobRow
from .outcomes import Outcomes, Success

logger = logging.getLogger("awa_django.worker")

# How long a task thread waits for its next attempt before it ends.
RUNNER_IDLE_TIMEOUT = 30.0
# A task thread whose connection sat unused this long checks it (one
# ``SELECT 1``) before its next attempt: meanwhile the server may have closed
# it (a restart, a failover, an idle timeout, a terminated backend), and a
# task should get a fresh connection rather than fail on the dead one.
CHECK_KEPT_CONNECTION_AFTER = 1.0


@dataclass
class Attempt:
    """One claimed attempt being run in its own thread."""

    row: JobRow
    started: float = field(default_factory=time.monotonic)
    timed_out: bool = False

    @property
    def key(self) -> tuple[int, int]:
        return (self.row.id, self.row.attempt)


def run_attempt(outcomes: Outcomes, row: JobRow) -> Success | str | None:
    """Run one claimed attempt: a :class:`Success` to complete, or the state its failure recorded.

    Whatever the task does (return, raise any ``BaseException``, return
    something PostgreSQL cannot store), the attempt ends with an outcome.
    None means the failure report was stale (the attempt was rescued).
    """
    invalid = row.invalid_timestamps
    if invalid is not None:
        # Loaded as None (see store.jobs.claim): the job fails alone, for good (the
        # stored value would fail every retry); the jobs claimed with it run.
        return outcomes.fail_job(
            row, InvalidJobRow(f"job {row.id} holds a timestamp no job can have ({invalid})")
        )
    try:
        task = load_task(row.kind)
        args, kwargs = call_arguments(row.args)
    except TaskNotHere as exc:
        return outcomes.release(row, exc)
    except TaskNotRunnable as exc:
        return outcomes.fail_job(row, exc)
    backend = outcomes.backend
    result = to_task_result(row, backend.alias, task)
    info = context.JobInfo(
        id=row.id,
        attempt=row.attempt,
        max_attempts=row.max_attempts,
        queue=row.queue,
        kind=row.kind,
        metadata=dict(row.metadata or {}),
    )
    try:
        # The attempt's span covers the task and the checks of its return value.
        with tracing.attempt_span(row):
            # Inside the try: a task_started receiver that raises fails this
            # attempt instead of leaving it running.
            task_started.send(type(backend), task_result=result)
            with context.running(info):
                if task.takes_context:
                    value = task.call(TaskContext(task_result=result), *args, **kwargs)
                else:
                    value = task.call(*args, **kwargs)
            if value is None:
                encoded = "null"  # most tasks return nothing: no normalising, checking, encoding
            else:
                value = normalize_json(value)
                encoded = _encoded(row, value)
    # The task's failure is data, not a worker crash: SystemExit,
    # KeyboardInterrupt (raised by the task, not a signal: signals go to
    # the main thread's handler) and any other BaseException end the attempt.
    except BaseException as exc:
        return outcomes.fail(row, exc, result)
    return Success(row, task, result, value, encoded)


def _encoded(row: JobRow, value: Any) -> str:
    """``value`` (JSON-normalised) as the JSON text stored; UnstorableResult if jsonb would refuse it."""
    reason = unstorable_reason(value)
    if reason is not None:
        raise UnstorableResult(f"the return value of {row.kind} {reason}")
    text = json.dumps(value, allow_nan=False)
    reason = payload_problem(text)
    if reason is not None:
        raise UnstorableResult(f"the return value of {row.kind} {reason}")
    return text


def replace_dead_connections() -> None:
    """Close this thread's kept connections the server no longer answers on;
    the next use opens a fresh one. Never raises: whatever the check meets,
    the attempt in hand still runs (on a fresh connection)."""
    for conn in connections.all(initialized_only=True):
        if conn.connection is None:
            continue
        try:
            usable = conn.is_usable()
        except Exception:  # e.g. a driver error outside Database.Error
            usable = False
        if not usable:
            try:
                conn.close()
            except Exception:
                logger.debug(
                    "closing a dead connection failed", exc_info=True, extra={"event": "worker.error"}
                )


def drop_unusable_connections() -> None:
    """After an attempt, close this thread's connections a task may have left
    unusable (broken, inside a transaction, autocommit off); keep healthy ones
    for the next attempt."""
    for conn in connections.all(initialized_only=True):
        if conn.connection is None:
            continue
        if (
            conn.in_atomic_block
            or not conn.get_autocommit()
            or (conn.errors_occurred and not conn.is_usable())
        ):
            conn.close()


class Pool(Protocol):
    """What a task thread calls back in the worker that owns it."""

    def run_one(self, attempt: Attempt) -> Success | None:
        """Run ``attempt``; a :class:`Success` queued for completion, or None."""

    def flush_completions(self) -> Attempt | None:
        """Store the waiting completions, claiming the free slots with them;
        the attempt kept for the calling thread, if any."""

    def runner_idle(self, runner: Runner) -> bool:
        """Take ``runner`` back in the pool; False once the worker has stopped."""

    def runner_retire(self, runner: Runner) -> bool:
        """Take an idle ``runner`` out of the pool; False if an attempt was just handed to it."""

    def slot_freed(self) -> None:
        """An attempt gave its slot back: wake the claim loop."""


class Runner(threading.Thread):
    """A task thread: runs the attempts handed to it, one at a time.

    A successful attempt gives its slot back before it is completed: the
    completion joins the next batch (:meth:`Outcomes.flush`), stored by this
    thread or by the one whose batch is in flight, and that batch claims the
    free slots; the flushing thread runs one of the new attempts itself.
    """

    def __init__(self, pool: Pool) -> None:
        super().__init__(daemon=True, name="awa-task")
        self.pool = pool
        self.handoff: queue.SimpleQueue[Attempt | None] = queue.SimpleQueue()
        self._connection_used_at = time.monotonic()
        self._drops_seen = sessions.connection_drops()

    def check_kept_connection(self) -> None:
        """Before an attempt handed to this idle thread: check the kept
        connection if it sat unused a while, or if another thread of this
        process has lost its own since (an outage breaks them all)."""
        drops = sessions.connection_drops()
        idle = time.monotonic() - self._connection_used_at
        if drops != self._drops_seen or idle >= CHECK_KEPT_CONNECTION_AFTER:
            self._drops_seen = drops
            replace_dead_connections()

    def run(self) -> None:
        pool = self.pool
        try:
            while True:
                try:
                    attempt = self.handoff.get(timeout=RUNNER_IDLE_TIMEOUT)
                except queue.Empty:
                    if pool.runner_retire(self):
                        return
                    continue  # an attempt was handed over just now
                if attempt is None:
                    return
                self.check_kept_connection()
                success = None
                while attempt is not None:
                    success = pool.run_one(attempt)
                    # The batch storing a success claims the free slots: this
                    # thread may get the next attempt from it.
                    attempt = pool.flush_completions() if success is not None else None
                self._connection_used_at = time.monotonic()
                # Back in the pool before the slot is announced, so the next
                # claim finds this thread (and its connection) idle.
                idle = pool.runner_idle(self)
                if success is None:
                    pool.slot_freed()  # after a failure, the claim loop refills the slot
                if not idle:
                    return  # the worker has stopped (e.g. an attempt that outlived its timeout)
        finally:
            close_old_connections()
            connections.close_all()
