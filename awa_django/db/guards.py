"""Bounded waits and dead-peer detection for the connections awa_django's
processes open.

Two hazards, one module:

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
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import connections

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


def bound_transaction_waits(cursor: Any) -> None:
    """Bound the current transaction's waits (``SET LOCAL`` semantics).

    Call it first in every transaction that takes the protocol lock or
    other processes' row locks: a peer frozen while holding them then costs
    at most ``AWA_LOCK_TIMEOUT`` (the statement fails with SQLSTATE 55P03).
    """
    if len(getattr(getattr(cursor, "db", None), "atomic_blocks", ())) > 1:
        # Nested in the caller's own transaction (an operator action called
        # from a view with ATOMIC_REQUESTS): SET LOCAL would outlive this
        # block and change the caller's statements; their policy applies.
        return
    cursor.execute(
        "SELECT set_config('lock_timeout', %s, true), set_config('statement_timeout', %s, true)",
        [str(_milliseconds(conf.LOCK_TIMEOUT)), str(_milliseconds(conf.STATEMENT_TIMEOUT))],
    )


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
