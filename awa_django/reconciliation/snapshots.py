"""Runtime snapshots: every ``runcron``/``runtasks`` process reports itself.

Each process upserts its row in ``awa_runtime_instances`` every
``AWA_SNAPSHOT_INTERVAL``, independent of leadership, with
``cron_protocol = 1``. When the deployment is authoritative it publishes its
manifest and declaration in the *same* transaction, under the protocol lock,
so evidence and declaration can never disagree. The first write happens at
startup and also checks ownership: a conflict rolls the whole transaction back
(nothing published) and startup fails. The last write marks the process
``shutting_down``, which removes its declaration from the live set at once.
A stop takes at most one ``AWA_LOCK_TIMEOUT`` even when a frozen peer holds
the protocol lock: the thread's pending write is cancelled and only the last
write waits, for what is left of that budget.
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from django.db import DatabaseError, InterfaceError, OperationalError, connections, transaction

from .. import __version__
from ..conf import conf
from ..db import sessions
from ..db.guards import CancellableWaits, bound_transaction_waits, lock_wait_timed_out, stop_deadline
from ..declarations.declaration import Schedule
from ..health import FIRE_STATEMENT_VERSION, Progress, policy_gap, policy_gap_message, record_progress
from ..jsonlog import bind_process
from ..store import fleet as store
from .manifest import Manifest, manifest_for
from .persistence import (
    CRON_PROTOCOL_VERSION,
    ReconciliationConfig,
    check_registration,
    configured,
    publish,
)

logger = logging.getLogger("awa_django.runtime")

# How often the snapshot thread looks for a leadership change, which it
# reports at once rather than at the next interval (health probes, metrics).
LEADERSHIP_POLL = 0.25
# The least lock wait the final snapshot gets when the stop's budget is spent
# (it succeeds at once when the lock is free; a frozen peer costs this much more).
FINAL_WRITE_LEAST_WAIT = 0.1


class RuntimeReporter:
    """Writes this process's snapshot (and declaration) periodically in a thread."""

    def __init__(
        self,
        role: str,
        schedules: Sequence[Schedule],
        *,
        queues: Sequence[str] | None = None,
        is_leader: Callable[[], bool] = lambda: False,
        using: str = "default",
        config: ReconciliationConfig | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.role = role
        self.instance_id = str(uuid.uuid4())
        # Written with each snapshot for `awa health` (see health.py).
        self.progress = progress
        # JSON logs of this process name its runtime row (see jsonlog.py).
        bind_process(instance_id=self.instance_id, role=role)
        self.queues = list(queues or [])
        self.is_leader = is_leader
        self.using = using
        self.config = configured() if config is None else config
        self.manifest: Manifest | None = manifest_for(schedules) if self.config else None
        self._stop = threading.Event()
        self._reported_leader = False
        self._policy_gap: str | None = None  # the last warning logged, to log each once
        self._thread: threading.Thread | None = None
        self._waits = CancellableWaits(using)

    @property
    def authoritative(self) -> bool:
        return self.config is not None

    def write(
        self, *, check: bool = False, shutting_down: bool = False, lock_timeout: float | None = None
    ) -> None:
        """One snapshot transaction: lock, snapshot, publication, optional check.

        ``lock_timeout`` (seconds) bounds its lock waits instead of ``AWA_LOCK_TIMEOUT``.
        """
        interval_ms = int(conf.SNAPSHOT_INTERVAL * 1000)
        leading = bool(self.is_leader())
        with transaction.atomic(using=self.using), connections[self.using].cursor() as cursor:
            bound_transaction_waits(cursor, lock_timeout)  # a frozen peer may hold the lock
            store.take_protocol_lock(cursor)
            store.upsert_runtime_snapshot(cursor, self.snapshot(interval_ms, leading, shutting_down))
            record_progress(cursor, self.instance_id, self.progress)
            if self.role == "runcron" and not shutting_down:
                self._warn_policy_gap(cursor)
            if self.config is not None and self.manifest is not None and not shutting_down:
                if check:
                    check_registration(self.config, self.manifest, using=self.using)
                publish(self.instance_id, self.config, self.manifest, using=self.using)

    def snapshot(self, interval_ms: int, leading: bool, shutting_down: bool) -> store.RuntimeSnapshot:
        """What this process writes of itself now."""
        return store.RuntimeSnapshot(
            instance_id=self.instance_id,
            hostname=socket.gethostname(),
            pid=os.getpid(),
            version=__version__,
            role=self.role,
            interval_ms=interval_ms,
            leader=leading,
            queues_json=json.dumps(self.queues),
            shutting_down=shutting_down,
            cron_protocol=CRON_PROTOCOL_VERSION,
            fire_version=FIRE_STATEMENT_VERSION,
        )

    def _warn_policy_gap(self, cursor: Any) -> None:
        """Log (once per change) that schedules with execution policies do not
        fire while a runcron of an earlier release leads."""
        message = policy_gap_message(*policy_gap(cursor))
        if message != self._policy_gap and message is not None:
            logger.warning("%s", message, extra={"event": "cron.policies_unsupported"})
        self._policy_gap = message

    def start(self) -> None:
        """Startup write (with the ownership check), then a reporting thread.

        Raises :class:`~awa_django.reconciliation.RegistrationConflict` without
        having published anything when desired names belong to someone else.
        """
        try:
            self.write(check=True)
        except OperationalError as exc:
            # A peer frozen while holding the protocol lock: an additive
            # process starts anyway (its thread retries the snapshot); an
            # authoritative one must not start unchecked.
            if self.authoritative or not lock_wait_timed_out(exc):
                raise
            logger.warning("first snapshot deferred: %s", exc, extra={"event": "runtime.error"})
        self._thread = threading.Thread(target=self._loop, name="awa-snapshot", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        self._waits.bind()
        try:
            due = time.monotonic() + conf.SNAPSHOT_INTERVAL
            while not self._stop.wait(max(0.0, min(LEADERSHIP_POLL, due - time.monotonic()))):
                leading = bool(self.is_leader())
                if time.monotonic() < due and leading == self._reported_leader:
                    continue
                due = time.monotonic() + conf.SNAPSHOT_INTERVAL
                # A failed write is retried at the next interval, not every poll.
                self._reported_leader = leading
                with sessions.reconnect_on_error(
                    self.using, "snapshot", logger, "runtime.error", stopping=self._stop
                ):
                    self.write()
        finally:
            connections[self.using].close()

    def stop(self, deadline: float | None = None) -> None:
        """Stop the thread and write the final ``shutting_down`` snapshot by ``deadline``.

        ``deadline`` (``time.monotonic()``) defaults to one ``AWA_LOCK_TIMEOUT``
        from now (none when the timeout is off). The thread's write, maybe
        waiting on a frozen peer's lock, is cancelled rather than waited for;
        the final write waits on the lock for what is left until the deadline
        (at least ``FINAL_WRITE_LEAST_WAIT``).
        """
        if deadline is None:
            deadline = stop_deadline()
        self._stop.set()
        if self._thread is not None:
            self._waits.join(self._thread, deadline)
        # No deadline (AWA_LOCK_TIMEOUT = 0): the final write waits as long as it takes.
        remaining = None if math.isinf(deadline) else max(deadline - time.monotonic(), FINAL_WRITE_LEAST_WAIT)
        try:
            self.write(shutting_down=True, lock_timeout=remaining)
        except (DatabaseError, InterfaceError) as exc:
            logger.warning("final snapshot failed: %s", exc, extra={"event": "runtime.error"})


def cleanup_snapshots(using: str = "default", older_than_seconds: float = 24 * 3600) -> int:
    """Delete snapshots (and, by cascade, declarations) not seen for a day."""
    return store.delete_stale_snapshots(using, older_than_seconds)
