"""The ``runcron`` leader loop: election, sync, evaluation, liveness.

Any number of ``runcron`` processes may run; one becomes leader by taking a
session-scoped advisory lock on a *dedicated* psycopg connection (never
Django's per-thread connection, which Django may close between requests, and
never through a transaction-pooling PgBouncer, which would share the session).
The same connection LISTENs on ``awa_cron`` so the leader wakes as soon as a
schedule changes, and is pinged (``SELECT 1``) to notice a silently dropped
session: when it fails the leader steps down at once. A deposed leader that
still fires is harmless, every fire being a compare-and-swap.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from django.db import connections

from . import db, metrics
from .backend import announce_fires
from .conf import conf
from .evaluator import PassResult, evaluate, reevaluate_parked
from .exceptions import LeadershipUnavailable
from .health import Progress
from .queues import prune_jobs
from .reconciliation import configured, reconcile_all
from .runtime import RuntimeReporter, cleanup_snapshots
from .schedules import Schedule, declared_schedules
from .shutdown import install_two_stage_shutdown
from .sync import sync_schedules

logger = logging.getLogger(__name__)

# pg_advisory_lock key: the bytes "AWADJLDR" as a signed 64-bit integer.
LEADER_LOCK_KEY = int.from_bytes(b"AWADJLDR", "big", signed=True)
NOTIFY_CHANNEL = "awa_cron"
# Pause after a pass that fired nothing while rows it read stay due (locked
# by another session, skipped): short, but no busy loop.
CONTENTION_BACKOFF = 0.05


def leader_connection(alias: str, role: str = "runcron leader") -> psycopg.Connection[Any]:
    """Open a dedicated autocommit connection to the server behind ``alias``."""
    return db.dedicated_connection(alias, role)


def _fired(jobs: Sequence[dict[str, Any]]) -> None:
    """One committed batch of fires: tell listeners, count it in the metrics."""
    announce_each(jobs)
    metrics.observe_fires(jobs)


def announce_each(jobs: Sequence[dict[str, Any]]) -> None:
    """``task_enqueued`` for each committed fire, one job at a time.

    Announcing imports the job's task; a module that fails to import (any
    exception, not only ImportError) must not stop the other announcements,
    nor the leader: the fires are committed whatever happens here.
    """
    for job in jobs:
        try:
            announce_fires([job])
        except Exception as exc:  # one job's module must not stop the leader
            logger.error("cannot announce job %s (%s): %s", job.get("id"), job.get("kind"), exc,
                         extra={"event": "cron.announce_failed", "job_id": job.get("id")})


class Leader:
    """Run for leadership and, while leader, sync and evaluate schedules.

    ``runcron`` is a thin wrapper around this class; tests drive it directly.
    """

    def __init__(
        self,
        *,
        schedules: Sequence[Schedule] | None = None,
        using: str = "default",
        on_pass: Callable[[PassResult], None] | None = None,
    ) -> None:
        self.schedules = list(declared_schedules() if schedules is None else schedules)
        # Authoritative deployments publish their schedules as a manifest (see
        # runtime.py); only additive ones upsert them directly.
        self.authoritative = configured() is not None
        self.using = using
        self.on_pass = on_pass
        self.stop_requested = threading.Event()
        self.is_leader = False
        self._lock_conn: psycopg.Connection[Any] | None = None
        self._listener: db.Listener | None = None
        self.progress = Progress()  # health probes (see health.py)
        metrics.track_leader(self)

    # -- lifecycle -----------------------------------------------------------
    def stop(self) -> None:
        """Ask the loop to finish its current pass, release the lock and return."""
        self.stop_requested.set()
        listener = self._listener
        if listener is not None:
            listener.wake()  # end a wait now, not at its next slice

    def install_signal_handlers(self) -> None:
        """First SIGTERM/SIGINT stops gracefully; a second one exits at once."""
        install_two_stage_shutdown(self.stop, "leader", "finishing the pass, then releasing leadership")

    def reporter(self) -> RuntimeReporter:
        """This process's runtime snapshot writer."""
        return RuntimeReporter("runcron", self.schedules, is_leader=lambda: self.is_leader, using=self.using,
                               progress=self.progress)

    def run(self) -> None:
        """Elect, lead, re-elect on connection loss, until :meth:`stop`.

        The startup snapshot (and, when authoritative, the ownership check)
        comes first: a conflict raises before anything else is written.
        """
        reporter = self.reporter()
        reporter.start()
        next_sync = time.monotonic()
        try:
            while not self.stop_requested.is_set():
                if self.try_acquire():
                    self.lead()
                    next_sync = time.monotonic() + float(conf.SYNC_INTERVAL)
                    continue
                self.progress.mark()  # a standby's progress is its election attempt
                # Standbys sync their own declarations too: several deployments
                # may share the database and only one of them leads.
                if time.monotonic() >= next_sync:
                    self._sync_safely()
                    next_sync = time.monotonic() + float(conf.SYNC_INTERVAL)
                self.stop_requested.wait(float(conf.ELECTION_INTERVAL))
        finally:
            reporter.stop()

    def run_once(self) -> PassResult:
        """One sync and one evaluation pass as leader (``runcron --once``).

        Raises :class:`LeadershipUnavailable` when another process leads.
        """
        reporter = self.reporter()
        reporter.write(check=True)
        try:
            if not self.try_acquire(raise_errors=True):
                raise LeadershipUnavailable(
                    "another runcron process holds the leader lock; not evaluating"
                )
            try:
                self.maintain()
                # Unlike the loop, a single pass lets errors propagate: the
                # command must exit non-zero when the pass did not happen.
                result = evaluate(using=self.using)
                announce_each(result.jobs)
                return result
            finally:
                self.release()
        finally:
            reporter.write(shutting_down=True)

    # -- election ------------------------------------------------------------
    def try_acquire(self, raise_errors: bool = False) -> bool:
        """Try once to take the leader lock; True when this process now leads.

        Connection errors count as "not now" (a standby retries), unless
        ``raise_errors`` (``--once`` must not blame a rival for a dead server).
        """
        try:
            conn = leader_connection(conf.LEADER_DATABASE)
        except psycopg.Error as exc:
            if raise_errors:
                raise
            logger.warning("election: cannot connect: %s", exc, extra={"event": "leader.error"})
            return False
        try:
            acquired = conn.execute(
                "SELECT pg_try_advisory_lock(%s)", [LEADER_LOCK_KEY]
            ).fetchone()
            if not acquired or not acquired[0]:
                conn.close()
                return False
            listener = db.Listener.on(conn, NOTIFY_CHANNEL)
        except psycopg.Error as exc:
            logger.warning("election failed: %s", exc, extra={"event": "leader.error"})
            conn.close()
            return False
        self._lock_conn = conn
        self._listener = listener
        self.is_leader = True
        logger.info("elected leader (pid %s)", os.getpid(), extra={"event": "leader.elected"})
        return True

    def release(self) -> None:
        """Unlock (best effort) and close the lock connection."""
        conn, self._lock_conn = self._lock_conn, None
        listener, self._listener = self._listener, None
        was_leader, self.is_leader = self.is_leader, False
        if listener is not None:
            listener.close()
        if conn is None:
            return
        try:
            conn.execute("SELECT pg_advisory_unlock(%s)", [LEADER_LOCK_KEY])
        except psycopg.Error:
            pass  # closing the session releases the lock anyway
        finally:
            conn.close()
        if was_leader:
            logger.info("released leadership", extra={"event": "leader.released"})

    # -- leading -------------------------------------------------------------
    def sync(self) -> None:
        """Upsert this process's declared schedules (additive mode only)."""
        if not self.authoritative:
            sync_schedules(self.schedules, using=self.using)

    def _sync_safely(self) -> None:
        with db.reconnect_on_error(self.using, "sync", logger, "cron.error"):
            self.sync()

    def maintain(self) -> None:
        """The leader's periodic work besides firing: sync, reconcile, clean up.

        Each step runs even when an earlier one failed (a sync error must not
        stop pruning); the first error is re-raised at the end.
        """
        steps: list[tuple[str, Callable[[], object]]] = [
            ("sync", self.sync),
            # After the sync, so a definition it just fixed is evaluated anyway.
            ("re-evaluation of parked rows", lambda: reevaluate_parked(using=self.using)),
            ("reconciliation", lambda: reconcile_all(using=self.using)),
            ("snapshot cleanup", lambda: cleanup_snapshots(using=self.using)),
            ("pruning", lambda: prune_jobs(using=self.using)),
        ]
        first_error: BaseException | None = None
        for label, step in steps:
            # Inside a caller's transaction the error propagates (it is
            # aborted anyway); otherwise the next step gets a fresh connection.
            with db.reconnect_on_error(self.using, f"maintenance step {label}", logger, "cron.error") as guard:
                step()
            first_error = first_error or guard.error
        if first_error is not None:
            raise first_error

    def evaluate_pass(self) -> PassResult:
        """One evaluation pass; database errors are logged, not fatal."""
        started = time.monotonic()
        with db.reconnect_on_error(self.using, "evaluation", logger, "cron.error") as guard:
            # Each batch's fire statement has committed (autocommit): its jobs
            # are announced as it goes, and not kept for the whole pass.
            result = evaluate(using=self.using, on_fired=_fired)
            self.progress.mark()
            metrics.observe_pass(result, time.monotonic() - started)
        if guard.error is not None:
            metrics.observe_pass(None, time.monotonic() - started)
            result = PassResult(next_due_in=float(conf.EVALUATE_INTERVAL))
        if self.on_pass is not None:
            self.on_pass(result)
        return result

    def lead(self) -> None:
        """Lead until stopped or until the lock connection fails.

        Maintenance (sync, reconciliation, snapshot cleanup, pruning) runs in
        its own thread, so a slow prune or reconcile never delays a fire.
        """
        maintenance_stop = threading.Event()
        maintenance = threading.Thread(
            target=self._maintenance_loop, args=(maintenance_stop,), name="awa-maintenance", daemon=True
        )
        maintenance.start()
        next_check = time.monotonic() + float(conf.LEADER_CHECK_INTERVAL)
        try:
            while not self.stop_requested.is_set():
                result = self.evaluate_pass()
                if time.monotonic() >= next_check:
                    self.ping()
                    next_check = time.monotonic() + float(conf.LEADER_CHECK_INTERVAL)
                # A pass that read due rows but fired nothing while rows stay
                # due: they are locked by another session (skipped) or lost
                # their CAS. Back off briefly instead of spinning.
                contended = result.evaluated > 0 and not result.fired
                if result.pending and not contended:
                    continue
                wait = float(conf.EVALUATE_INTERVAL)
                if result.next_due_in is not None:
                    wait = min(wait, max(result.next_due_in, 0.0))
                if contended:
                    wait = max(wait, min(float(conf.EVALUATE_INTERVAL), CONTENTION_BACKOFF))
                deadline = time.monotonic() + min(wait, max(0.0, next_check - time.monotonic()))
                self.wait_for_change(deadline)
        except psycopg.Error as exc:
            logger.warning(
                "leader connection lost (%s); stepping down", exc, extra={"event": "leader.lost"}
            )
        finally:
            maintenance_stop.set()
            maintenance.join(timeout=10)
            self.release()

    def _maintenance_loop(self, stop: threading.Event) -> None:
        """Run :meth:`maintain` at election and every ``AWA_SYNC_INTERVAL``."""
        try:
            while True:
                with db.reconnect_on_error(self.using, "maintenance (sync, reconcile, cleanup, prune)",
                                           logger, "cron.error"):
                    self.maintain()
                if stop.wait(float(conf.SYNC_INTERVAL)):
                    return
        finally:
            connections.close_all()  # this thread's own connections

    def ping(self) -> None:
        """``SELECT 1`` on the lock connection; raises if the session is gone."""
        assert self._lock_conn is not None
        self._lock_conn.execute("SELECT 1")

    def wait_for_change(self, deadline: float) -> None:
        """Sleep until ``deadline``, a NOTIFY on ``awa_cron``, or a stop request.

        Errors on the lock connection (e.g. the session was terminated)
        propagate, so the leader steps down immediately.
        """
        assert self._listener is not None
        self._listener.wait(deadline - time.monotonic(), self.stop_requested)
