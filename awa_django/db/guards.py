"""Bounded waits and dead-peer detection for the connections awa_django's
processes open.

Three hazards, one module:

* **Frozen peers.** A process stopped inside its snapshot transaction
  (SIGSTOP, a partition) holds ``awa_cron_protocol_lock()`` and maybe schedule
  row locks. Every transaction of awa_django that may wait on them sets
  ``lock_timeout`` and ``statement_timeout`` locally (``AWA_LOCK_TIMEOUT``,
  ``AWA_STATEMENT_TIMEOUT``); never the session, which user tasks share in
  ``runtasks``. Statements that only need *some* rows (the fire statement,
  pruning, re-evaluating parked rows) skip locked rows instead of waiting.
* **Silent partitions.** TCP keepalives (``AWA_TCP_KEEPALIVES_*``) make the
  kernel notice a dead peer in about ``idle + interval * count`` seconds
  instead of the system default (often two hours). They are added to every
  PostgreSQL alias's ``OPTIONS`` (values the project set itself win), so
  Django's connections and the leader's dedicated lock connection get them.
* **Waits in turn at stop.** A stopping process whose helper threads (runtime
  snapshots, the leader's maintenance) each wait on a frozen peer, and whose
  final snapshot waits again, would take several ``AWA_LOCK_TIMEOUT`` to exit.
  :class:`CancellableWaits` lets it cancel the helpers' statements instead,
  so the whole stop fits in one ``AWA_LOCK_TIMEOUT``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

from ..conf import conf

logger = logging.getLogger("awa_django.connection_guards")


def _milliseconds(seconds: float) -> int:
    """PostgreSQL timeouts in ms; 0 disables one, so never round down to 0."""
    return max(1, int(float(seconds) * 1000)) if float(seconds) > 0 else 0


def keepalive_options() -> dict[str, int]:
    """libpq keepalive parameters from the ``AWA_TCP_KEEPALIVES_*`` settings."""
    return {
        "keepalives": 1,
        "keepalives_idle": conf.TCP_KEEPALIVES_IDLE,
        "keepalives_interval": conf.TCP_KEEPALIVES_INTERVAL,
        "keepalives_count": conf.TCP_KEEPALIVES_COUNT,
    }


def guard_process_connections() -> None:
    """Add TCP keepalives to every PostgreSQL alias, for connections opened
    from now on (a value the project set in ``OPTIONS`` wins).

    Called once at the start of ``runcron`` and ``runtasks``, before they
    connect; the leader's dedicated connection copies the same parameters.
    """
    for alias in connections:
        wrapper = connections[alias]
        if wrapper.vendor != "postgresql":
            continue
        options = wrapper.settings_dict.setdefault("OPTIONS", {})
        for key, value in keepalive_options().items():
            options.setdefault(key, value)


def bound_transaction_waits(cursor: Any, lock_timeout: float | None = None) -> None:
    """Bound the current transaction's waits (``SET LOCAL`` semantics).

    Call it first in every transaction that takes the protocol lock or
    other processes' row locks: a peer frozen while holding them then costs
    at most ``AWA_LOCK_TIMEOUT`` (the statement fails with SQLSTATE 55P03),
    or ``lock_timeout`` seconds (positive) when given.
    """
    if len(getattr(getattr(cursor, "db", None), "atomic_blocks", ())) > 1:
        # Nested in the caller's own transaction (an operator action called
        # from a view with ATOMIC_REQUESTS): SET LOCAL would outlive this
        # block and change the caller's statements; their policy applies.
        return
    cursor.execute(
        "SELECT set_config('lock_timeout', %s, true), set_config('statement_timeout', %s, true)",
        [
            str(_milliseconds(conf.LOCK_TIMEOUT if lock_timeout is None else lock_timeout)),
            str(_milliseconds(conf.STATEMENT_TIMEOUT)),
        ],
    )


def stop_deadline() -> float:
    """``time.monotonic()`` by which a stop starting now is over: one
    ``AWA_LOCK_TIMEOUT`` away, or never when the timeout is off (0)."""
    timeout = float(conf.LOCK_TIMEOUT)
    return time.monotonic() + timeout if timeout > 0 else math.inf


# How often join() cancels again: a statement the helper thread started after
# the previous cancel request (which found it between statements) is cancelled too.
CANCEL_AGAIN = 0.25


class CancellableWaits:
    """The Django connection of one helper thread, whose statements a stopping
    process cancels rather than wait for.

    The helper thread calls :meth:`bind` first; :meth:`join`, from the thread
    that stops it (after setting the helper's stop event), cancels whatever
    statement the helper runs until the helper returns or the deadline passes.
    A cancelled statement fails with SQLSTATE 57014 and its transaction rolls
    back; the helper must treat a failure after its stop event as expected.
    """

    def __init__(self, using: str) -> None:
        self.using = using
        self._wrapper: BaseDatabaseWrapper | None = None

    def bind(self) -> None:
        """Called on the helper thread: its connection to ``using`` is the one to cancel."""
        self._wrapper = connections[self.using]

    def cancel(self) -> None:
        """Ask PostgreSQL to cancel the statement the helper's connection runs, if any."""
        raw = None if self._wrapper is None else self._wrapper.connection
        if raw is not None:
            # The connection may close under us (the helper ended): nothing to cancel.
            with contextlib.suppress(Exception):
                raw.cancel_safe(timeout=CANCEL_AGAIN)

    def join(self, thread: threading.Thread, deadline: float) -> bool:
        """Cancel the helper's statements until ``thread`` ends; False if still alive at ``deadline``."""
        while thread.is_alive():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.cancel()
            thread.join(min(CANCEL_AGAIN, remaining))
        return True


def lock_wait_timed_out(exc: BaseException) -> bool:
    """True when ``exc`` is a ``lock_timeout`` (55P03) or ``statement_timeout`` (57014)."""
    cause = exc.__cause__ or exc
    return getattr(cause, "sqlstate", None) in ("55P03", "57014")


def privilege_error(exc: BaseException) -> str | None:
    """An operator-facing message when ``exc`` is a missing privilege (42501), else None."""
    cause = exc.__cause__ or exc
    if getattr(cause, "sqlstate", None) != "42501":
        return None
    first_line = (str(exc).strip().splitlines() or ["permission denied"])[0]
    return (
        f"missing database privilege: {first_line} (grant it to this process's role; see "
        "'Least-privilege database roles' in docs/howto/deploying-runcron.md)"
    )
