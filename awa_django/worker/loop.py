"""The ``runtasks`` worker: claim ready jobs, run them, record the outcome.

Claims go through ``awa_claim_v3`` (``FOR UPDATE SKIP LOCKED``, priority then
``run_at`` order, paused queues skipped). Each claim is one *attempt*; every
report back (completion, failure, heartbeat) names the attempt, so a late
report from an attempt that was rescued after its worker was presumed dead
changes nothing. A LISTEN connection wakes the worker the moment jobs are
inserted; polling every ``AWA_POLL_INTERVAL`` is the fallback.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from datetime import timedelta

from django.db import DatabaseError, connections

from .. import metrics
from ..client.backend import AwaBackend
from ..client.compat import task_backends
from ..client.limits import require_limits
from ..conf import conf
from ..db import sessions
from ..db.aliases import listen_alias
from ..declarations.declaration import Schedule
from ..exceptions import TaskTimeout
from ..health import Progress
from ..reconciliation.snapshots import RuntimeReporter
from ..shutdown import install_two_stage_shutdown
from ..store import jobs
from ..store.job_rows import JobRow
from .outcomes import Outcomes, ReportAbandoned, Success, error_entry, retry_delay
from .runner import Attempt, Runner, drop_unusable_connections, run_attempt

logger = logging.getLogger("awa_django.worker")

__all__ = ["Attempt", "ReportAbandoned", "Worker", "error_entry", "retry_delay"]

NOTIFY_CHANNEL = "awa_jobs"
WAIT_SLICE = 0.05  # seconds; bounds how late a freed slot is refilled


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
        require_limits(self.backend.options.get("QUEUE_LIMITS"), backend)  # even if E032 was skipped
        self.using = self.backend.database
        self.shutdown_timeout = float(conf.SHUTDOWN_TIMEOUT) if shutdown_timeout is None else shutdown_timeout
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
        self._reserved = 0  # slots a claim in flight may fill (reserve/admit)
        self._lock = threading.Lock()
        # Set whenever an attempt gives its slot back, so the claim loop
        # refills it at once instead of at its next polling slice (a 50 ms
        # slice would cap every slot at ~20 jobs/s).
        self._slot_freed = threading.Event()
        # Task threads waiting for their next attempt. A thread keeps its
        # database connection between attempts: opening and closing one per
        # job would be most of a no-op job's cost.
        self._idle_runners: list[Runner] = []
        self._runners_closed = False
        # Wakes the claim loop on a NOTIFY of new jobs, a freed slot or a stop.
        # After a failed LISTEN connect it polls for AWA_POLL_INTERVAL (no
        # reconnect storm while the database is down or failing over).
        self._listener = sessions.Listener(
            NOTIFY_CHANNEL,
            lambda: sessions.dedicated_connection(listen_alias(self.using), "runtasks listener"),
            retry_after=float(conf.POLL_INTERVAL),
        )
        self.outcomes = Outcomes(self.backend, self.worker_id)
        self.abandoned = 0  # tasks still running when the shutdown timeout expired
        # runtasks declares the same schedules as runcron: in authoritative
        # mode every runtime of the owner is evidence for reconciliation.
        self.schedules = list(schedules or [])
        self.progress = Progress()  # health probes (see health.py)
        metrics.add_gauge_source(self)

    def process_gauges(self) -> metrics.ProcessGauges:
        """This worker's slots, for ``awa_worker_busy_slots`` and ``awa_worker_slots``."""
        return metrics.ProcessGauges(busy_slots=len(self._running), slots=self.concurrency)

    @property
    def completed(self) -> int:
        """Attempts completed by this worker."""
        return self.outcomes.completed

    @property
    def failed(self) -> int:
        """Attempts whose task raised (or timed out, or could not run)."""
        return self.outcomes.failed

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
        reporter = RuntimeReporter(
            "runtasks", self.schedules, queues=self.queues or [], using=self.using, progress=self.progress
        )
        logger.info(
            "worker %s started (queues=%s, concurrency=%d)",
            self.worker_id,
            self.queues or "all",
            self.concurrency,
            extra={"event": "worker.started"},
        )
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
                free = self.reserve()
                claimed: list[JobRow] = []
                try:
                    claimed = self.claim(free) if free > 0 else []
                finally:
                    self.admit(claimed, free, keep=False, wake=False)
                if not claimed and self._idle_now():
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
    def claim(self, limit: int) -> list[JobRow]:
        """Claim up to ``limit`` ready jobs in one statement (one new attempt each)."""
        with (
            sessions.reconnect_on_error(self.using, "claim", logger, "worker.error"),
            connections[self.using].cursor() as cursor,
        ):
            return jobs.claim(cursor, self.queues, limit, self.worker_id, self.backend.queue_limits)
        time.sleep(min(1.0, float(conf.POLL_INTERVAL)))
        return []

    def rescue(self) -> None:
        """Return attempts whose worker stopped heartbeating to the queue."""
        with (
            sessions.reconnect_on_error(self.using, "rescue", logger, "worker.error"),
            connections[self.using].cursor() as cursor,
        ):
            for row in jobs.rescue(cursor, timedelta(seconds=float(conf.RESCUE_AFTER))):
                metrics.observe_rescued(row.state)
                dropped = row.dropped_errors()
                logger.warning(
                    "job %s attempt %s rescued -> %s%s",
                    row.id,
                    row.attempt,
                    row.state,
                    f" ({dropped})" if dropped else "",
                    extra={"event": "job.rescued", "job_id": row.id},
                )

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
    def reserve(self) -> int:
        """How many attempts to claim now: the free slots (within ``max_tasks``) no
        other claim has reserved. Reserved until :meth:`admit`; 0 once stopping."""
        with self._lock:
            if self.stop_requested.is_set():
                return 0
            free = self.concurrency - len(self._running) - self._reserved
            if self.max_tasks is not None:
                free = min(free, self.max_tasks - self.claimed_total - self._reserved)
            free = max(0, free)
            self._reserved += free
            return free

    def admit(self, rows: list[JobRow], reserved: int, keep: bool, wake: bool = True) -> Attempt | None:
        """Start the attempts ``rows`` claimed for ``reserved`` slots, each in a task
        thread; with ``keep``, one is returned for the calling task thread instead.

        ``wake``: a claim by a task thread that left a slot free (no more ready
        jobs, or another claim had reserved it) wakes the claim loop.
        """
        attempts = [Attempt(row) for row in rows]
        with self._lock:
            self._reserved -= reserved
            self.claimed_total += len(attempts)
            for attempt in attempts:
                self._running[attempt.key] = attempt
        if attempts:
            metrics.observe_claimed([{"queue": row.queue} for row in rows])
        kept = attempts.pop() if keep and attempts else None
        for attempt in attempts:
            self.handoff(attempt)
        if wake and (len(rows) < reserved or not reserved):
            self.slot_freed()
        return kept

    def _idle_now(self) -> bool:
        """Burst mode (or max_tasks reached) and nothing running or being claimed: time to stop.

        In burst mode, ready jobs held back by a concurrency key or a queue
        limit (running elsewhere, or a rate's window) are waited for, not left.
        """
        with self._lock:
            if self._running or self._reserved:
                return False
        if self.max_tasks is not None and self.claimed_total >= self.max_tasks:
            return True
        return self.burst and not self._held_back()

    def _held_back(self) -> bool:
        with (
            sessions.reconnect_on_error(self.using, "claim", logger, "worker.error"),
            connections[self.using].cursor() as cursor,
        ):
            return jobs.held_back(cursor, self.queues, list(self.backend.queue_limits))
        return True  # the database is unreachable: ask again after the wait

    def handoff(self, attempt: Attempt) -> None:
        """Run admitted ``attempt`` in an idle task thread, or a new one."""
        # Not a fixed pool: an attempt that outlived AWA_TASK_TIMEOUT gives its
        # slot back while its thread runs on, and the next attempt gets another thread.
        with self._lock:
            runner = self._idle_runners.pop() if self._idle_runners else None
        if runner is None:
            runner = Runner(self)
            runner.start()
        runner.handoff.put(attempt)

    def runner_idle(self, runner: Runner) -> bool:
        """Put ``runner`` back in the pool; False once the worker has stopped."""
        with self._lock:
            if self._runners_closed:
                return False
            self._idle_runners.append(runner)
            return True

    def runner_retire(self, runner: Runner) -> bool:
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

    def flush_completions(self) -> Attempt | None:
        """Store the waiting completions, each batch claiming the free slots;
        the attempt kept for the calling task thread, if any."""
        kept: Attempt | None = self.outcomes.flush(self)
        return kept

    def slot_freed(self) -> None:
        """An attempt gave its slot back: wake the claim loop."""
        self._slot_freed.set()
        self._listener.wake()

    def run_one(self, attempt: Attempt) -> Success | None:
        """Run ``attempt`` in a task thread; a :class:`Success` queued for completion, or None."""
        outcome: Success | str | None = None
        try:
            outcome = run_attempt(self.outcomes, attempt.row)
            if isinstance(outcome, Success):
                # Queued and the slot freed at once: drain (running, then the
                # completions) cannot miss it, and the batch that takes it
                # claims for its slot.
                self.outcomes.add(outcome, lambda: self._release(attempt))
        except ReportAbandoned:
            pass  # already logged; rescue decides the attempt's fate
        except Exception:  # never lose the slot on a bug in reporting
            logger.exception(
                "job %s: unexpected worker error", attempt.row.id, extra={"event": "worker.error"}
            )
        finally:
            self._release(attempt)
            drop_unusable_connections()
        return outcome if isinstance(outcome, Success) else None

    def _release(self, attempt: Attempt) -> None:
        """Give ``attempt``'s slot back (unless its timeout already did)."""
        with self._lock:
            if self._running.get(attempt.key) is attempt:
                self._running.pop(attempt.key, None)

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
            self.slot_freed()
        for attempt in expired:
            row = attempt.row
            exc = TaskTimeout(
                f"attempt {row.attempt} of job {row.id} ({row.kind}) exceeded AWA_TASK_TIMEOUT ({limit}s)"
            )
            try:
                self.outcomes.fail(row, exc, None)
            except (ReportAbandoned, DatabaseError):
                logger.exception("job %s: cannot record its timeout", row.id, extra={"event": "worker.error"})

    def execute(self, row: JobRow) -> str | None:
        """Run one claimed attempt and record its outcome now; return the new state.

        Whatever the task does, the attempt ends with a recorded outcome. None
        means the report was stale (the attempt was rescued).
        """
        outcome = run_attempt(self.outcomes, row)
        return self.outcomes.complete(outcome) if isinstance(outcome, Success) else outcome

    # -- heartbeats and shutdown ----------------------------------------------
    def _heartbeat_loop(self) -> None:
        """Every ``AWA_HEARTBEAT_INTERVAL``, stamp the attempts still running or
        awaiting completion, in one statement."""
        interval = float(conf.HEARTBEAT_INTERVAL)
        while not self._drained.wait(interval):
            with self._lock:
                keys = list(self._running)
            keys += self.outcomes.unreported()
            if not keys:
                continue
            with sessions.reconnect_on_error(
                self.using, "heartbeat", logger, "worker.error", also=(ReportAbandoned,)
            ):
                self.outcomes.heartbeat(keys)
        connections.close_all()

    def _drain(self) -> int:
        """Wait up to the shutdown timeout for running tasks (and their completions);
        return how many tasks remain."""
        deadline = time.monotonic() + self.shutdown_timeout
        while (self._running or self._reserved) and time.monotonic() < deadline:
            time.sleep(WAIT_SLICE)
        if self._running:
            logger.warning(
                "%d task(s) still running at shutdown; they will be rescued",
                len(self._running),
                extra={"event": "worker.abandoned"},
            )
        # Completions in flight are bounded by AWA_REPORT_RETRY_TIMEOUT.
        self.outcomes.wait_idle(
            max(0.0, deadline - time.monotonic()) + float(conf.REPORT_RETRY_TIMEOUT) + 1.0
        )
        return len(self._running)
