"""The ``runcron`` leader loop: election, sync, evaluation, liveness.

Any number of ``runcron`` processes may run; one becomes leader by taking a
session-scoped advisory lock on a *dedicated* psycopg connection (never
Django's per-thread connection, which Django may close between requests, and
never through a transaction-pooling PgBouncer, which would share the session).
The same connection LISTENs on ``awa_cron`` so the leader wakes as soon as a
schedule changes, and is pinged (``SELECT 1``) to notice a silently dropped
session: when it fails the leader steps down at once. A deposed leader that
still fires is harmless, every fire being a compare-and-swap. The SQL lives
elsewhere: the lock in ``election`` (its statements in the store), the passes in
``evaluator`` and ``prefire``, the maintenance services in ``maintenance``.
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

from .. import metrics
from ..client.backend import announce_fires
from ..client.compat import task_enqueued
from ..conf import conf
from ..db import jsonb, sessions
from ..db.guards import CancellableWaits, stop_deadline
from ..declarations.declaration import Schedule, declared_schedules
from ..declarations.sync import sync_schedules
from ..exceptions import LeadershipUnavailable
from ..health import Progress
from ..maintenance import vacuum
from ..maintenance.index_upkeep import IndexUpkeep
from ..maintenance.jobs_vacuum import CatchUpVacuum
from ..maintenance.prune import Pruning
from ..maintenance.reconcile import Reconciliation
from ..maintenance.service import MaintenanceService, Rounds, run_services
from ..maintenance.slot_history import SlotHistoryTrim
from ..maintenance.snapshots import SnapshotCleanup
from ..reconciliation.persistence import configured
from ..reconciliation.snapshots import RuntimeReporter
from ..shutdown import install_two_stage_shutdown
from . import election, pipeline, prefire
from .announcer import Announcer, reads_arguments
from .duties import ParkedReevaluation, ScheduleSync
from .election import LEADER_LOCK_KEY
from .evaluator import PassResult, evaluate
from .firing import decode_args

logger = logging.getLogger("awa_django.leader")

__all__ = ["LEADER_LOCK_KEY", "NOTIFY_CHANNEL", "Leader", "announce_each"]

NOTIFY_CHANNEL = "awa_cron"
# Pause after a pass that fired nothing while rows it read stay due (locked
# by another session, skipped): short, but no busy loop.
CONTENTION_BACKOFF = 0.05


def _fired(
    jobs: Sequence[dict[str, Any]], using: str = "default", send: Callable[..., Any] | None = None
) -> None:
    """One committed batch of fires: tell listeners, count it in the metrics."""
    announce_each(jobs, send)
    metrics.observe_fires(jobs)
    vacuum.after_fires(len(jobs), using)


def announce_each(jobs: Sequence[dict[str, Any]], send: Callable[..., Any] | None = None) -> None:
    """``task_enqueued`` for each committed fire, one job at a time.

    Announcing imports the job's task; a module that fails to import (any
    exception, not only ImportError) must not stop the other announcements,
    nor the leader: the fires are committed whatever happens here. ``send``
    (the announcer's) calls the receivers one by one, naming any that fails.
    The jobs' args are decoded here, on the announcer's thread, and only when
    a receiver may read them (:func:`~.announcer.reads_arguments`); otherwise
    the task results sent carry none.
    """
    read = reads_arguments(task_enqueued)
    for job in jobs:
        try:
            announce_fires(decode_args([job]) if read else [without_args(job)], send)
        except Exception as exc:  # one job's module must not stop the leader
            logger.error(
                "cannot announce job %s (%s): %s",
                job.get("id"),
                job.get("kind"),
                exc,
                extra={"event": "cron.announce_failed", "job_id": job.get("id")},
            )


def without_args(job: dict[str, Any]) -> dict[str, Any]:
    """``job`` with its args left undecoded read as none (for receivers that never read them)."""
    if isinstance(job.get("args"), jsonb.Deferred):
        return {**job, "args": {}}
    return job


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
        # Ownership conflicts logged already: each once per process.
        self.reported_conflicts: set[str] = set()
        # Owners whose stored manifest cannot be read, and why: each logged once.
        self.reported_manifests: dict[str, str] = {}
        # Authoritative deployments publish their schedules as a manifest (see
        # reconciliation.snapshots); only additive ones upsert them directly.
        self.authoritative = configured() is not None
        self.using = using
        self.on_pass = on_pass
        self.stop_requested = threading.Event()
        # time.monotonic() by which a requested stop is over: one AWA_LOCK_TIMEOUT after it.
        self._stop_deadline: float | None = None
        self.is_leader = False
        self._lock_conn: psycopg.Connection[Any] | None = None
        self._listener: sessions.Listener | None = None
        self._next_check = 0.0  # when lead() next pings the lock connection
        self._announcer: Announcer | None = None  # while lead() runs
        self.progress = Progress()  # health probes (see health.py)
        self.services = self.maintenance_services()
        metrics.add_gauge_source(self)

    def maintenance_services(self) -> list[MaintenanceService]:
        """The leader's periodic work besides firing, in the order it runs."""
        return [
            ScheduleSync(self),
            # After the sync, so a definition it just fixed is evaluated anyway.
            ParkedReevaluation(),
            Reconciliation(self.reported_manifests),
            SnapshotCleanup(),
            Pruning(),
            CatchUpVacuum(),
            IndexUpkeep(),
            SlotHistoryTrim(),
        ]

    def process_gauges(self) -> metrics.ProcessGauges:
        """Whether this process leads, for ``awa_cron_leader``."""
        return metrics.ProcessGauges(leading=self.is_leader)

    # -- lifecycle -----------------------------------------------------------
    def stop(self) -> None:
        """Ask the loop to finish its current pass, release the lock and return.

        The stop waits on no frozen peer for longer than one ``AWA_LOCK_TIMEOUT``
        from now: the helper threads' statements are cancelled, and only the
        final runtime snapshot waits on the protocol lock, for what is left.
        """
        if self._stop_deadline is None:
            self._stop_deadline = stop_deadline()
        self.stop_requested.set()
        listener = self._listener
        if listener is not None:
            listener.wake()  # end a wait now, not at its next slice

    def install_signal_handlers(self) -> None:
        """First SIGTERM/SIGINT stops gracefully; a second one exits at once."""
        install_two_stage_shutdown(self.stop, "leader", "finishing the pass, then releasing leadership")

    def reporter(self) -> RuntimeReporter:
        """This process's runtime snapshot writer."""
        return RuntimeReporter(
            "runcron",
            self.schedules,
            is_leader=lambda: self.is_leader,
            using=self.using,
            progress=self.progress,
        )

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
                    with sessions.reconnect_on_error(self.using, "sync", logger, "cron.error"):
                        self.sync()
                    next_sync = time.monotonic() + float(conf.SYNC_INTERVAL)
                self.stop_requested.wait(float(conf.ELECTION_INTERVAL))
        finally:
            reporter.stop(self._stop_deadline)

    def run_once(self) -> PassResult:
        """One sync and one evaluation pass as leader (``runcron --once``).

        Raises :class:`LeadershipUnavailable` when another process leads.
        """
        reporter = self.reporter()
        reporter.write(check=True)
        try:
            if not self.try_acquire(raise_errors=True):
                raise LeadershipUnavailable("another runcron process holds the leader lock; not evaluating")
            try:
                self.maintain()
                # Unlike the loop, a single pass lets errors propagate: the
                # command must exit non-zero when the pass did not happen.
                result = evaluate(using=self.using)
            finally:
                self.release()
            # After the release: a hung task_enqueued receiver must not hold the lock.
            announce_each(result.jobs)
            return result
        finally:
            reporter.write(shutting_down=True)

    # -- election ------------------------------------------------------------
    def try_acquire(self, raise_errors: bool = False) -> bool:
        """Try once to take the leader lock; True when this process now leads.

        Connection errors count as "not now" (a standby retries), unless
        ``raise_errors`` (``--once`` must not blame a rival for a dead server).
        """
        try:
            conn = sessions.dedicated_connection(conf.LEADER_DATABASE, "runcron leader")
        except psycopg.Error as exc:
            if raise_errors:
                raise
            logger.warning("election: cannot connect: %s", exc, extra={"event": "leader.error"})
            return False
        try:
            if not election.try_lock(conn):
                conn.close()
                return False
            listener = sessions.Listener.on(conn, NOTIFY_CHANNEL)
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
            election.unlock(conn)
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
            sync_schedules(self.schedules, using=self.using, reported=self.reported_conflicts)

    def maintain(
        self, stop: threading.Event | None = None, services: Sequence[MaintenanceService] | None = None
    ) -> None:
        """Run the maintenance services (``services``, else all of them) once.

        Each runs even when an earlier one failed (a sync error must not stop
        pruning); the first error is re-raised at the end. Once ``stop`` is set
        no further service starts, and errors (cancelled statements) are
        expected.
        """
        run_services(self.services if services is None else services, self.using, stop, logger)

    def evaluate_pass(self) -> PassResult:
        """One evaluation pass; database errors are logged, not fatal."""
        started = time.monotonic()
        with sessions.reconnect_on_error(self.using, "evaluation", logger, "cron.error") as guard:
            # Each batch's fire statement has committed (autocommit): its jobs
            # are announced as it goes (while the next batch is read, planned
            # and fired, when lead() runs), and not kept for the whole pass.
            try:
                result = evaluate(
                    using=self.using, on_fired=self._on_fired, pipelined=self._announcer is not None
                )
            finally:
                self._drain_announcements()
            self.progress.mark()
            metrics.observe_pass(result.jobs, time.monotonic() - started)
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
        maintenance_waits = CancellableWaits(self.using)
        maintenance = threading.Thread(
            target=self._maintenance_loop,
            args=(maintenance_stop, maintenance_waits),
            name="awa-maintenance",
            daemon=True,
        )
        maintenance.start()
        announcer = Announcer(lambda jobs: _fired(jobs, self.using, announcer.send))
        self._announcer = announcer
        self._next_check = time.monotonic() + float(conf.LEADER_CHECK_INTERVAL)
        try:
            # The fire connections besides its own, kept while leading.
            with pipeline.kept_connection(self.using, lanes=prefire.FIRE_LANES - 1):
                while not self.stop_requested.is_set():
                    result = self.evaluate_pass()
                    self._check_leadership()
                    self._wait_after(result)
        except psycopg.Error as exc:
            logger.warning("leader connection lost (%s); stepping down", exc, extra={"event": "leader.lost"})
        finally:
            # Maintenance waiting on a frozen peer's lock is cancelled, not waited for.
            maintenance_stop.set()
            maintenance_waits.join(maintenance, self._stop_deadline or stop_deadline())
            self._announcer = None
            announcer.close()
            self.release()

    def _on_fired(self, jobs: Sequence[dict[str, Any]]) -> None:
        """A committed batch: announced on the announcer's thread while leading."""
        if self._announcer is None:
            _fired(jobs, self.using)
        else:
            self._announcer.submit(jobs)

    def _drain_announcements(self) -> None:
        if self._announcer is not None:
            self._announcer.drain()

    def _check_leadership(self) -> None:
        """Ping the lock connection every ``AWA_LEADER_CHECK_INTERVAL``."""
        if time.monotonic() >= self._next_check:
            self.ping()
            self._next_check = time.monotonic() + float(conf.LEADER_CHECK_INTERVAL)

    def _wait_after(self, result: PassResult) -> None:
        """Until the next pass: none, a change, the next check, or the next slot.

        When the wait ends at a slot, the slot's rows are planned shortly
        before it and fired the moment it arrives (see :mod:`.prefire`); the pass
        that follows fires whatever the prepared batches did not cover.
        """
        # A pass that read due rows but fired nothing while rows stay due:
        # they are locked by another session (skipped) or lost their CAS.
        # Back off briefly instead of spinning.
        contended = result.evaluated > 0 and not result.fired
        if result.pending and not contended:
            return
        wait = float(conf.EVALUATE_INTERVAL)
        if result.next_due_in is not None:
            wait = min(wait, max(result.next_due_in, 0.0))
        if contended:
            wait = max(wait, min(float(conf.EVALUATE_INTERVAL), CONTENTION_BACKOFF))
        until_check = max(0.0, self._next_check - time.monotonic())
        slot_in = result.next_due_in
        if contended or slot_in is None or not 0.0 < slot_in <= min(wait, until_check):
            self.wait_for_change(time.monotonic() + min(wait, until_check))
            return
        prepare_at = time.monotonic() + max(0.0, slot_in - prefire.PREPARE_AHEAD)
        if not self.wait_for_change(prepare_at) and not self.stop_requested.is_set():
            self.fire_next_slot()

    def fire_next_slot(self) -> None:
        """Plan the next slot's rows and fire them at the slot.

        Database errors are logged, not fatal: the ordinary pass that follows
        evaluates every row this did not fire.
        """
        with sessions.reconnect_on_error(self.using, "evaluation", logger, "cron.error"):
            prepared = prefire.prepare(using=self.using)
            try:
                if (
                    prepared is not None
                    and prefire.fire_prepared(
                        prepared, using=self.using, on_fired=self._on_fired, stop=self.stop_requested
                    )
                    is not None
                ):
                    self.progress.mark()
            finally:
                self._drain_announcements()

    def _maintenance_loop(self, stop: threading.Event, waits: CancellableWaits) -> None:
        """Run each maintenance service at election, then every its ``interval``
        after the round that ran it (``AWA_SYNC_INTERVAL`` for all of them)."""
        waits.bind()
        rounds = Rounds(self.services)
        try:
            while True:
                due = rounds.due(time.monotonic())
                with sessions.reconnect_on_error(
                    self.using,
                    "maintenance (sync, reconcile, cleanup, prune)",
                    logger,
                    "cron.error",
                    stopping=stop,
                ):
                    try:
                        self.maintain(stop, due)
                    finally:
                        rounds.ran(due, time.monotonic())
                if stop.wait(rounds.wait(time.monotonic())):
                    return
        finally:
            connections.close_all()  # this thread's own connections

    def ping(self) -> None:
        """``SELECT 1`` on the lock connection; raises if the session is gone."""
        assert self._lock_conn is not None
        election.ping(self._lock_conn)

    def wait_for_change(self, deadline: float) -> bool:
        """Sleep until ``deadline``, a NOTIFY on ``awa_cron`` (True), or a stop request.

        Errors on the lock connection (e.g. the session was terminated)
        propagate, so the leader steps down immediately.
        """
        assert self._listener is not None
        return self._listener.wait(deadline - time.monotonic(), self.stop_requested)
